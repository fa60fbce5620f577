"""A stored session reads back as the session that was loaded: its turns as the history view
and a run read them, and the whole session as runs, replays and exports reopen it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings

import gcengine
from jaato_web import caches
from jaato_web.dashboard import background, services, storage
from jaato_web.dashboard.models import AgentSession, GCRun, Policy, Project
from tests.engine.conftest import example
from tests.engine.strategies import jaato_session_files
from tests.web.conftest import session_bytes

APPROX = gcengine.load_counter("approx")


def read_back(engine: gcengine.Session) -> gcengine.Session:
    """The session as the dashboard stores it (document and turn rows) and reads it back."""
    turns = [storage.unpack_turn(row.packed) for row in storage.turn_rows(engine)]
    return storage.unpack_session(storage.pack_session(engine), turns)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jaato_session_files(max_turns=4))
def test_every_turn_and_the_session_read_back_as_loaded(file: dict[str, Any]) -> None:
    engine = gcengine.load_session(json.dumps(file).encode(), counter=APPROX)

    for row, turn, figures in zip(
        storage.turn_rows(engine),
        engine.turns(),
        storage.turn_figures(engine, engine.turns()),
        strict=True,
    ):
        assert storage.unpack_turn(row.packed) == (turn.messages, figures)
    again = read_back(engine)
    assert again == engine
    assert again.model_dump(mode="json") == engine.model_dump(mode="json")
    assert json.loads(gcengine.session_record_json(engine)) == gcengine.session_record(engine)


@pytest.mark.parametrize("name", ["jaato_session_v2.1.json", "jaato_session_v2.10.json"])
def test_jaatos_own_files_read_back_as_loaded(name: str) -> None:
    engine = gcengine.load_session(json.dumps(example(name)).encode())

    assert read_back(engine) == engine


def test_an_edit_of_a_message_read_back_drops_its_budgets_index_as_one_loaded() -> None:
    """The messages read back are given their readings at once; they still count their edits
    against the budget's own revision, so the index a collection would read stops holding as
    soon as one is edited, as it does for the session loaded."""
    loaded = gcengine.load_session(json.dumps(example("jaato_session_v2.10.json")).encode())
    again = read_back(loaded)

    for session in (loaded, again):
        conversation = session.budget.get_entry(gcengine.InstructionSource.CONVERSATION)
        assert conversation is not None
        assert conversation.kept_index() is not None
        session.history[0].metadata = {"edited": True}
        assert conversation.kept_index() is None


def test_a_stored_session_reopens_in_a_worker_that_never_read_it(project: Project) -> None:
    data = session_bytes()
    receipt = background.session_upload(project=project, filename="small.json", data=data)
    assert receipt.session is not None
    caches.clear_all()

    reopened = services.engine_session_of(AgentSession.objects.get(pk=receipt.session.pk))

    assert reopened == gcengine.load_session(data)


def test_the_run_on_upload_reads_the_session_the_upload_read_and_removes_the_same(
    project: Project,
    default_policy: Policy,
    run_finished: Callable[..., GCRun],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with (
        CaptureQueriesContext(connection) as queries,
        django_capture_on_commit_callbacks(execute=True),
    ):
        receipt = background.session_upload(
            project=project, filename="small.json", data=session_bytes()
        )
    assert receipt.session is not None
    on_upload = GCRun.objects.get(session=receipt.session, trigger="upload")
    assert on_upload.status == "done"
    # Not a turn row was read back: the run started from the session the upload had read.
    reads = [q["sql"] for q in queries if q["sql"].startswith("SELECT")]
    assert reads
    assert not [sql for sql in reads if '"dashboard_sessionturn"' in sql]

    caches.clear_all()
    reopened = run_finished(receipt.session, policy_version=default_policy.versions.get())

    def ledger(run: GCRun) -> list[tuple[Any, ...]]:
        return list(
            run.removals.order_by("seq").values_list("child_key", "tokens_freed", "message_ids")
        )

    assert ledger(on_upload) == ledger(reopened)
    assert ledger(on_upload)
    assert on_upload.tokens_after == reopened.tokens_after


@pytest.mark.parametrize("changed", [False, True], ids=["history-only", "record-changed-too"])
def test_a_runs_collected_session_reads_back_as_the_run_left_it(changed: bool) -> None:
    before = gcengine.load_session(session_bytes(), counter=APPROX)
    config = gcengine.load_gc_config(
        {"type": "gc_budget", "threshold_percent": 1, "target_percent": 0.5}, env={}
    )
    after = gcengine.run_gc(before, config).session
    if changed:
        after = after.model_copy(update={"warnings": [*after.warnings, "changed by the run"]})

    packed = storage.pack_session_after(after, before)
    again = storage.unpack_session_after(packed, before)

    assert again == after
    assert again.warnings == after.warnings
    assert again.user_inputs == before.user_inputs
    # The rest of the session is stored only when the run changed it: the history it took
    # turns from moved the places its user inputs are recorded at, not the inputs.
    assert ("session" in storage.unpacked(packed)) == changed


def test_turns_of_many_batches_and_of_megabytes_read_back_in_order() -> None:
    """Turns are packed a batch at a time on another thread, a turn of over a megabyte on its
    own: every row still holds its own turn, in order."""
    file = gcengine.generate_session_file(gcengine.SessionShape(turns=1_100, seed=8))
    large = next(m for m in file["history"][600:] if m["role"] == "user")
    large["parts"][0]["text"] = "a pasted log line\n" * 120_000  # 2.2 MB
    engine = gcengine.load_session(json.dumps(file).encode(), counter=APPROX)

    rows = storage.turn_rows(engine)

    turns = engine.turns()
    assert [row.position for row in rows] == list(range(len(turns)))
    assert max(len(storage.decompressed(row.packed)) for row in rows) > 2_000_000
    assert [storage.unpack_turn(row.packed)[0] for row in rows] == [t.messages for t in turns]
