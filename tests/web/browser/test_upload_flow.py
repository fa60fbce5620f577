"""Uploading in the browser, and following a file from the upload to the ledger of a GC run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from jaato_web.dashboard import services
from jaato_web.dashboard.background import tasks
from jaato_web.dashboard.models import AgentSession, GCRun, IngestJob
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import (
    UPLOAD_URL,
    assert_quiet,
    expect_same_document,
    malformed_session,
    mark_document,
    outcome,
    submit_upload,
    upload,
    write_session,
)
from tests.web.test_compactions import claude_code_file
from tests.web.uploads import HYBRID_POLICY, session_file

pytestmark = pytest.mark.browser

TOP_LEVEL_SOURCES = ["system", "plugin", "enrichment", "Conversation", "thinking"]
# Every policy tier, from what GC never touches to what it removes first.
# In the engine's order, most protective first (gcengine.POLICY_ORDER).
LEGEND = ["locked", "preservable", "conditional", "partial", "ephemeral"]


def user_requests(data: bytes) -> list[str]:
    """The text of each turn's user message in a generated session file, turn by turn."""
    history = json.loads(data)["history"]
    return [m["parts"][0]["text"] for m in history if m["role"] == "user"]


def test_an_upload_goes_from_the_file_to_the_ledger_of_a_run(
    page: Page, page_log: PageLog, tmp_path: Path
) -> None:
    services.policy_create(
        project=services.project_default(), name="Hybrid summaries", config=HYBRID_POLICY
    )
    # 20 short turns fill gpt-4's 8,192-token window well past the policy's 10 % target.
    data = session_file(20)
    results = upload(page, [write_session(tmp_path, "agent-session.json", data)])

    stored = outcome(results, "agent-session.json")
    expect(stored).to_contain_text("stored")
    expect(stored).to_contain_text("20 turns")
    stored.get_by_role("link", name="Open the session").click()
    # Waiting for the load event: the tree's buttons need htmx and tree.js, which are deferred.
    page.wait_for_url(re.compile(r"/sessions/\d+/$"))

    # The session page: the budget tree's top-level sources, the legend, and lazy children.
    expect(page.get_by_role("heading", level=1)).to_have_text("agent-session.json")
    tree = page.get_by_role("list", name="Budget of the session")
    expect(tree.locator(":scope > li > .tree-row .tree-label")).to_have_text(TOP_LEVEL_SOURCES)
    expect(page.get_by_label("Policy tiers").locator("dt")).to_have_text(LEGEND)
    conversation = tree.get_by_role("button", name="Show or hide the 20 entries of Conversation")
    expect(conversation).to_have_attribute("aria-expanded", "false")
    conversation.click()
    expect(conversation).to_have_attribute("aria-expanded", "true")
    turns = page.locator(f"#{conversation.get_attribute('aria-controls')}")
    expect(turns).to_be_visible()
    expect(turns.locator(":scope > li.tree-node")).to_have_count(20)

    # Run GC with the stored policy; the run ends inside the request, so the page is final.
    run_form = page.locator("#run-form")
    run_form.get_by_label("Stored policy").select_option(label="Hybrid summaries (version 1)")
    run_form.get_by_role("button", name="Run GC").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    expect(page.locator("#run-status .badge")).to_have_text("Done")
    run = GCRun.objects.get()
    removals = list(run.removals.order_by("seq"))
    assert {r.reason for r in removals} == {"truncated", "summarized"}

    ledger_rows = page.locator("#ledger tbody tr")
    expect(ledger_rows).to_have_count(len(removals))
    expect(page.locator("#ledger")).to_contain_text(
        f"{len(removals)} items, in the order GC removed them"
    )
    expect(ledger_rows.nth(0).locator("td").nth(1)).to_have_text(removals[0].reason)

    # The summary chain holds the summary this run wrote, with its text.
    summaries = page.locator("li.summary-item")
    expect(summaries).to_have_count(1)
    expect(summaries).to_contain_text("written by this run")
    summaries.get_by_text("Text of summary 1").click()
    expect(summaries.locator(".part__text")).to_contain_text("[Context Summary")

    # Before and after: removed turns struck through, the summary where it went in.
    diff = page.locator("ol.diff > li")
    removed_turns = page.locator("li.diff-turn--removed")
    expect(removed_turns).to_have_count(len({r.turn_index for r in removals}))
    expect(removed_turns.first.locator("del").first).to_have_css(
        "text-decoration-line", "line-through"
    )
    inserted = run.summaries.get().inserted_before_position
    expect(diff.nth(inserted)).to_have_class(re.compile(r"\bdiff-turn--inserted\b"))
    expect(diff.nth(inserted)).to_contain_text("Summary 1 went in here")
    # The turn at position ``inserted`` (its stable index) is numbered from 1, as JAATO does.
    expect(diff.nth(inserted + 1).locator(".diff-turn__head strong")).to_have_text(
        f"Turn {inserted + 1}"
    )

    # What the first ledger item removed: opened in place, then on its own page.
    first = ledger_rows.nth(0)
    removed_request = user_requests(data)[removals[0].turn_index]
    # The link to the item's own page sits in the closed <details>, where htmx will swap.
    link = first.locator(".removed__body a")
    expect(link).to_have_text("Open what item 0 removed")
    own_page = link.get_attribute("href")
    first.get_by_text("Show", exact=True).click()
    expect(first.locator(".removed__body .message--user")).to_contain_text(removed_request)
    assert own_page is not None
    page.goto(own_page)
    expect(page.get_by_role("heading", level=1)).to_have_text("Item 0 of the removal ledger")
    expect(page.locator(".removed-content .message--user")).to_contain_text(removed_request)

    assert_quiet(page_log)


