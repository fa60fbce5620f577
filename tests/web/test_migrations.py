"""Stored data survives the migrations that change how it is stored.

Each test writes rows the way the version before a migration stored them, with that version's
models, migrates, and checks what pages, runs and exports read from the rows afterwards.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import zstandard
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

import gcengine
from jaato_web import caches
from jaato_web.dashboard import background, selectors, services, storage
from jaato_web.dashboard.models import (
    AgentSession,
    BudgetNode,
    GCRun,
    IngestJob,
    IngestUpload,
    SessionDocument,
    SessionTurn,
)
from tests.web.conftest import SMALL_SHAPE

BEFORE = ("dashboard", "0010_reachability_stash")
AFTER = ("dashboard", "0011_compact_session_storage")
ORIGINALS_WHOLE = ("dashboard", "0012_quality_gates_prices_retention")
ORIGINALS_COMPRESSED = ("dashboard", "0013_compress_originals")
TURNS_AS_JSON = ("dashboard", "0015_turns_validate_from_json")
ZSTD = ("dashboard", "0016_zstd_storage")
POLICY = gcengine.load_gc_config(
    {"type": "gc_budget", "threshold_percent": 1, "target_percent": 0.5}, env={}
)


@pytest.fixture
def migrator() -> Iterator[MigrationExecutor]:
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    yield executor
    executor = MigrationExecutor(connection)
    executor.migrate(leaves)


def apps_at(executor: MigrationExecutor, target: tuple[str, str]) -> Any:
    executor.loader.build_graph()
    executor.migrate([target])
    return MigrationExecutor(connection).loader.project_state([target]).apps


def old_tree_rows(budget: gcengine.InstructionBudget) -> list[dict[str, Any]]:
    """Every node of the tree, as stored before the compact storage (one row per node)."""
    rows: list[dict[str, Any]] = []

    def walk(entry: gcengine.SourceEntry, key: str, parent: str, position: int) -> None:
        path = f"{parent}/{key}" if parent else key
        rows.append(
            {
                "path": path,
                "parent_path": parent,
                "position": position,
                "depth": path.count("/"),
                "key": key,
                "label": entry.label or key,
                "policy": entry.effective_gc_policy().value,
                "tokens": entry.total_tokens(),
                "child_count": len(entry.children),
                "message_ids": list(entry.message_ids),
            }
        )
        for number, (child_key, child) in enumerate(entry.children.items()):
            walk(child, child_key, path, number)

    for number, (source, entry) in enumerate(budget.entries.items()):
        walk(entry, source.value, "", number)
    return rows


def old_messages(turn: gcengine.Turn, budget: gcengine.InstructionBudget) -> list[dict[str, Any]]:
    """A turn's messages as stored before the compact storage (the history view's JSON)."""
    figures = storage.message_figures(budget)
    return [
        {
            "id": m.message_id,
            "role": m.role.value,
            "kind": m.kind.value,
            "tokens": figures[m.message_id][0],
            "policy": figures[m.message_id][1],
            "counted_by": figures[m.message_id][2],
            "parts": [storage.part_row(p) for p in m.parts],
            "metadata": {},
        }
        for m in turn.messages
    ]


def packed_whole(session: gcengine.Session) -> bytes:
    return zlib.compress(session.model_dump_json().encode(), 1)


def store_as_before(apps: Any, engine: gcengine.Session) -> tuple[int, int, gcengine.GCOutcome]:
    """A session and a finished run of it, as written before the compact storage."""
    Project = apps.get_model("dashboard", "Project")
    project, _ = Project.objects.get_or_create(slug="default", defaults={"name": "Default"})
    budget = engine.budget
    session = apps.get_model("dashboard", "AgentSession").objects.create(
        project=project,
        label="old.json",
        sha256="0" * 64,
        size_bytes=1,
        source_format=engine.source_format.value,
        context_limit=engine.context_limit,
        context_limit_origin=engine.context_limit_origin.value,
        turn_count=len(engine.turns()),
        message_count=len(engine.history),
        total_tokens=budget.total_tokens(),
        locked_tokens=budget.locked_tokens(),
        preservable_tokens=budget.preservable_tokens(),
        eligible_tokens=budget.gc_eligible_tokens(),
        utilization_percent=budget.utilization_percent(),
        token_counter=engine.token_counter,
    )
    apps.get_model("dashboard", "SessionDocument").objects.create(
        session=session, original=b"{}", engine_session=packed_whole(engine)
    )
    for position, turn in enumerate(engine.turns()):
        apps.get_model("dashboard", "SessionTurn").objects.create(
            session=session,
            position=position,
            turn_index=turn.index,
            kind=turn.kind.value,
            tokens=sum(m["tokens"] for m in old_messages(turn, budget)),
            policy="ephemeral",
            messages=old_messages(turn, budget),
        )
    Node = apps.get_model("dashboard", "BudgetNode")
    Node.objects.bulk_create(Node(session=session, **row) for row in old_tree_rows(budget))
    outcome = gcengine.run_gc(engine, POLICY)
    run = apps.get_model("dashboard", "GCRun").objects.create(
        session=session,
        config=gcengine.dump_gc_config(POLICY),
        plugin="gc_budget",
        status="done",
        context_limit=engine.context_limit,
        tokens_after=outcome.budget_after.total_tokens(),
        turns_after=len(outcome.session.turns()),
        session_after=packed_whole(outcome.session),
    )
    Node.objects.bulk_create(
        Node(session=session, run=run, **row) for row in old_tree_rows(outcome.budget_after)
    )
    return session.pk, run.pk, outcome


@pytest.mark.django_db(transaction=True)
def test_stored_sessions_and_runs_read_the_same_after_compacting_their_storage(
    migrator: MigrationExecutor,
) -> None:
    engine = gcengine.load_session(
        json.dumps(gcengine.generate_session_file(SMALL_SHAPE)).encode(),
        counter=gcengine.load_counter("approx"),
    )
    session_id, run_id, outcome = store_as_before(apps_at(migrator, BEFORE), engine)

    apps_at(migrator, AFTER)
    # What follows reads through today's code, which knows the columns later migrations add.
    migrator.loader.build_graph()
    migrator.migrate(migrator.loader.graph.leaf_nodes())

    session = AgentSession.objects.get(pk=session_id)
    run = GCRun.objects.get(pk=run_id)
    # The session reopens for a run or replay as it was stored, figures and all.
    assert services.engine_session_of(session) == engine
    # The history view shows every message with its figure and its label in the tree.
    turns = list(SessionTurn.objects.filter(session=session).order_by("position"))
    assert [[m["id"] for m in t.messages] for t in turns] == [t.message_ids for t in engine.turns()]
    leaves = storage.message_figures(engine.budget)
    assert all(
        (m["tokens"], m["policy"], m["label"])
        == (leaves[m["id"]][0], leaves[m["id"]][1], leaves[m["id"]][3])
        for t in turns
        for m in t.messages
    )
    # The tree: the turns and their messages come from the turn rows, as they were drawn.
    old = {row["path"]: row for row in old_tree_rows(engine.budget)}
    drawn, total = selectors.budget_children_page(session=session, parent_path="conversation")
    assert total == len(engine.turns())
    for node in drawn:
        assert (node.label, node.policy, node.tokens, node.child_count) == (
            old[node.path]["label"],
            old[node.path]["policy"],
            old[node.path]["tokens"],
            old[node.path]["child_count"],
        )
        for leaf in selectors.budget_children_page(session=session, parent_path=node.path)[0]:
            assert (leaf.label, leaf.tokens) == (old[leaf.path]["label"], old[leaf.path]["tokens"])
    assert not BudgetNode.objects.filter(path__startswith="conversation/").exists()
    # The run's after-tree and its export are what the run left.
    after = {row["path"]: row for row in old_tree_rows(outcome.budget_after)}
    drawn, total = selectors.budget_children_page(
        session=session, run=run, parent_path="conversation"
    )
    assert total == len(outcome.session.turns())
    assert [(n.path, n.tokens) for n in drawn] == [
        (path, row["tokens"]) for path, row in after.items() if row["parent_path"] == "conversation"
    ][: len(drawn)]
    exported = services.session_after_of(run)
    assert exported is not None
    assert exported.history == outcome.session.history
    assert exported.budget == outcome.budget_after


@pytest.mark.django_db(transaction=True)
def test_originals_stored_whole_are_compressed_and_come_back_byte_for_byte(
    migrator: MigrationExecutor,
) -> None:
    data = json.dumps(gcengine.generate_session_file(SMALL_SHAPE)).encode()
    engine = gcengine.load_session(data, counter=gcengine.load_counter("approx"))
    session_id, _, _ = store_as_before(apps_at(migrator, BEFORE), engine)
    documents = apps_at(migrator, ORIGINALS_WHOLE).get_model("dashboard", "SessionDocument")
    documents.objects.filter(session_id=session_id).update(original=data)

    apps_at(migrator, ORIGINALS_COMPRESSED)
    stored = bytes(SessionDocument.objects.values_list("original", flat=True).get())
    assert len(stored) < len(data) / 2
    assert zlib.decompress(stored) == data
    # Read through today's code, which reads what later migrations write.
    apps_at(migrator, ZSTD)
    assert selectors.session_original(session=AgentSession.objects.get(pk=session_id)) == data

    # Migrating back gives the bytes as they were stored before.
    documents = apps_at(migrator, ORIGINALS_WHOLE).get_model("dashboard", "SessionDocument")
    assert bytes(documents.objects.values_list("original", flat=True).get()) == data


def as_zlib(packed: bytes) -> bytes:
    """Bytes stored today, as stored before values were compressed with zstd."""
    return zlib.compress(zstandard.ZstdDecompressor().decompress(packed), 1)


def turn_as_records(packed: bytes) -> bytes:
    """A turn row's bytes as stored before turns were pydantic's JSON: the engine's records."""
    messages, figures = storage.unpack_turn(packed)
    records = {"messages": gcengine.message_records(messages), "figures": figures}
    return zlib.compress(json.dumps(records, ensure_ascii=False).encode(), 1)


