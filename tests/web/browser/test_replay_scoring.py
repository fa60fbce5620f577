"""A replay is drawn as soon as its series is stored; the anchor retention of its collections,
scored by the worker next, arrives on the same page without a reload: the section, and each
collection's score in the events list."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from jaato_web.dashboard import background
from jaato_web.dashboard.models import AgentSession, Policy, Replay
from jaato_web.pages.templatetags.gc_format import share
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet, expect_same_document, mark_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_scores_arrive_on_the_page_of_a_replay_being_scored(
    page: Page,
    page_log: PageLog,
    stored_session: AgentSession,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        replay = background.replay_request(
            session=stored_session, policy_version=budget_policy.versions.get()
        )
    replay.refresh_from_db()
    scored = replay.series
    assert scored is not None, replay.error
    assert scored["events"]
    # As the replay stands while its worker scores it: drawn, its events not scored yet.
    drawn = {
        **scored,
        "events": [
            {key: value for key, value in event.items() if key != "retention"}
            for event in scored["events"]
        ],
    }
    Replay.objects.filter(pk=replay.pk).update(series=drawn, retention_pending=True)

    page.goto(f"/replays/{replay.pk}/")
    mark_document(page)
    section = page.locator(f"#replay-retention-{replay.pk}")
    expect(page.locator("#replay-chart svg.chart__svg")).to_be_visible()
    expect(section).to_contain_text("Scoring the anchors each collection took out of view")
    events = page.locator(f"#replay-events-{replay.pk}")
    events.locator("summary").click()
    expect(events.locator("[data-scoring]").first).to_have_text("scoring")

    Replay.objects.filter(pk=replay.pk).update(series=scored, retention_pending=False)

    expect(section.locator("[data-retention-sentence]")).to_contain_text("Anchor retention")
    expect(section).not_to_contain_text("Scoring the anchors")
    expect(events.locator("[data-scoring]")).to_have_count(0)
    events.locator("summary").click()
    first_score = events.locator("tbody tr").first.locator("td").last
    expect(first_score).to_have_text(share(scored["events"][0]["retention"]["score"]))
    expect_same_document(page)
    assert_quiet(page_log)