def test_a_malformed_upload_says_why_next_to_the_file_and_stores_nothing(
    page: Page, page_log: PageLog, tmp_path: Path, live_server: LiveServer
) -> None:
    results = upload(page, [write_session(tmp_path, "broken.json", malformed_session(message=2))])

    refused = outcome(results, "broken.json")
    expect(refused.locator(".badge")).to_have_text("not a session file")
    expect(refused.locator(".outcome__error")).to_have_text("7 is not one of user, model, tool")
    expect(refused.locator(".outcome__where code")).to_have_text("history[2].role")
    expect(refused).to_contain_text("Nothing was stored.")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Sessions").click()
    expect(page.get_by_role("heading", name="No sessions yet")).to_be_visible()
    assert not AgentSession.objects.exists()
    assert_quiet(page_log, bad_responses=[f"400 {live_server.url}{UPLOAD_URL}"])


def test_a_file_read_in_the_background_shows_stored_on_the_upload_page_by_itself(
    page: Page, page_log: PageLog, tmp_path: Path, settings: Any
) -> None:
    """The results line of a large file follows the worker's read: it turns from "being read
    in the background" into the stored session's line without reloading the page."""
    settings.JAATO_INLINE_INGEST_BYTES = 1000
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    results = upload(page, [write_session(tmp_path, "large.json", session_file(6))])
    line = outcome(results, "large.json")
    expect(line.locator(".badge")).to_have_text("being read in the background")
    expect(line).to_contain_text("waiting for a worker")
    mark_document(page)

    tasks.ingest_upload.call(IngestJob.objects.get().pk)  # what a worker does

    expect(line.locator(".badge")).to_have_text("stored", timeout=10_000)
    expect(line).to_contain_text("6 turns")
    session = AgentSession.objects.get()
    expect(line.get_by_role("link", name="Open the session")).to_have_attribute(
        "href", f"/sessions/{session.pk}/"
    )
    expect_same_document(page)
    assert_quiet(page_log)


def test_several_files_each_get_their_outcome_next_to_their_name(
    page: Page, page_log: PageLog, tmp_path: Path
) -> None:
    valid = write_session(tmp_path, "valid.json", session_file(4))
    broken = write_session(tmp_path, "broken.json", malformed_session(message=4))
    copy = write_session(tmp_path, "copy.json", valid.read_bytes())

    results = upload(page, [valid, broken, copy])

    expect(results.locator(".outcome__file")).to_have_text(
        ["valid.json", "broken.json", "copy.json"]
    )
    expect(outcome(results, "valid.json").locator(".badge")).to_have_text("stored")
    expect(outcome(results, "broken.json").locator(".badge")).to_have_text("not a session file")
    expect(outcome(results, "broken.json").locator("code")).to_have_text("history[4].role")
    duplicate = outcome(results, "copy.json")
    expect(duplicate.locator(".badge")).to_have_text("already uploaded")
    session = AgentSession.objects.get()
    expect(duplicate.get_by_role("link")).to_have_text("Open the existing session “valid.json”")
    expect(duplicate.get_by_role("link")).to_have_attribute("href", f"/sessions/{session.pk}/")
    # One file was taken, so the picker is cleared for the next ones.
    expect(page.locator("[data-file-list] li")).to_have_count(0)
    expect(page.locator("input[type=file]")).to_have_value("")
    assert_quiet(page_log)