@pytest.mark.django_db(transaction=True)
def test_turns_stored_as_records_read_the_same_after_rewriting_them(
    migrator: MigrationExecutor,
) -> None:
    data = json.dumps(gcengine.generate_session_file(SMALL_SHAPE)).encode()
    engine = gcengine.load_session(data)
    receipt = background.session_upload(
        project=services.project_default(), filename="small.json", data=data
    )
    assert receipt.session is not None
    session_id = receipt.session.pk
    rows = list(SessionTurn.objects.filter(session_id=session_id).order_by("position"))
    shown = {row.pk: row.messages for row in rows}
    turns = apps_at(migrator, ORIGINALS_COMPRESSED).get_model("dashboard", "SessionTurn")
    for number, row in enumerate(rows):
        # The first as pydantic's JSON already: the migration leaves it as it is.
        packed = as_zlib(row.packed) if number == 0 else turn_as_records(bytes(row.packed))
        turns.objects.filter(pk=row.pk).update(packed=packed)

    apps_at(migrator, TURNS_AS_JSON)
    # What follows reads through today's code, which reads what later migrations write.
    apps_at(migrator, ZSTD)
    caches.clear_all()

    assert services.engine_session_of(AgentSession.objects.get(pk=session_id)) == engine
    assert {t.pk: t.messages for t in SessionTurn.objects.filter(session_id=session_id)} == shown

    # Migrating back gives every row as records again, which read as the messages they were.
    turns = apps_at(migrator, ORIGINALS_COMPRESSED).get_model("dashboard", "SessionTurn")
    stored = [
        json.loads(zlib.decompress(packed))
        for packed in turns.objects.filter(session_id=session_id)
        .order_by("position")
        .values_list("packed", flat=True)
    ]
    assert [gcengine.messages_from_records(s["messages"]) for s in stored] == [
        t.messages for t in engine.turns()
    ]
    assert [[tuple(f) for f in s["figures"]] for s in stored] == storage.turn_figures(
        engine, engine.turns()
    )


