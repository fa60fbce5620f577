"""The Plan tab on the demo session in the browser: another model moves turns from what is
sent to what is left out, each with its reason, without leaving the page."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from jaato_web.dashboard.models import AgentSession
from jaato_web.teams.management.commands.load_demo import DEMO_FILENAME
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet, expect_same_document, mark_document

pytestmark = pytest.mark.browser


def test_another_model_moves_turns_out_of_the_prompt_with_reasons(
    page: Page, page_log: PageLog
) -> None:
    call_command("load_demo", verbosity=0)
    demo = AgentSession.objects.get(label=DEMO_FILENAME)
    page.goto(f"/sessions/{demo.pk}/")
    page.get_by_role("link", name="Plan the next request").click()

    # The demo's own model, claude-sonnet-4: 85 % of its 200,000 tokens, so everything fits.
    status = page.locator("#plan-status")
    expect(status).to_have_text(re.compile(r"^ctx tokens: \d+ / 195392 \(window 200000\)$"))
    left_out = page.locator("#excluded-codes")
    expect(left_out).to_contain_text("Left out: 0 items")
    sent = page.locator("#included")
    expect(sent.locator("tr[data-unit]").filter(has_text="recent")).not_to_have_count(0)
    expect(page.locator("#budget-table")).to_contain_text("claude-sonnet-4")
    mark_document(page)

    # gpt-4's window is 8,192 tokens: only the most recent turns still fit.
    page.get_by_label("Model", exact=True).fill("gpt-4")
    page.get_by_label("Model", exact=True).press("Enter")

    expect(status).to_have_text(re.compile(r"\(window 8192\)$"))
    expect(left_out).not_to_contain_text("Left out: 0 items")
    expect(left_out).to_contain_text("budget/behind_cut")
    expect(page).to_have_url(re.compile(r"model=gpt-4"))
    excluded = page.locator("#excluded")
    behind = excluded.locator("tr[data-turns]").filter(has_text="budget/behind_cut")
    expect(behind).to_have_count(1)
    expect(behind).to_contain_text(
        "a more recent turn did not fit, and sending an older one would leave a gap"
    )
    expect(excluded).to_contain_text("budget/does_not_fit")
    expect(excluded).to_contain_text("did not fit: when it was tried, only")
    expect(page.locator("#budget-table")).to_contain_text("gpt-4")
    expect_same_document(page)

    # A window typed in place of the table's: more turns come back into the prompt.
    left = int(left_out.locator("caption").inner_text().split()[2].replace(",", ""))
    page.get_by_label("Context window (L)").fill("64000")
    page.get_by_label("Context window (L)").press("Enter")

    expect(status).to_have_text(re.compile(r"\(window 64000\)$"))
    expect(page.locator("#budget-table tr[data-figure='L']")).to_contain_text("typed here")
    now_left = int(left_out.locator("caption").inner_text().split()[2].replace(",", ""))
    assert 0 < now_left < left

    # The step-through came with the plan: a chart and a row per user turn.
    steps = page.locator("#steps")
    expect(steps.locator("svg")).to_have_count(1)
    expect(steps.locator("#step-table tbody tr")).to_have_count(50)
    expect_same_document(page)
    assert_quiet(page_log)
