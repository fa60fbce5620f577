"""A real Claude Code session in the browser, call by call: the usage chart per model call
with the drop at its compaction, the paged table of calls, "Go to turn" with the turn numbers
the history shows, and a replay at the compaction under the window tried on the page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from jaato_web.dashboard import background
from jaato_web.dashboard.models import AgentSession, Policy, Project, Replay
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet, expect_same_document, mark_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SPOTTER = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "spotter"
# 217 calls; a manual compaction at preTokens 142,431 after call 138; call 139 sent 45,263.
MANUAL = "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


@pytest.fixture
def real(project: Project, settings: Any) -> AgentSession:
    settings.JAATO_INLINE_INGEST_BYTES = 10 * 1024 * 1024  # read it now, not in a job
    receipt = background.session_upload(
        project=project, filename=MANUAL, data=(SPOTTER / MANUAL).read_bytes()
    )
    assert receipt.session is not None
    return receipt.session


def test_the_usage_chart_per_call_and_the_table_of_calls(
    page: Page, page_log: PageLog, real: AgentSession
) -> None:
    page.goto(f"/sessions/{real.pk}/")
    mark_document(page)

    chart = page.locator("[data-usage-chart]")
    expect(chart.locator("text", has_text="call 217")).to_have_count(1)
    expect(chart.locator("[data-compaction-sizes]")).to_have_text("142,431 → 45,263")
    expect(chart.locator("line.usage-chart__compaction")).to_have_count(1)
    points = chart.locator("polyline.usage-chart__agent").get_attribute("points") or ""
    assert len(points.split()) == 217
    # The drop is drawn: from the agent's figure before down to the first call after.
    drop = chart.locator("line.usage-chart__compaction")
    assert float(drop.get_attribute("y2") or 0) > float(drop.get_attribute("y1") or 0)
    expect(chart).to_contain_text("after call 138, from 142,431 to 45,263 tokens")

    calls = page.locator("#model-calls")
    calls.locator("summary").click()
    table = calls.locator("[data-model-calls]")
    expect(table.locator("tbody tr")).to_have_count(100)
    calls.get_by_role("link", name="Next →").first.click()
    expect(calls.locator("[data-call-compaction]")).to_have_text(
        "The agent compacted here (manual): 142,431 → 45,263 tokens"
    )
    expect(calls.locator("tbody tr").first.locator("td").first).to_have_text("101")
    expect_same_document(page)
    assert_quiet(page_log)


def test_go_to_turn_takes_a_turn_after_the_compaction(
    page: Page, page_log: PageLog, real: AgentSession
) -> None:
    """The history after the compaction shows turns 1 and 2 (a person's two prompts; the
    agent's summary takes the turn it interrupted): the browser lets the last through and
    the page opens at it."""
    page.goto(f"/sessions/{real.pk}/")
    page.locator("#jump-turn").fill("2")
    page.locator(".jump-to-turn").get_by_role("button", name="Go").click()

    page.wait_for_url(re.compile(r"#turn-2$"))
    expect(page.locator("#turn-2")).to_be_visible()
    assert_quiet(page_log)


def test_a_replay_at_the_compaction_keeps_the_window_tried(
    page: Page, page_log: PageLog, real: AgentSession, budget_policy: Policy
) -> None:
    page.goto(f"/sessions/{real.pk}/?window=80000")
    form = page.locator("form.compaction-try")
    form.locator("#compaction-policy").select_option(str(budget_policy.versions.get().pk))
    form.get_by_role("button", name="Replay it there against 80,000 tokens").click()

    page.wait_for_url(re.compile(r"/replays/\d+/$"))
    replay = Replay.objects.get(session=real)
    assert replay.context_limit == 80_000
    assert replay.compaction_id == real.agent_state["compactions"][0]["id"]
    chart = page.locator("[data-usage-chart]")
    # The agent's calls up to its compaction, the policy's checks over the same calls.
    expect(chart.locator("text", has_text="call 138")).to_have_count(1)
    expect(chart.locator("polyline.usage-chart__policy")).to_have_count(1)
    expect(chart).to_contain_text("the same calls would have kept the context between")
    assert_quiet(page_log)