@pytest.mark.django_db(transaction=True)
def test_sessions_and_runs_compressed_with_zlib_read_the_same_after_recompressing_them(
    migrator: MigrationExecutor, run_finished: Callable[..., GCRun]
) -> None:
    data = json.dumps(gcengine.generate_demo_session(gcengine.DemoShape(turns=40, seed=5)))
    receipt = background.session_upload(
        project=services.project_default(), filename="demo.json", data=data.encode()
    )
    assert receipt.session is not None
    session = receipt.session
    run = run_finished(
        session,
        config={"type": "gc_reachability", "threshold_percent": 30, "target_percent": 20},
    )
    engine = services.engine_session_of(session)
    after = services.session_after_of(run)
    assert after is not None
    columns = {
        SessionDocument: ("original", "engine_session"),
        SessionTurn: ("packed",),
        GCRun: ("session_after", "after_turns", "stash"),
    }
    today = {
        model: [tuple(map(bytes, row)) for row in model.objects.order_by("pk").values_list(*names)]
        for model, names in columns.items()
    }
    assert all(value for rows in today.values() for row in rows for value in row)

    # Migrating back stores every value as zlib did, holding the very same bytes.
    apps = apps_at(migrator, TURNS_AS_JSON)
    for model, names in columns.items():
        old = apps.get_model("dashboard", model.__name__).objects.order_by("pk")
        assert [
            tuple(zlib.decompress(value) for value in row) for row in old.values_list(*names)
        ] == [
            tuple(zstandard.ZstdDecompressor().decompress(value) for value in row)
            for row in today[model]
        ]

    apps_at(migrator, ZSTD)
    caches.clear_all()
    session = AgentSession.objects.get(pk=session.pk)
    run = GCRun.objects.get(pk=run.pk)
    assert selectors.session_original(session=session) == data.encode()
    assert services.engine_session_of(session) == engine
    assert services.session_after_of(run) == after
    stash = GCRun.objects.values_list("stash", flat=True).get(pk=run.pk)
    assert stash is not None
    assert storage.unpack_stash(bytes(stash)).segments
    drawn, total = selectors.budget_children_page(
        session=session, run=run, parent_path="conversation"
    )
    assert total == len(after.turns())
    assert drawn


