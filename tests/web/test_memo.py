"""The bounded caches a process keeps: what they drop, and when, decides what a worker holds
at its peak. A worker holding one large session read back must let it go before it reads the
next, or it peaks holding both (401 MB instead of 300 for two 45 MB uploads in a row)."""

from __future__ import annotations

from typing import Any

import pytest

import gcengine
from gcengine.synthetic import SessionShape
from jaato_web.dashboard import background, services
from jaato_web.dashboard.memo import BoundedLRU
from jaato_web.dashboard.models import AgentSession, IngestJob, Project
from jaato_web.dashboard.services import stored_sessions
from tests.web.conftest import session_bytes


def test_the_least_recently_used_go_first_and_the_last_put_always_stays() -> None:
    cache: BoundedLRU[str, str] = BoundedLRU(10, len)
    cache.put("a", "aaaa")
    cache.put("b", "bbbb")
    assert cache.get("a") == "aaaa"  # b is now the least recently used

    cache.put("c", "cccc")
    assert [cache.get(key) for key in "abc"] == ["aaaa", None, "cccc"]

    cache.put("heavy", "h" * 50)
    assert [cache.get(key) for key in ("a", "c", "heavy")] == [None, None, "h" * 50]


def test_making_room_drops_the_least_recently_used_until_the_weight_fits() -> None:
    cache: BoundedLRU[str, str] = BoundedLRU(10, len)
    for key in "abc":
        cache.put(key, key * 3)

    cache.make_room(3)
    assert [cache.get(key) for key in "abc"] == [None, "bbb", "ccc"]

    cache.make_room(10)
    assert [cache.get(key) for key in "abc"] == [None, None, None]


def stored(project: Project, name: str, seed: int) -> AgentSession:
    data = session_bytes(SessionShape(turns=8, tool_every=2, seed=seed))
    session = background.session_upload(project=project, filename=name, data=data).session
    assert session is not None
    return session


@pytest.fixture
def second(project: Project) -> AgentSession:
    return stored(project, "second.json", seed=2)


@pytest.fixture
def first_held(
    project: Project, second: AgentSession, monkeypatch: pytest.MonkeyPatch
) -> AgentSession:
    """A session read back and held, in a cache with room for one such session (and none of
    ``second``, stored before it)."""
    first = stored(project, "first.json", seed=1)
    monkeypatch.setattr(stored_sessions._sessions, "limit", first.message_count * 3 // 2)
    services.clear_caches()
    services.engine_session_of(first)
    return first


def is_held(session: AgentSession) -> bool:
    return stored_sessions._sessions.get(stored_sessions._session_key(session)) is not None


def held_at_each_call(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, session: AgentSession
) -> list[bool]:
    """Whether ``session`` is held each time ``owner.name`` (a reader) is called."""
    held: list[bool] = []
    reader = getattr(owner, name)

    def reading(*args: Any) -> Any:
        held.append(is_held(session))
        return reader(*args)

    monkeypatch.setattr(owner, name, reading)
    return held


def test_a_stored_session_is_read_back_once_the_one_held_is_let_go(
    second: AgentSession, first_held: AgentSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    held_while_reading = held_at_each_call(
        monkeypatch, stored_sessions, "_stored_engine_session", first_held
    )

    services.engine_session_of(second)

    assert held_while_reading == [False]
    assert is_held(second)


def test_an_upload_is_read_once_the_session_held_is_let_go(
    project: Project,
    first_held: AgentSession,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.JAATO_INLINE_INGEST_BYTES = 10
    data = session_bytes(SessionShape(turns=8, tool_every=2, seed=3))
    # A file's size over FILE_BYTES_PER_MESSAGE is what reading it may build: this one's
    # estimate fills the cache.
    monkeypatch.setattr(
        stored_sessions, "FILE_BYTES_PER_MESSAGE", len(data) // first_held.message_count
    )
    held_while_reading = held_at_each_call(monkeypatch, gcengine, "load_session", first_held)

    with django_capture_on_commit_callbacks(execute=True):
        job = background.session_upload(project=project, filename="third.json", data=data).job

    assert job is not None
    assert IngestJob.objects.get(pk=job.pk).session is not None
    assert held_while_reading == [False]
