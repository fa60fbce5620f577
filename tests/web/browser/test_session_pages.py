"""The sessions list and the session page in the browser: htmx paging, folding, search, sort
and the replay chart."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from playwright.sync_api import Browser, Page, expect
from pytest_django.live_server_helper import LiveServer

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, Replay
from jaato_web.teams.management.commands.load_demo import DEMO_FILENAME
from tests.web.browser.conftest import sign_in
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet, expect_same_document, mark_document
from tests.web.uploads import jaato_file_with_state, session_file

pytestmark = pytest.mark.browser

# Threshold mode: collect at 60 % of the window, down to 40 %. A 30-turn file fills gpt-4's
# 8,192 tokens to over 90 %, so a replay reaches the threshold more than once.
SAWTOOTH_POLICY = {
    "type": "gc_budget",
    "threshold_percent": 60,
    "target_percent": 40,
    "preserve_recent_turns": 2,
}


def stored(name: str, data: bytes) -> AgentSession:
    session = background.session_upload(
        project=services.project_default(), filename=name, data=data
    ).session
    assert session is not None
    return session


def test_history_pages_with_htmx_and_tool_calls_unfold(page: Page, page_log: PageLog) -> None:
    session = stored("long-session.json", session_file(30))
    page.goto(f"/sessions/{session.pk}/")
    mark_document(page)
    history = page.locator("#history")
    turn_headings = history.locator(".turn__head h3")
    expect(turn_headings).to_have_count(25)
    expect(turn_headings.first).to_have_text("Turn 1")

    history.get_by_role("link", name="Next →").first.click()

    expect(turn_headings).to_have_text([f"Turn {n}" for n in range(26, 31)])
    expect(history.get_by_text("Page 2 of 2").first).to_be_visible()
    expect(page).to_have_url(re.compile(r"\?turns=2$"))
    expect_same_document(page)

    # Turn 25 called a tool: the call is folded under its name until opened.
    call = history.locator("details.part--function_call").first
    expect(call).to_have_js_property("open", False)
    expect(call.locator("pre")).to_be_hidden()
    call.locator("summary").click()
    expect(call).to_have_js_property("open", True)
    expect(call.locator("pre")).to_be_visible()
    expect(call.locator("pre")).to_contain_text("src/")
    assert_quiet(page_log)


def test_replay_draws_the_sawtooth_chart_and_says_it_in_words(
    page: Page, page_log: PageLog
) -> None:
    session = stored("long-session.json", session_file(30))
    services.policy_create(
        project=services.project_default(), name="Sawtooth", config=SAWTOOTH_POLICY
    )
    page.goto(f"/sessions/{session.pk}/")

    replay_section = page.locator("#replay")
    replay_section.get_by_label("Policy").select_option(label="Sawtooth (version 1)")
    replay_section.get_by_role("button", name="Replay").click()

    chart = page.locator("#replay-chart svg.chart__svg")
    expect(chart).to_be_visible()
    replay = Replay.objects.get()
    events = replay.series["events"]
    collections = sum(1 for event in events if event["success"])
    assert collections > 1
    expect(chart.locator("polyline.chart__usage")).to_have_attribute(
        "points", re.compile(r"^[\d.]+,[\d.]+( [\d.]+,[\d.]+)+$")
    )
    expect(chart.locator("line.chart__threshold")).to_have_count(1)
    expect(chart.locator("line.chart__target")).to_have_count(1)
    expect(chart.locator("circle.chart__event")).to_have_count(len(events))
    expect(chart.locator("text.chart__label")).to_contain_text(
        ["limit", "threshold 60 %", "target 40 %"]
    )
    expect(page.locator("[data-chart-title]")).to_have_text(
        "Replay under Sawtooth v1, threshold mode"
    )
    summary = page.locator(".chart-summary")
    expect(summary).to_contain_text(f"GC collected {collections} times over")
    figures = page.get_by_role("table", name="Replay figures")
    for row in (
        "Policy Sawtooth v1, threshold mode",
        f"Collections {collections}",
        "Threshold 60 %",
        "Target 40 %",
    ):
        expect(figures.get_by_role("row", name=row, exact=True)).to_be_visible()
    assert_quiet(page_log)


def chosen_policy(page: Page) -> str:
    """The replay select's choice as a chart names it: "Budget 80/60 (version 1)" is
    "Budget 80/60 v1"."""
    label = page.locator("#replay select option:checked").inner_text()
    match = re.fullmatch(r"(.+) \(version (\d+)\)", label)
    assert match is not None, label
    return f"{match[1]} v{match[2]}"


def test_the_replay_chart_names_the_policy_the_select_shows(page: Page, page_log: PageLog) -> None:
    # A fresh demo: the default policy is Budget 80/60, and Continuous budget was replayed last.
    call_command("load_demo", stdout=StringIO())
    session = AgentSession.objects.get(label=DEMO_FILENAME)
    page.goto(f"/sessions/{session.pk}/")

    title = page.locator("#replay [data-chart-title]")
    expect(title).to_have_text("Replay under Continuous budget v1, continuous mode")
    assert chosen_policy(page) == "Continuous budget v1"

    page.locator("#replay").get_by_label("Policy").select_option(label="Budget 80/60 (version 1)")
    page.locator("#replay").get_by_role("button", name="Replay").click()

    expect(title).to_have_text("Replay under Budget 80/60 v1, threshold mode")
    assert chosen_policy(page) == "Budget 80/60 v1"
    expect(page.locator("#replay svg.chart__svg line.chart__threshold")).to_have_count(1)
    expect(page.get_by_role("table", name="Replay figures")).to_contain_text(
        "Budget 80/60 v1, threshold mode"
    )
    # The replay page of that chart names the same policy.
    shown = Replay.objects.get(session=session, policy_label="Budget 80/60 v1")
    page.goto(f"/replays/{shown.pk}/")
    expect(page.locator("[data-chart-title]")).to_have_text(
        "Replay under Budget 80/60 v1, threshold mode"
    )
    assert_quiet(page_log)


def test_the_sessions_table_fits_its_column_at_1280_px(page: Page, page_log: PageLog) -> None:
    # Long names with nothing to break at, and long model ids, are what widened the table.
    for seed, name in enumerate(
        (
            "session_2026_11_20_billing_service_refactor_agent_run_with_a_long_name.json",
            "2026-11-20-billing-service-refactor-agent-session-with-a-long-name.json",
        )
    ):
        stored(name, session_file(4, seed=seed, model="claude-3-7-sonnet-20250219"))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("/sessions/")

    table = page.locator("#session-table table")
    column = page.locator("#session-table .table-scroll")
    uploaded = table.get_by_role("columnheader", name="Uploaded")
    expect(uploaded).to_be_in_viewport()
    table_box = table.bounding_box()
    column_box = column.bounding_box()
    uploaded_box = uploaded.bounding_box()
    assert table_box is not None
    assert column_box is not None
    assert uploaded_box is not None
    right_edge = column_box["x"] + column_box["width"]
    assert table_box["x"] + table_box["width"] <= right_edge + 0.5
    assert uploaded_box["x"] + uploaded_box["width"] <= right_edge + 0.5
    assert column.evaluate("c => c.scrollWidth <= c.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    assert_quiet(page_log)


def test_sessions_list_searches_and_sorts_without_loading_the_page(
    page: Page, page_log: PageLog
) -> None:
    # Uploaded in this order, so newest first is neither the name nor the token order.
    stored("beta-agent.json", session_file(9, seed=2))
    stored("alpha-agent.json", session_file(4, seed=1))
    stored("gamma-tools.json", session_file(6, seed=3))
    page.goto("/sessions/")
    mark_document(page)
    expect_names = expect(page.locator("#session-table tbody tr td:first-child"))
    expect_names.to_have_text(["gamma-tools.json", "alpha-agent.json", "beta-agent.json"])

    page.get_by_role("searchbox", name="Search").fill("agent")
    expect_names.to_have_text(["alpha-agent.json", "beta-agent.json"])
    expect(page.locator("#session-table")).to_contain_text("2 sessions matching “agent”")
    expect(page).to_have_url(re.compile(r"\?q=agent&sort=newest$"))

    page.get_by_label("Sort by").select_option(label="Most tokens")
    expect_names.to_have_text(["beta-agent.json", "alpha-agent.json"])
    expect(page).to_have_url(re.compile(r"\?q=agent&sort=tokens$"))

    page.get_by_role("searchbox", name="Search").fill("")
    expect_names.to_have_text(["beta-agent.json", "gamma-tools.json", "alpha-agent.json"])
    expect_same_document(page)
    assert_quiet(page_log)


def test_times_are_shown_in_the_readers_zone_and_name_it(
    chromium: Browser, live_server: LiveServer, member: User
) -> None:
    """The server renders a time in its own zone and names it; the browser shows it in the
    reader's zone (India: UTC+5:30, no daylight saving), keeping the server's as its title,
    and so does a table htmx swaps in."""
    uploaded = datetime(2026, 11, 26, 15, 11, tzinfo=UTC)
    for seed, name in enumerate(("alpha-agent.json", "beta-tools.json")):
        session = stored(name, session_file(3, seed=seed))
        AgentSession.objects.filter(pk=session.pk).update(created_at=uploaded)
    context = chromium.new_context(
        base_url=live_server.url, timezone_id="Asia/Kolkata", locale="en-US"
    )
    try:
        page = sign_in(context.new_page(), member, live_server)
        page.goto("/sessions/")
        when = page.locator("#session-table .session-table__when time")
        expect(when).to_have_text(["2026-11-26 20:41 GMT+5:30"] * 2)
        expect(when.first).to_have_attribute("title", "2026-11-26 15:11 UTC")

        page.get_by_role("searchbox", name="Search").fill("agent")
        expect(page.locator("#session-table")).to_contain_text("1 session matching")
        expect(when).to_have_text(["2026-11-26 20:41 GMT+5:30"])

        page.goto(f"/sessions/{AgentSession.objects.get(label='beta-tools.json').pk}/")
        expect(page.get_by_text("Uploaded 2026-11-26 20:41 GMT+5:30")).to_be_visible()
    finally:
        context.close()


def test_the_state_jaato_saved_unfolds_on_the_session_page(page: Page, page_log: PageLog) -> None:
    """A session saved mid-turn: its waiting calls are listed, each call's arguments fold
    open, and the failed tool result says what it returned."""
    session = stored("saved-mid-turn.json", json.dumps(jaato_file_with_state()).encode())
    page.goto(f"/sessions/{session.pk}/")

    state = page.locator("section[aria-labelledby='agent-state']")
    interrupted = state.locator(".notice--warning")
    expect(interrupted).to_contain_text("Interrupted turn")
    expect(interrupted).to_contain_text("2 tool calls had no answer")
    calls = interrupted.locator("li")
    expect(calls).to_have_count(2)
    first = calls.first.locator("details")
    expect(first.locator("pre")).to_be_hidden()
    first.locator("summary").click()
    expect(first.locator("pre")).to_be_visible()
    expect(first.locator("pre")).to_contain_text('"k": "slow"')
    expect(state.get_by_role("heading", name="Failed tool results (1)")).to_be_visible()
    expect(state.get_by_role("heading", name="Sub-agents (1)")).to_be_visible()
    expect(state.get_by_role("heading", name="Plugin states")).to_be_visible()
    assert_quiet(page_log)
