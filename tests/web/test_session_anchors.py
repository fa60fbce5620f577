"""Each stored session's anchors are read once, when it is uploaded, and read back by every
score of it: a run's, a ranking's; an extractor changed since reads them again; and storing
them is part of storing the upload, which stands whole or not at all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

import gcengine
from gcengine.messages import Message
from gcengine.quality import reading, stored_anchors
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
from tests.web.conftest import session_bytes


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the messages whose anchors are read from now on."""
    read: list[str] = []
    extract = reading.message_anchors

    def counted(message: Message, *args: Any) -> Any:
        read.append(message.message_id)
        return extract(message, *args)

    monkeypatch.setattr(reading, "message_anchors", counted)
    return read


def said(session: AgentSession) -> set[str]:
    """The ids of the messages the session said (whose anchors its upload read)."""
    return {
        m.message_id for m in gcengine.anchor_cache(services.engine_session_of(session)).messages
    }


def test_an_uploaded_sessions_anchors_are_stored_and_its_runs_and_rankings_read_none_again(
    stored_session: AgentSession,
    budget_policy: Policy,
    run_finished: Callable[..., GCRun],
    reads: list[str],
) -> None:
    stored = SessionAnchors.objects.get(session=stored_session)
    assert stored.extractor == gcengine.extractor_version()
    caches.clear_all()  # as a worker that has read nothing
    reads.clear()

    run = run_finished(stored_session, policy_version=budget_policy.versions.get())
    version = budget_policy.versions.get()
    project = stored_session.project
    ranked = previews.rank(
        [stored_session],
        [version],
        services.project_gates(project),
        services.project_prices(project),
        context_limit=4_000,
    )

    assert run.retention is not None
    assert run.retention["score"] is not None
    assert ranked.ranks[0].sessions[0].collections > 0
    assert not said(stored_session) & set(reads)
    # The same figures as reading the session afresh.
    caches.clear_all()
    SessionAnchors.objects.all().delete()
    again = previews.rank(
        [stored_session],
        [version],
        services.project_gates(project),
        services.project_prices(project),
        context_limit=4_000,
    )
    assert previews.ranking_record(again) == previews.ranking_record(ranked)


def test_anchors_an_older_extractor_stored_are_read_again_and_replaced(
    stored_session: AgentSession, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stored_anchors, "extractor_version", lambda: "a changed extractor")
    monkeypatch.setattr(gcengine, "extractor_version", lambda: "a changed extractor")
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


def test_a_session_stored_before_its_anchors_were_has_them_read_and_stored_on_first_need(
    stored_session: AgentSession, reads: list[str]
) -> None:
    SessionAnchors.objects.all().delete()
    caches.clear_all()

    services.session_anchors(stored_session)
    assert SessionAnchors.objects.filter(session=stored_session).exists()
    reads.clear()
    services.session_anchors(stored_session)
    assert not reads


def test_an_upload_whose_anchors_cannot_be_stored_is_not_stored_at_all(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: Any) -> Any:
        raise ValueError("boom from a bug")

    monkeypatch.setattr(gcengine, "anchors_record", fail)

    answer = client.post(
        "/sessions/upload/", {"files": [SimpleUploadedFile("crash.json", session_bytes())]}
    )

    assert answer.status_code == 500
    assert "the server failed while reading this file (ValueError)" in answer.content.decode()
    for model in (AgentSession, SessionTurn, SessionDocument, SessionAnchors):
        assert not model.objects.exists()
