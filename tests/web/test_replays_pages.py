"""Replays from the session page: the request, the polling, and the chart."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from gcengine.synthetic import SessionShape
from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, JobStatus, Policy, Project, Replay
from jaato_web.dashboard.services import replays
from tests.chat_server import FakeChatServer
from tests.web.conftest import TIGHT_BUDGET, session_bytes

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def replay_of(
    client: Client, session: AgentSession, policy: Policy, capture: Any, **headers: str
) -> Any:
    url = reverse("replay_create", args=[session.pk])
    with capture(execute=True):
        return client.post(url, {"policy_version": str(policy.versions.get().pk)}, headers=headers)


def test_replay_request_redirects_to_the_session_page_showing_it(
    client: Client,
    stored_session: AgentSession,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    response = replay_of(client, stored_session, budget_policy, django_capture_on_commit_callbacks)

    replay = Replay.objects.get()
    detail = reverse("session_detail", args=[stored_session.pk])
    assert response.status_code == 302
    assert response["Location"] == f"{detail}?replay={replay.pk}#replay"
    assert replay.status == JobStatus.DONE

    page = client.get(response["Location"]).content.decode()
    chart_url = reverse("replay_detail", args=[replay.pk])
    assert f'hx-get="{chart_url}" hx-trigger="load"' in page


def test_htmx_replay_request_answers_with_the_replay_section(
    client: Client, stored_session: AgentSession, budget_policy: Policy
) -> None:
    url = reverse("replay_create", args=[stored_session.pk])

    response = client.post(
        url, {"policy_version": str(budget_policy.versions.get().pk)}, headers=HTMX
    )

    html = response.content.decode()
    replay = Replay.objects.get()  # queued: the task runs at commit
    assert "<html" not in html
    assert html.lstrip().startswith('<div id="replay">')
    assert 'hx-trigger="every 2s"' in html
    assert f'hx-get="{reverse("replay_detail", args=[replay.pk])}"' in html


def test_threshold_mode_chart_names_its_policy_and_tells_what_happened(
    client: Client,
    stored_session: AgentSession,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    replay_of(client, stored_session, budget_policy, django_capture_on_commit_callbacks)
    replay = Replay.objects.get()

    response = client.get(reverse("replay_detail", args=[replay.pk]), headers=HTMX)

    html = response.content.decode()
    assert "<html" not in html
    assert '<line class="chart__threshold"' in html
    assert "threshold 1 %" in html
    assert '<line class="chart__target"' in html
    assert "target 0.5 %" in html
    assert re.search(r'<polyline class="chart__usage" points="0\.0,[\d.]+ ', html)
    events = re.findall(r'<circle class="chart__event" cx="[\d.]+" cy="[\d.]+"', html)
    assert events
    assert "Replay under <strong>Tight budget v1, threshold mode</strong>" in html
    # One collection, down to the target: said as such, not drawn up into a sawtooth.
    assert len(events) == 1
    assert "GC collected once over 16 checks." in html
    assert "GC collected once, when usage reached the 1 % threshold" in html
    assert "sawtooth" not in html
    assert "every 2s" not in html
    assert "style=" not in html


@pytest.mark.parametrize("turns", [1, 2, 3])
def test_a_short_replays_axis_names_each_turn_once(
    client: Client,
    project: Project,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
    turns: int,
) -> None:
    session = background.session_upload(
        project=project,
        filename="short.json",
        data=session_bytes(SessionShape(turns=turns, user_chars=100, model_chars=100, seed=4)),
    ).session
    assert session is not None
    replay_of(client, session, budget_policy, django_capture_on_commit_callbacks)

    html = client.get(reverse("replay_detail", args=[Replay.objects.get().pk])).content.decode()

    ticks = re.findall(r'<text class="chart__tick"[^>]*>turn (\d+)</text>', html)
    assert ticks
    assert sorted(ticks, key=int) == ticks  # left to right
    assert len(set(ticks)) == len(ticks)  # each turn once
    assert {int(t) for t in ticks} <= set(range(1, turns + 1))


def test_continuous_mode_chart_has_no_threshold_line(
    client: Client,
    stored_session: AgentSession,
    project: Project,
    django_capture_on_commit_callbacks: Any,
) -> None:
    policy = services.policy_create(
        project=project, name="Continuous", config={**TIGHT_BUDGET, "pressure_percent": 0}
    )
    replay_of(client, stored_session, policy, django_capture_on_commit_callbacks)
    replay = Replay.objects.get()

    html = client.get(reverse("replay_detail", args=[replay.pk])).content.decode()

    assert "<html" in html
    assert "chart__threshold" not in html
    assert '<line class="chart__target"' in html
    assert "Replay under <strong>Continuous v1, continuous mode</strong>" in html
    assert "ripple" in html
    assert '<circle class="chart__event"' in html
    assert "&quot;pressure_percent&quot;: 0" in html  # the policy replayed
    # Its collections' score pools them: the figures are sums over their contexts, and it
    # says so.
    assert replay.series is not None
    collections = sum(e["success"] for e in replay.series["events"])
    assert collections > 1
    assert (
        f"anchors in the contexts before its collections ({collections:,}, summed) are still "
        "in view after them, weighted by class"
    ) in html


def test_pending_replay_polls(
    client: Client, stored_session: AgentSession, budget_policy: Policy
) -> None:
    replay = background.replay_request(
        session=stored_session, config=budget_policy.versions.get().config
    )

    html = client.get(reverse("replay_detail", args=[replay.pk]), headers=HTMX).content

    text = html.decode()
    assert 'hx-trigger="every 2s"' in text
    assert "waiting for a worker" in text
    assert "<svg" not in text


def test_failed_replay_says_why(
    client: Client, stored_session: AgentSession, budget_policy: Policy
) -> None:
    replay = background.replay_request(
        session=stored_session, config=budget_policy.versions.get().config
    )
    Replay.objects.filter(pk=replay.pk).update(status=JobStatus.FAILED, error="no budget")

    html = client.get(reverse("replay_detail", args=[replay.pk])).content.decode()

    assert "no budget" in html
    assert "every 2s" not in html


def test_session_page_without_policies_offers_no_replay(
    client: Client, stored_session: AgentSession
) -> None:
    html = client.get(reverse("session_detail", args=[stored_session.pk])).content

    assert "There is no stored policy to replay with yet." in html.decode()


def test_a_replay_is_drawn_before_its_collections_are_scored(
    client: Client,
    stored_session: AgentSession,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The chart and its cost are stored, the replay done, while the worker still scores each
    collection; the page says so, polls only the scores, and lists them once they come."""
    seen: dict[str, Any] = {}
    scores = replays._replay_scores

    def scored_after_a_look(*args: Any) -> dict[str, Any]:
        replay = Replay.objects.get()
        seen["state"] = (replay.status, replay.retention_pending)
        seen["series"] = replay.series
        seen["chart"] = client.get(reverse("replay_detail", args=[replay.pk])).content.decode()
        url = reverse("replay_retention", args=[replay.pk])
        seen["poll"] = client.get(url, headers=HTMX).content.decode()
        return scores(*args)

    monkeypatch.setattr(replays, "_replay_scores", scored_after_a_look)
    replay_of(client, stored_session, budget_policy, django_capture_on_commit_callbacks)
    replay = Replay.objects.get()

    assert seen["state"] == (JobStatus.DONE, True)
    assert all("retention" not in event for event in seen["series"]["events"])
    drawn = seen["chart"]
    assert "<svg" in drawn
    assert "Scoring the anchors each collection took out of view" in drawn
    assert f'hx-get="{reverse("replay_retention", args=[replay.pk])}"' in drawn
    assert '<span class="muted" data-scoring>scoring</span>' in drawn
    assert "Scoring the anchors" in seen["poll"]
    assert "<svg" not in seen["poll"]  # the chart is not drawn again for the poll
    # Scored, the series is the one drawn, each collection with its score.
    assert (replay.retention_pending, replay.claimed_by, replay.lease_until) == (False, "", None)
    assert replay.series is not None
    assert replay.series["steps"] == seen["series"]["steps"]
    assert [e["retention"] is not None for e in replay.series["events"]] == [
        e["success"] for e in replay.series["events"]
    ]
    done = client.get(reverse("replay_retention", args=[replay.pk]), headers=HTMX)
    html = done.content.decode()
    assert "hx-trigger" not in html
    assert "data-retention-sentence" in html
    # Its collections' figures are kept, not the anchors they lost: no column of them.
    assert "First lost" not in html
    assert "a run of the policy lists them" in html
    assert f'<div id="replay-events-{replay.pk}" hx-swap-oob="true">' in html
    assert "data-scoring" not in html


