"""Replays from the session page: the request, the polling, and the chart."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession, JobStatus, Policy, Project, Replay
from tests.web.conftest import TIGHT_BUDGET

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


def test_pending_replay_polls(
    client: Client, stored_session: AgentSession, budget_policy: Policy
) -> None:
    replay = services.replay_request(
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
    replay = services.replay_request(
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
