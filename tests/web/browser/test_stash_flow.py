"""The stash in the browser: run the reachability policy on the demo, open the run's stash,
restore two segments, and find them back in the derived session."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession, GCRun
from jaato_web.teams.management.commands.load_demo import DEMO_FILENAME
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet

pytestmark = pytest.mark.browser


def test_run_reachability_on_the_demo_restore_two_segments_and_see_them_back(
    page: Page, page_log: PageLog
) -> None:
    call_command("load_demo", stdout=StringIO())
    session = AgentSession.objects.get(label=DEMO_FILENAME)
    page.goto(f"/sessions/{session.pk}/")

    run_form = page.locator("#run-form")
    run_form.get_by_label("Stored policy").select_option(label="Reachability stash (version 1)")
    run_form.get_by_role("button", name="Run GC").click()
    expect(page.get_by_role("heading", name="Removal ledger")).to_be_visible()
    run = GCRun.objects.filter(session=session, plugin="gc_reachability").latest("pk")
    expect(page).to_have_url(f"{page.url.split('/runs/')[0]}/runs/{run.pk}/")
    # Each ledger item says why it went and what became of it.
    first_verdict = page.locator("#ledger [data-verdict]").first
    expect(first_verdict).to_contain_text("stashed")
    expect(first_verdict).to_contain_text("score ")

    page.locator("[data-stash-link]").click()
    expect(page.get_by_role("heading", name=f"Stash of run {run.pk}")).to_be_visible()
    rows = page.locator("#stash-list tbody tr")
    expect(rows.first).to_be_visible()
    chosen = [rows.nth(n).get_attribute("data-segment") for n in (0, 1)]
    for n in (0, 1):
        rows.nth(n).get_by_role("checkbox").check()
    page.locator("[data-restore]").click()

    derived = page.locator("[data-derived-from]")
    expect(derived).to_contain_text(f"run {run.pk}")
    expect(derived).to_contain_text("2 segments put back")
    restored = AgentSession.objects.get(derived_from_run=run)
    assert restored.restored_segments == chosen
    expect(page.get_by_role("heading", name=restored.label, exact=True)).to_be_visible()

    # The first restored segment is back in its turn: the derived session's page shows the
    # turn with more messages than the run left it.
    segment_id = str(chosen[0])
    turn_index = int(segment_id.split("/")[0].removeprefix("turn_"))
    after = services.session_after_of(run)
    assert after is not None
    left = sum(1 for m in after.history if m.turn_index == turn_index)
    back = services.engine_session_of(restored)
    now = sum(1 for m in back.history if m.turn_index == turn_index)
    assert now > left
    page.goto(f"/sessions/{restored.pk}/?turn={turn_index + 1}")
    turn = page.locator(f"#turn-{turn_index + 1}")
    expect(turn).to_be_visible()
    expect(turn.locator("li.message")).to_have_count(now)
    assert_quiet(page_log)
