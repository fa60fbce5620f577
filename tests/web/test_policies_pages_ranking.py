"""Compare-and-rank in the background: the compare page starts a ranking, a worker replays
each policy on each session and says how far it got, the page polls that and then shows the
ranked table; the ranking is kept, so the same one asked for again is read back; what fails
says why on the page. The same through the API."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

import gcengine
from jaato_web import caches
from jaato_web.dashboard import background, presenters, previews, services
from jaato_web.dashboard.models import (
    AgentSession,
    JobStatus,
    Policy,
    PolicyKind,
    PolicyRanking,
    Project,
)
from jaato_web.dashboard.previews import ranking as ranking_module
from tests.web.ranking_lease import RankingLease

pytestmark = pytest.mark.django_db

# Two short demo sessions against a 20,000-token window: both policies collect on both.
WINDOW = 20_000
TRUNCATE = {"type": "truncate", "threshold_percent": 80, "target_percent": 40}
CONTINUOUS = {
    "type": "budget",
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 0,
    "preserve_recent_turns": 2,
}
RANKED_TABLE = "data-ranking>"


def demo_session(project: Project, seed: int) -> AgentSession:
    shape = gcengine.DemoShape(turns=20, seed=seed)
    data = json.dumps(gcengine.generate_demo_session(shape)).encode()
    receipt = background.session_upload(project=project, filename=f"demo-{seed}.json", data=data)
    assert receipt.session is not None
    return receipt.session


@pytest.fixture
def sessions(project: Project) -> list[AgentSession]:
    return [demo_session(project, 1), demo_session(project, 2)]


@pytest.fixture
def policies(project: Project) -> list[Policy]:
    return [
        services.policy_create(project=project, name="Truncate 80/40", config=TRUNCATE),
        services.policy_create(project=project, name="Continuous 80/60", config=CONTINUOUS),
    ]


def compare_url(sessions: list[AgentSession], policies: list[Policy], **more: str) -> str:
    a, b = (p.versions.get() for p in policies)
    query = "&".join(
        [*(f"session={s.pk}" for s in sessions), f"a={a.pk}", f"b={b.pk}", f"window={WINDOW}"]
        + [f"{key}={value}" for key, value in more.items()]
    )
    return f"{reverse('policy_compare')}?{query}"


def ranking_section(client: Client, row: PolicyRanking) -> str:
    answer = client.get(reverse("policy_ranking", args=[row.pk]), headers={"HX-Request": "true"})
    assert answer.status_code == 200
    return answer.content.decode()


# --- The page ---------------------------------------------------------------------------------


def test_the_compare_page_starts_a_ranking_and_polls_it_until_the_ranked_table(
    client: Client,
    sessions: list[AgentSession],
    policies: list[Policy],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as started:
        html = client.get(compare_url(sessions, policies)).content.decode()
    assert len(started) == 1  # one task handed to a worker, once the row was committed

    row = PolicyRanking.objects.get()
    poll = reverse("policy_ranking", args=[row.pk])
    assert 'data-ranking-state="queued"' in html
    assert f'hx-get="{poll}" hx-trigger="every 250ms"' in html
    assert "0 of 4 replays done" in html
    assert "waiting for a worker" in html
    assert RANKED_TABLE not in html
    assert "comparison" in html  # A and B are compared meanwhile, in this request

    row.refresh_from_db()
    section = ranking_section(client, row)
    assert row.status == JobStatus.DONE
    assert row.replays_done == row.replays_total == 4
    assert 'data-ranking-state="done"' in section
    assert "hx-get" not in section  # the page stops polling
    assert "<html" not in section
    assert "Ranking over 2 sessions" in section
    assert "Ranked by a worker in" in section
    ranked = previews.ranking_read(row)
    assert ranked is not None
    for rank in ranked.ranks:
        assert f'data-rank="{rank.rank}" data-version="{rank.version.pk}"' in section


@dataclass
class Watched(RankingLease):
    """A worker's lease that, each time the ranking says how far it got, reads the ranking
    section as the page polling it would see it then."""

    client: Client
    row: PolicyRanking
    seen: list[tuple[str, str]] = field(default_factory=list)

    def progress(self, text: str, **fields: Any) -> None:
        super().progress(text, **fields)
        self.seen.append((text, ranking_section(self.client, self.row)))


def test_the_page_shows_each_replay_the_worker_is_at_and_how_long_it_has_worked(
    client: Client, sessions: list[AgentSession], policies: list[Policy]
) -> None:
    client.get(compare_url(sessions, policies))  # queued: its transaction never commits here
    row = PolicyRanking.objects.get()
    assert background.work_claim(PolicyRanking, row.pk, "reading the sessions")
    lease = Watched(background.HeldWork(PolicyRanking, row.pk), client, row)

    previews.ranking_draw(ranking_id=row.pk, lease=lease)

    names = [presenters.policy_name(p.versions.get()) for p in policies]
    steps = [f"replaying {s.label} under {name}" for s in sessions for name in names]
    assert [text for text, _ in lease.seen] == ["reading the sessions", *steps]
    for done, (text, section) in enumerate(lease.seen[1:]):
        assert 'data-ranking-state="running"' in section
        assert f"{done} of 4 replays done" in section
        assert f'<progress max="4" value="{done}">' in section
        assert text in section
        assert "data-ranking-elapsed" in section
        assert RANKED_TABLE not in section
    row.refresh_from_db()
    assert row.status == JobStatus.DONE
    assert row.elapsed_seconds is not None
    assert RANKED_TABLE in ranking_section(client, row)


def test_the_same_ranking_asked_again_is_read_back_and_other_inputs_are_ranked_anew(
    client: Client,
    project: Project,
    sessions: list[AgentSession],
    policies: list[Policy],
    django_capture_on_commit_callbacks: Any,
) -> None:
    url = compare_url(sessions, policies)
    with django_capture_on_commit_callbacks(execute=True):
        client.get(url)
    stored = PolicyRanking.objects.get()

    caches.clear_all()  # a process that has replayed nothing: only the row holds the ranking
    with django_capture_on_commit_callbacks(execute=True) as started:
        html = client.get(url).content.decode()
    assert started == []  # no worker is asked for anything
    assert PolicyRanking.objects.get() == stored
    assert 'data-ranking-state="done"' in html
    assert RANKED_TABLE in html

    # What changes the figures or their order is another ranking: the order ranked by, the
    # window, the order of the sessions, the project's gates.
    others = [
        compare_url(sessions, policies, by="cost"),
        compare_url(sessions, policies).replace(f"window={WINDOW}", "window=30000"),
        compare_url(sessions[::-1], policies),
    ]
    for other in others:
        with django_capture_on_commit_callbacks(execute=False) as started:
            client.get(other)
        assert len(started) == 1
    services.project_quality_save(project=project, gates={"errors": 0.5}, prices=None)
    with django_capture_on_commit_callbacks(execute=False) as started:
        client.get(url)
    assert len(started) == 1
    assert PolicyRanking.objects.count() == 5


def test_a_ranking_whose_version_was_deleted_fails_with_the_reason_on_the_page(
    client: Client, sessions: list[AgentSession], policies: list[Policy]
) -> None:
    client.get(compare_url(sessions, policies))  # queued, not started
    row = PolicyRanking.objects.get()
    policies[1].delete()

    background.ranking_execute(ranking_id=row.pk)

    row.refresh_from_db()
    section = ranking_section(client, row)
    reason = "a session or policy version it ranks was deleted since it was asked for"
    assert row.status == JobStatus.FAILED
    assert row.error == reason
    assert 'data-ranking-state="failed"' in section
    assert f"Not ranked: {reason}" in section
    assert 'role="alert"' in section
    assert "hx-get" not in section


def test_a_worker_failure_shows_on_the_page_and_asking_again_ranks_again(
    client: Client,
    sessions: list[AgentSession],
    policies: list[Policy],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    url = compare_url(sessions, policies)
    client.get(url)  # queued, not started
    row = PolicyRanking.objects.get()

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the replay broke")

    monkeypatch.setattr(ranking_module, "rank", broken)
    with pytest.raises(RuntimeError):  # the task fails, and its log keeps the traceback
        background.ranking_execute(ranking_id=row.pk)
    monkeypatch.undo()

    row.refresh_from_db()
    section = ranking_section(client, row)
    assert row.status == JobStatus.FAILED
    assert "the server failed while ranking these policies (RuntimeError)" in section
    assert "hx-get" not in section

    with django_capture_on_commit_callbacks(execute=True) as started:
        client.get(url)
    assert len(started) == 1
    row.refresh_from_db()
    assert row.status == JobStatus.DONE
    assert row.attempts == 1
    assert RANKED_TABLE in ranking_section(client, row)


def test_a_ranking_of_another_project_is_not_found(
    client: Client, sessions: list[AgentSession], policies: list[Policy]
) -> None:
    client.get(compare_url(sessions, policies))
    row = PolicyRanking.objects.get()
    other = Project.objects.create(name="Other", slug="other")
    PolicyRanking.objects.filter(pk=row.pk).update(project=other)

    assert client.get(reverse("policy_ranking", args=[row.pk])).status_code == 404
    assert client.get(f"/api/policies/rankings/{row.pk}").status_code == 404


def test_a_worker_that_stops_while_ranking_is_swept_and_the_ranking_tried_again(
    client: Client,
    sessions: list[AgentSession],
    policies: list[Policy],
    django_capture_on_commit_callbacks: Any,
) -> None:
    client.get(compare_url(sessions, policies))
    row = PolicyRanking.objects.get()
    PolicyRanking.objects.filter(pk=row.pk).update(
        status=JobStatus.RUNNING, claimed_by="elsewhere:1", attempts=1, lease_until=row.created_at
    )

    with django_capture_on_commit_callbacks(execute=True):  # the retry's task runs here
        assert background.work_sweep() == 1

    row.refresh_from_db()
    assert row.status == JobStatus.DONE
    assert row.attempts == 2
    assert RANKED_TABLE in ranking_section(client, row)


# --- The API ----------------------------------------------------------------------------------


def rank_asked(sessions: list[AgentSession], policies: list[Policy], **more: Any) -> Any:
    return {
        "session_ids": [s.pk for s in sessions],
        "version_ids": [p.versions.get().pk for p in policies],
        "context_limit": WINDOW,
        **more,
    }


def test_the_api_answers_202_with_the_ranking_to_poll_then_its_result(
    client: Client, sessions: list[AgentSession], policies: list[Policy]
) -> None:
    asked = rank_asked(sessions, policies)
    started = client.post("/api/policies/rank", asked, content_type="application/json")
    assert started.status_code == 202
    body = started.json()
    assert body["status"] == "queued"
    assert body["replays_total"] == 4
    assert body["result"] is None
    url = body["url"]
    assert url == f"/api/policies/rankings/{body['id']}"
    assert client.get(url).status_code == 202

    background.ranking_execute(ranking_id=body["id"])  # what a worker does

    done = client.get(url)
    assert done.status_code == 200
    result = done.json()
    assert result["status"] == "done"
    assert result["replays_done"] == 4
    ranks = result["result"]["ranks"]
    assert sorted(r["policy_version_id"] for r in ranks) == sorted(asked["version_ids"])
    assert [r["rank"] for r in ranks] == [1, 2]
    assert [s["session_id"] for s in ranks[0]["sessions"]] == asked["session_ids"]

    again = client.post("/api/policies/rank", asked, content_type="application/json")
    assert again.status_code == 200  # ranked before: read back at once
    assert again.json()["id"] == body["id"]
    assert again.json()["result"] == result["result"]


def test_the_api_waits_for_a_ranking_as_long_as_asked(
    client: Client, sessions: list[AgentSession], policies: list[Policy]
) -> None:
    asked = rank_asked(sessions, policies, wait=0.3)
    began = time.monotonic()
    answer = client.post("/api/policies/rank", asked, content_type="application/json")
    assert answer.status_code == 202  # no worker here: it waited, then said so
    assert time.monotonic() - began >= 0.3
    assert client.get(f"{answer.json()['url']}?wait=31").status_code == 400


def test_the_api_refuses_a_bad_ranking_at_once_and_stores_nothing(
    client: Client, project: Project, sessions: list[AgentSession], policies: list[Policy]
) -> None:
    planner = services.policy_create(
        project=project, name="Planner", config={}, kind=PolicyKind.PLANNER
    )
    refusals = {
        "by": rank_asked(sessions, policies, by="mood"),
        "version_ids": {
            **rank_asked(sessions, policies),
            "version_ids": [planner.versions.get().pk],
        },
    }
    for key, asked in refusals.items():
        answer = client.post("/api/policies/rank", asked, content_type="application/json")
        assert answer.status_code == 400, key
        assert answer.json()["key"] == key
    small = client.post(
        "/api/policies/rank",
        rank_asked(sessions, policies, context_limit=10),
        content_type="application/json",
    )
    assert small.status_code in (400, 422)
    assert not PolicyRanking.objects.exists()


def test_a_ranking_reads_a_replay_stored_with_its_scores_instead_of_replaying_it(
    sessions: list[AgentSession],
    policies: list[Policy],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """The session page's replay of a version is the ranking's replay of it: a worker that
    ranks reads it back, and ranks exactly as it would have replaying it."""
    versions = [p.versions.get() for p in policies]
    with django_capture_on_commit_callbacks(execute=True):
        stored = background.replay_request(
            session=sessions[0], policy_version=versions[1], context_limit=WINDOW
        )
    stored.refresh_from_db()
    assert stored.status == JobStatus.DONE
    assert not stored.retention_pending
    replayed: list[tuple[int, bool]] = []
    series_of = services.replay_series_of

    def recorded(engine: gcengine.Session, *args: Any, scored: bool, **shared: Any) -> Any:
        replayed.append((len(engine.history), scored))
        return series_of(engine, *args, scored=scored, **shared)

    monkeypatch.setattr(services, "replay_series_of", recorded)
    project = sessions[0].project
    caches.clear_all()
    with django_capture_on_commit_callbacks(execute=True):
        row = background.ranking_request(
            project=project, sessions=sessions, versions=versions, context_limit=WINDOW
        )
    row.refresh_from_db()
    assert row.status == JobStatus.DONE
    assert len(replayed) == 3  # four replays, one of them read back

    # The same ranking with nothing stored to read: every replay made, the same figures.
    stored.delete()
    caches.clear_all()
    replayed.clear()
    again = ranking_module.rank(
        sessions,
        versions,
        services.project_gates(project),
        services.project_prices(project),
        context_limit=WINDOW,
    )
    assert len(replayed) == 4
    assert previews.ranking_record(again) == row.result


def test_what_a_ranking_shares_between_replays_leaves_every_figure_the_engines(
    sessions: list[AgentSession], policies: list[Policy]
) -> None:
    """A ranking reads each session once, replays it without GC once and reads each message's
    anchors once for every replay: each figure is still the one the engine gives for that
    session and policy on its own."""
    versions = [p.versions.get() for p in policies]
    project = sessions[0].project
    ranked = ranking_module.rank(
        sessions,
        versions,
        services.project_gates(project),
        services.project_prices(project),
        context_limit=WINDOW,
    )
    for session in sessions:
        engine = gcengine.with_context_limit(services.engine_session_of(session), WINDOW)
        configs = {
            v.pk: previews.policies.dry_run_config(session, services.config_validated(v.config))[0]
            for v in versions
        }
        afters = {
            str(pk): gcengine.run_gc(engine, config).session.history
            for pk, config in configs.items()
        }
        at_equal_size = gcengine.score_collections_at_equal_size(engine, afters)
        for rank in ranked.ranks:
            on = next(s for s in rank.sessions if s.session.pk == session.pk)
            alone = gcengine.simulate(engine, configs[rank.version.pk], score_anchors=True)
            pooled = gcengine.pooled_retention(
                e.retention for e in alone.events if e.retention is not None
            )
            assert on.at_equal_size == at_equal_size[str(rank.version.pk)]
            assert on.retention.score == pooled.score  # a replay keeps its scores' figures
            assert [c.recall for c in on.retention.classes] == [c.recall for c in pooled.classes]
            assert on.collections == sum(1 for e in alone.events if e.result.success)
