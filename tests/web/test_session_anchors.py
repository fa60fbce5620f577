"""Each stored session's anchors are read once, by its upload when it scores the agent's own
compactions or else by its first score, and read back by every later score of it: a run's, a
ranking's; an extractor changed since reads them again; and storing them with an upload is
part of storing it, which stands whole or not at all."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

import gcengine
from jaato_web import caches
from jaato_web.dashboard import previews, services
from jaato_web.dashboard.models import (
    AgentSession,
    GCRun,
    Policy,
    SessionAnchors,
    SessionDocument,
    SessionTurn,
)
from tests.engine.anchor_reads import anchors_read, extractor_changed

# A real Claude Code session with one compaction of its own (2.7 MB).
COMPACTED = (
    Path(__file__).parents[1]
    / "fixtures"
    / "formats"
    / "spotter"
    / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return anchors_read(monkeypatch)


def said(session: AgentSession) -> set[str]:
    """The ids of the messages the session said (whose anchors scoring reads)."""
    engine = services.engine_session_of(session)
    return {m.message_id for m in gcengine.anchor_cache(engine).messages}


def rank(session: AgentSession, policy: Policy) -> previews.Ranking:
    project = session.project
    return previews.rank(
        [session],
        [policy.versions.get()],
        services.project_gates(project),
        services.project_prices(project),
        context_limit=4_000,
    )


def test_a_sessions_first_score_stores_its_anchors_and_later_runs_and_rankings_read_none(
    stored_session: AgentSession,
    budget_policy: Policy,
    run_finished: Callable[..., GCRun],
    reads: list[str],
) -> None:
    first = run_finished(stored_session, policy_version=budget_policy.versions.get())
    stored = SessionAnchors.objects.get(session=stored_session)
    assert stored.extractor == gcengine.extractor_version()
    assert said(stored_session) <= set(reads)
    caches.clear_all()  # as a worker that has read nothing
    reads.clear()

    again = run_finished(stored_session, policy_version=budget_policy.versions.get())
    ranked = rank(stored_session, budget_policy)

    assert not said(stored_session) & set(reads)
    assert again.retention == first.retention
    assert ranked.ranks[0].sessions[0].collections > 0
    # The same figures as reading the session afresh.
    caches.clear_all()
    SessionAnchors.objects.all().delete()
    assert previews.ranking_record(rank(stored_session, budget_policy)) == (
        previews.ranking_record(ranked)
    )


def test_anchors_an_older_extractor_stored_are_read_again_and_replaced(
    stored_session: AgentSession, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    services.session_anchors(stored_session)
    extractor_changed(monkeypatch, "a changed extractor")
    caches.clear_all()
    reads.clear()

    services.session_anchors(stored_session)

    assert said(stored_session) <= set(reads)
    assert list(SessionAnchors.objects.values_list("extractor", flat=True)) == [
        "a changed extractor"
    ]
    reads.clear()
    services.session_anchors(stored_session)
    assert not reads


def test_an_upload_that_scores_the_agents_compactions_stores_the_anchors_it_read(
    client: Client, settings: Any, reads: list[str]
) -> None:
    settings.JAATO_INLINE_INGEST_BYTES = 4 * 1024 * 1024
    answer = client.post(
        "/sessions/upload/", {"files": [SimpleUploadedFile("real.jsonl", COMPACTED.read_bytes())]}
    )
    assert answer.status_code == 200
    session = AgentSession.objects.get()
    assert session.agent_state["compactions"]
    caches.clear_all()
    reads.clear()

    services.session_anchors(session)

    assert SessionAnchors.objects.get(session=session).extractor == gcengine.extractor_version()
    assert not reads


def test_an_upload_whose_anchors_cannot_be_stored_is_not_stored_at_all(
    client: Client, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: Any) -> Any:
        raise ValueError("boom from a bug")

    monkeypatch.setattr(gcengine, "anchors_record", fail)
    settings.JAATO_INLINE_INGEST_BYTES = 4 * 1024 * 1024

    answer = client.post(
        "/sessions/upload/", {"files": [SimpleUploadedFile("real.jsonl", COMPACTED.read_bytes())]}
    )

    assert answer.status_code == 500
    assert "the server failed while reading this file (ValueError)" in answer.content.decode()
    for model in (AgentSession, SessionTurn, SessionDocument, SessionAnchors):
        assert not model.objects.exists()