def test_files_dropped_on_the_drop_zone_are_uploaded(page: Page, page_log: PageLog) -> None:
    page.goto(UPLOAD_URL)
    transfer = page.evaluate_handle(
        """([name, text]) => {
            const transfer = new DataTransfer();
            transfer.items.add(new File([text], name, {type: "application/json"}));
            return transfer;
        }""",
        ["dropped.json", session_file(4).decode()],
    )
    zone = page.locator("[data-dropzone]")

    zone.dispatch_event("dragenter", {"dataTransfer": transfer})
    expect(zone).to_have_class(re.compile(r"\bis-dragover\b"))
    zone.dispatch_event("drop", {"dataTransfer": transfer})

    expect(zone).not_to_have_class(re.compile(r"\bis-dragover\b"))
    expect(zone.locator("[data-file-list] li")).to_have_text(["dropped.json"])
    assert page.locator("input[type=file]").evaluate("input => input.files[0].name") == (
        "dropped.json"
    )
    results = submit_upload(page)
    expect(outcome(results, "dropped.json").locator(".badge")).to_have_text("stored")
    assert AgentSession.objects.get().label == "dropped.json"
    assert_quiet(page_log)


def test_an_empty_file_is_refused_alone_and_the_other_files_are_stored(
    page: Page, tmp_path: Path
) -> None:
    good = write_session(tmp_path, "good.json")
    empty = write_session(tmp_path, "empty.json", b"")
    other = write_session(tmp_path, "other.json", session_file(8, seed=3))

    results = upload(page, [good, empty, other])

    expect(outcome(results, "good.json")).to_contain_text("stored")
    expect(outcome(results, "other.json")).to_contain_text("stored")
    refused = outcome(results, "empty.json")
    expect(refused).to_contain_text("empty")
    expect(refused).to_contain_text("the file is empty")
    expect(refused).to_contain_text("Nothing was stored.")
    expect(results).not_to_contain_text("The submitted file is empty")
    assert sorted(AgentSession.objects.values_list("label", flat=True)) == [
        "good.json",
        "other.json",
    ]


def test_a_claude_code_session_shows_the_agents_compaction_and_its_usage(
    page: Page, tmp_path: Path
) -> None:
    path = write_session(tmp_path, "generated-claude-code.jsonl", claude_code_file(30, (12,)))

    results = upload(page, [path])
    outcome(results, "generated-claude-code.jsonl").get_by_role(
        "link", name="Open the session"
    ).click()
    page.wait_for_url(re.compile(r"/sessions/\d+/$"))

    session = AgentSession.objects.get(label="generated-claude-code.jsonl")
    (compaction,) = session.agent_state["compactions"]
    section = page.locator("#compactions").locator("xpath=following-sibling::ol[1]")
    event = section.locator("li.compaction")
    expect(event).to_have_count(1)
    expect(event).to_contain_text(f"Before turn {compaction['before_turn']}")
    expect(event).to_contain_text(
        f"{compaction['tokens_before']:,} → {compaction['tokens_after']:,} tokens as recorded"
    )
    event.get_by_text("The agent's summary").click()
    expect(event.locator(".part__text")).to_contain_text(compaction["summary"].split("\n")[0])
    chart = page.locator("[data-usage-chart]")
    expect(chart.locator("polyline.usage-chart__agent")).to_have_count(1)
    expect(chart.locator("line.usage-chart__compaction")).to_have_count(1)
    expect(chart).to_contain_text(f"The agent compacted before turn {compaction['before_turn']}")


SPOTTER = Path(__file__).parents[2] / "fixtures" / "formats" / "spotter"


def test_a_claude_code_session_chosen_with_its_subagent_files_is_one_session(
    page: Page, page_log: PageLog, settings: Any
) -> None:
    settings.JAATO_INLINE_INGEST_BYTES = 10 * 1024 * 1024  # read at once, not by a worker
    stem = "258c7280-ae70-4798-800f-63464d01a85d"
    files = [SPOTTER / f"{stem}.jsonl", *sorted((SPOTTER / stem / "subagents").glob("*.jsonl"))]
    page.goto(UPLOAD_URL)
    expect(page.get_by_role("button", name="Choose a folder")).to_be_visible()

    results = upload(page, files)

    expect(results.locator(".outcome__file")).to_have_text([f"{stem}.zip"])
    expect(outcome(results, f"{stem}.zip").locator(".badge")).to_have_text("stored")
    stored = AgentSession.objects.get()
    agents = {agent.agent_id for agent in services.engine_session_of(stored).subagents}
    assert agents == {"a881341", "acompact-fffbd0"}
    assert_quiet(page_log)