UPLOADS_FLAGGED = ("dashboard", "0018_upload_packed_original")
UPLOADS_PACKED = ("dashboard", "0019_upload_always_packed")


@pytest.mark.django_db(transaction=True)
def test_uploads_waiting_as_uploaded_are_packed_and_read_by_a_worker(
    migrator: MigrationExecutor, settings: Any
) -> None:
    """A queue of uploads from before every upload was packed: one waiting as uploaded, one a
    worker had packed before it stopped. Both are stored from their bytes afterwards."""
    project = services.project_default()
    files = [
        json.dumps(
            gcengine.generate_session_file(gcengine.SessionShape(turns=4, seed=seed))
        ).encode()
        for seed in (3, 4)
    ]
    apps = apps_at(migrator, UPLOADS_FLAGGED)
    jobs, uploads = (apps.get_model("dashboard", name) for name in ("IngestJob", "IngestUpload"))
    waiting = []
    for number, (data, packed) in enumerate(zip(files, (False, True), strict=True)):
        job = jobs.objects.create(
            project_id=project.pk,
            filename=f"{number}.json",
            sha256=str(number),
            size_bytes=len(data),
        )
        stored = storage.pack_original(data) if packed else data
        uploads.objects.create(job=job, data=stored, packed=packed)
        waiting.append(job.pk)

    apps_at(migrator, UPLOADS_PACKED)
    # The worker reads them through today's code, which knows the tables later migrations add.
    migrator.loader.build_graph()
    migrator.migrate(migrator.loader.graph.leaf_nodes())
    settings.JAATO_INLINE_INGEST_BYTES = 10
    for job_id, data in zip(waiting, files, strict=True):
        background.ingest_job_execute(job_id=job_id)
        job = IngestJob.objects.get(pk=job_id)
        assert job.session is not None, job.error
        assert selectors.session_original(session=job.session) == data

    # Migrating back flags what waits as packed, which it is.
    late = IngestJob.objects.create(project=project, filename="late.json", sha256="x", size_bytes=1)
    IngestUpload.objects.create(job=late, data=storage.pack_original(files[0]))
    apps = apps_at(migrator, UPLOADS_FLAGGED)
    flagged = apps.get_model("dashboard", "IngestUpload").objects.values_list("data", "packed")
    assert [(storage.unpack_original(bytes(data)), packed) for data, packed in flagged] == [
        (files[0], True)
    ]
