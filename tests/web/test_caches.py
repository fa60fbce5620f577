"""The bounded caches a process keeps (``jaato_web.caches``): what they drop, and when,
decides what a worker holds at its peak. A worker holding one large session read back must let
it go before it reads the next, or it peaks holding both (401 MB instead of 300 for two 45 MB
uploads in a row)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import gcengine
import jaato_web
from gcengine.synthetic import SessionShape
from jaato_web import caches
from jaato_web.caches import BoundedLRU
from jaato_web.dashboard import background, services
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
    caches.clear_all()
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


def _process_caches_made_elsewhere(path: Path) -> list[str]:
    """Caches a module of the dashboard makes for the whole process without ``caches``: a
    ``BoundedLRU`` built directly, or a module-level function memoised by functools."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
            == "BoundedLRU"
        ):
            found.append(f"{path}:{node.lineno}: BoundedLRU(...)")
    for node in tree.body:  # only module-level functions live as long as the process
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                name = ast.unparse(decorator)
                if name.split("(")[0] in MEMOISERS:
                    found.append(f"{path}:{node.lineno}: @{name} {node.name}")
    return found


MEMOISERS = {"cache", "functools.cache", "lru_cache", "functools.lru_cache"}
WEB = Path(jaato_web.__file__).parent


def test_every_cache_a_process_keeps_is_made_through_the_caches_module() -> None:
    made_elsewhere = [
        line
        for path in sorted(WEB.rglob("*.py"))
        if path != WEB / "caches.py"
        for line in _process_caches_made_elsewhere(path)
    ]
    assert made_elsewhere == []


def test_clearing_all_empties_every_cache_and_a_test_starts_with_them_empty(
    stored_session: AgentSession,
) -> None:
    services.engine_session_of(stored_session)
    assert {cache.name for cache in caches.CACHES} >= {
        "stored sessions read back",
        "replays drawn for previews",
        "parts of pages drawn",
        "plans made",
    }
    assert any(len(cache.store) for cache in caches.CACHES)

    caches.clear_all()

    assert [(c.name, len(c.store), c.store.weight) for c in caches.CACHES if len(c.store)] == []