def test_a_replay_whose_scoring_fails_keeps_its_chart_and_says_why(
    client: Client,
    stored_session: AgentSession,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    drawn = replays.replay_series_of

    def scoring_breaks(*args: Any, scored: bool, **kwargs: Any) -> dict[str, Any]:
        if scored:
            raise RuntimeError("scorer broke")
        return drawn(*args, scored=scored, **kwargs)

    monkeypatch.setattr(replays, "replay_series_of", scoring_breaks)
    replay_of(client, stored_session, budget_policy, django_capture_on_commit_callbacks)
    replay = Replay.objects.get()

    assert (replay.status, replay.retention_pending) == (JobStatus.DONE, False)
    assert replay.unscored_because == "scoring it failed (RuntimeError); the server log says why"
    assert "scoring the anchor retention of a replay failed" in caplog.text
    html = client.get(reverse("replay_detail", args=[replay.pk])).content.decode()
    assert "<svg" in html
    assert "Scoring it failed (RuntimeError); the server log says why." in html
    assert "every 2s" not in html


def test_a_replay_with_the_llm_summarizer_calls_it_once_per_collection_and_is_scored_at_once(
    stored_session: AgentSession,
    chat_server: str,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scoring after the chart replays the session again; with the LLM summarizer that would
    call the endpoint twice per collection and could draw another chart."""
    monkeypatch.setenv("JAATO_GC_LLM_BASE_URL", chat_server)
    monkeypatch.setenv("JAATO_GC_LLM_MODEL", "summarizer")
    monkeypatch.setattr(replays, "_replay_scores", lambda *args: pytest.fail("scored again"))
    config = {**TIGHT_BUDGET, "type": "gc_summarize", "plugin_config": {"summarizer": "llm"}}

    with django_capture_on_commit_callbacks(execute=True):
        background.replay_request(session=stored_session, config=config)

    replay = Replay.objects.get()
    assert (replay.status, replay.retention_pending) == (JobStatus.DONE, False), replay.error
    assert replay.series is not None
    collections = [e for e in replay.series["events"] if e["success"]]
    assert collections
    assert len(FakeChatServer.requests) == len(collections)
    assert all(e["retention"] is not None for e in collections)


def test_a_replay_that_collects_differently_when_scored_keeps_the_chart_it_showed(
    client: Client,
    stored_session: AgentSession,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plugin that does not collect the same way twice would change the chart under the
    reader when the scores come: the chart stands, and the replay says why it has none."""
    drawn_first = replays.replay_series_of
    charts: list[dict[str, Any]] = []

    def another_collection_the_second_time(
        *args: Any, scored: bool, **kwargs: Any
    ) -> dict[str, Any]:
        series = drawn_first(*args, scored=scored, **kwargs)
        if scored:
            series["events"][0]["tokens_after"] -= 1
        else:
            charts.append(series)
        return series

    monkeypatch.setattr(replays, "replay_series_of", another_collection_the_second_time)
    replay_of(client, stored_session, budget_policy, django_capture_on_commit_callbacks)
    replay = Replay.objects.get()

    assert (replay.status, replay.retention_pending) == (JobStatus.DONE, False)
    assert replay.unscored_because == services.REPLAYED_DIFFERENTLY
    assert replay.series == charts[0]
    html = client.get(reverse("replay_detail", args=[replay.pk])).content.decode()
    assert "the chart stands without scores." in html
