"""A session as the dashboard stores it, and read back: the rows an upload (or a session a
run left, or a restore made) is written as, and the sessions read back last, kept in memory.

Shared by every family that writes or reads a stored session: uploads and restores store one,
runs and replays read one back, and a run writes its ledger and budget tree the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, connection, models, transaction
from pydantic_core import to_json

import gcengine
from jaato_web import caches
from jaato_web.dashboard import blobs, storage
from jaato_web.dashboard.models import (
    AgentSession,
    BudgetNode,
    GCRun,
    Project,
    SessionAnchors,
    SessionDocument,
    SessionTurn,
)
from jaato_web.dashboard.services.work import WorkLost

BULK_BATCH = 1000


@transaction.atomic
def session_store(
    project: Project,
    filename: str,
    original: storage.Original,
    digest: str,
    engine: gcengine.Session,
) -> AgentSession:
    """Store a session, and what scoring read of it when it scored the compactions the agent
    made (``session_anchors``). Any other session's anchors are read and stored by its first
    score (the run on upload, when the project runs one): read here, they would hold up
    every upload (a 2 MB session 0.7 s more, a 10,000-turn one 13 s)."""
    budget = engine.budget
    total = budget.total_tokens()
    anchors = gcengine.anchor_cache(engine)
    session = AgentSession.objects.create(
        project=project,
        label=filename[:300],
        sha256=digest,
        size_bytes=original.size,
        source_format=engine.source_format.value,
        format_version=engine.format_version or "",
        model_name=engine.model or "",
        engine_session_id=engine.session_id[:200],
        context_limit=budget.context_limit,
        context_limit_origin=engine.context_limit_origin.value,
        turn_count=0,  # counted as its turns are written, below
        message_count=len(engine.history),
        total_tokens=total,
        locked_tokens=budget.locked_tokens(),
        preservable_tokens=budget.preservable_tokens(),
        eligible_tokens=budget.gc_eligible_tokens(),
        utilization_percent=budget.utilization_percent(),
        token_counter=engine.token_counter,
        drift=storage.drift_record(engine),
        warnings=list(engine.warnings),
        agent_state=storage.agent_state_record(engine, anchors),
    )
    # The turns are written a batch at a time, each before the next is packed, and before the
    # document is: a long session's packed turns and its document are never held together.
    turn_count = 0
    for batch in storage.turn_row_batches(engine):
        rows_insert(SessionTurn, _TURN_COLUMNS, [(session.pk, *_turn_values(r)) for r in batch])
        turn_count += len(batch)
    session.turn_count = turn_count
    AgentSession.objects.filter(pk=session.pk).update(turn_count=turn_count)
    # By the session's id: a document set on the session would stay cached on it, its bytes
    # and all. Its values are written into the row after it (``blobs``), the original copied
    # there in the database when the upload's row holds it.
    SessionDocument.objects.create(session_id=session.pk, original=b"", engine_session=b"")
    values = {"original": original.packed, "engine_session": storage.pack_session(engine)}
    if not blobs.blobs_set(SessionDocument, session.pk, values):
        raise WorkLost  # the upload was cancelled: its bytes are gone
    budget_store(session, None, budget)
    if engine.compactions:
        _anchors_store(session, anchors)
    # What was just read is what a run of it (the default policy, on upload) reads back.
    _sessions.put(_session_key(session), engine)
    return session


# A ``SessionTurn`` row's columns, as ``_turn_values`` gives them after the session's.
_TURN_COLUMNS = (
    "session",
    "position",
    "turn_index",
    "kind",
    "budget_key",
    "budget_label",
    "budget_policy",
    "message_count",
    "tokens",
    "policy",
    "tool_calls",
    "preview",
    "packed",
)


def _turn_values(row: storage.TurnRow) -> tuple[Any, ...]:
    return (
        row.position,
        row.turn_index,
        row.kind,
        row.budget_key[:200],
        row.budget_label[:300],
        row.budget_policy,
        row.message_count,
        row.tokens,
        row.policy,
        row.tool_calls,
        row.preview,
        row.packed,
    )


def budget_store(
    session: AgentSession, run: GCRun | None, budget: gcengine.InstructionBudget
) -> None:
    BudgetNode.objects.bulk_create(
        (
            BudgetNode(
                session=session,
                run=run,
                path=row.path,
                parent_path=row.parent_path,
                position=row.position,
                depth=row.depth,
                key=row.key[:200],
                label=row.label[:300],
                policy=row.policy,
                tokens=row.tokens,
                child_count=row.child_count,
                message_ids=row.message_ids,
            )
            for row in storage.budget_rows(budget)
        ),
        batch_size=BULK_BATCH,
    )


def _preparer(field: models.Field[Any, Any]) -> Callable[[Any], Any]:
    """A column's value as the database takes it. A JSON value is written as JSON text by
    pydantic-core, which every database takes for a JSON column: a run's ledger has a list of
    message ids on each of its 13,000 rows, and ``JSONField.get_db_prep_save`` (``json.dumps``
    through the database's adapter) cost 3 microseconds a row, this a fifth of one."""
    if isinstance(field, models.JSONField):
        assert field.encoder is None, f"{field} has an encoder of its own, which this ignores"
        escape = storage.escape_nul_in if isinstance(field, storage.NulSafeJSONField) else None
        if escape is not None:
            return lambda value: None if value is None else to_json(escape(value)).decode()
        return lambda value: None if value is None else to_json(value).decode()
    return lambda value: field.get_db_prep_save(value, connection)


def rows_insert(
    model: type[models.Model], names: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """Insert plain values as rows of ``model``, one value per name of ``names``.

    A long session is stored as tens of thousands of rows (its turns, a run's ledger), and
    ``bulk_create`` spent most of their time building a model instance for each and preparing
    every value through its field; here only values a column cannot take as they are (JSON,
    bytes, text that may hold NUL) go through their field.
    """
    fields = {field.name: field for field in model._meta.concrete_fields}
    prepared = [
        (number, _preparer(fields[name]))
        for number, name in enumerate(names)
        if isinstance(fields[name], models.JSONField | models.BinaryField | storage.NulSafeText)
    ]
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)} "
        f"({', '.join(quote(str(fields[name].column)) for name in names)}) "
        f"VALUES ({', '.join(['%s'] * len(names))})"
    )

    def row(values: tuple[Any, ...]) -> tuple[Any, ...]:
        if not prepared:
            return values
        ready = list(values)
        for number, prepare in prepared:
            ready[number] = prepare(ready[number])
        return tuple(ready)

    with connection.cursor() as cursor:
        for start in range(0, len(rows), BULK_BATCH):
            cursor.executemany(sql, [row(values) for values in rows[start : start + BULK_BATCH]])


# Sessions read back are kept in memory, by the messages they hold: one 10,000-turn session
# has about 27,000. The one read last always stays, and room is made before a session is read
# (the stored one by its message count, an upload by its size), so a worker reading many large
# sessions holds one at a time, not the last beside the next. Uploads are immutable and the
# engine never changes a session it is handed, so an entry never goes stale; the key holds the
# counter the figures were made with.
SESSION_CACHE_MESSAGES = 30_000
# What a message takes of a file, at least most often (1.7 KB in JAATO's files, several KB in
# Claude Code's): a file's size over this is how many messages reading it may build. Smaller
# messages only leave a session cached a while longer than they would.
FILE_BYTES_PER_MESSAGE = 1000
_sessions: caches.BoundedLRU[tuple[int, str, str], gcengine.Session] = caches.bounded(
    "stored sessions read back",
    SESSION_CACHE_MESSAGES,
    lambda engine: len(engine.history),
    "messages",
)


def _session_key(session: AgentSession) -> tuple[int, str, str]:
    return (session.pk, session.sha256, session.token_counter)


def engine_session_of(
    session: AgentSession, context_limit: int | None = None, compaction_id: str = ""
) -> gcengine.Session:
    """The engine's session as uploaded; against ``context_limit`` tokens when one is given;
    as it stood just before the agent's own compaction ``compaction_id``, when one is named.
    Read from its rows once, then from memory."""
    engine = _sessions.get(_session_key(session))
    if engine is None:
        _sessions.make_room(session.message_count)
        engine = _stored_engine_session(session)
        _sessions.put(_session_key(session), engine)
    if compaction_id:
        engine = gcengine.history_before(engine, compaction_id)
    return gcengine.with_context_limit(engine, context_limit) if context_limit else engine


def session_anchors(session: AgentSession) -> gcengine.AnchorCache:
    """What scoring reads of the session as uploaded (``gcengine.anchor_cache`` of
    ``engine_session_of(session)``), read back from what its upload or its first score
    stored: every score of it (a run, a replay, a preview, a ranking) then reads none of its
    messages' anchors again. Read now and stored when nothing is stored for this extractor
    (the session's first score, or an extractor changed since).

    Not for the session before one of its compactions: that reads another corpus."""
    engine = engine_session_of(session)
    fresh = gcengine.anchor_cache(engine)
    record = (
        SessionAnchors.objects.filter(session=session, extractor=gcengine.extractor_version())
        .values_list("record", flat=True)
        .first()
    )
    if record is not None:
        with gcengine.cyclic_gc_paused():  # as reading the session back (below)
            cache = gcengine.cache_from_record(fresh.messages, storage.unpacked(record))
        if cache is not None:
            return cache
    try:
        with transaction.atomic():
            _anchors_store(session, fresh)
    except IntegrityError:
        pass  # another worker stored them meanwhile, as these
    return fresh


def session_replay_scorer(
    session: AgentSession, engine: gcengine.Session, anchors: gcengine.AnchorCache | None = None
) -> gcengine.AnchorScorer:
    """``gcengine.replay_scorer`` of ``engine`` (the session, against any window; not before
    a compaction), reading what ``session_anchors`` stored (``anchors``, when the caller has
    read them back already) when that is what a replay reads: a replay's corpus leaves out
    what sub-agents said, which the stored anchors count as said."""
    if engine.subagents:
        return gcengine.replay_scorer(engine)
    return gcengine.replay_scorer(engine, anchors or session_anchors(session))


def _anchors_store(session: AgentSession, cache: gcengine.AnchorCache) -> None:
    """Store what ``cache`` reads of the session (reading it all now), replacing what an
    earlier extractor stored."""
    SessionAnchors.objects.update_or_create(
        session=session,
        defaults={
            "extractor": gcengine.extractor_version(),
            "record": storage.packed(_read_all(cache)),
        },
    )


def _read_all(cache: gcengine.AnchorCache) -> dict[str, object]:
    """``gcengine.anchors_record`` of ``cache``, the cycle collector paused while it reads
    (hundreds of thousands of objects on a long session, none in a cycle)."""
    with gcengine.cyclic_gc_paused():
        return gcengine.anchors_record(cache)


def _stored_engine_session(session: AgentSession) -> gcengine.Session:
    """The session as stored: its document and its turn rows, read back without counting.

    With the cycle collector paused, in a web process too: reading a 10,000-turn session
    back makes about 500,000 objects, none of them in a cycle, and the collections they set
    off walked every object of the process, which nearly doubled the reading (0.36 s paused,
    0.66 s not). Other requests go on meanwhile; the next full collection collects their cycles.
    The session read back goes to the collector's oldest generation as the pause ends
    (``cyclic_gc_paused``): walked as young objects, it cost a web request 0.12 s more.
    """
    document = SessionDocument.objects.values_list("engine_session", flat=True).get(session=session)
    turns = storage.unpack_turns(
        SessionTurn.objects.filter(session=session)
        .order_by("position")
        .values_list("packed", flat=True)
        .iterator(chunk_size=2000)
    )
    with gcengine.cyclic_gc_paused():
        return storage.unpack_session(document, turns)


def session_after_of(run: GCRun) -> gcengine.Session | None:
    """The session as the run left it (None before it finished), for exports."""
    packed = GCRun.objects.filter(pk=run.pk).values_list("session_after", flat=True).first()
    if packed is None:
        return None
    before = engine_session_of(run.session, run.context_limit, run.compaction_id)
    return storage.unpack_session_after(packed, before)


def room_for_upload(size_bytes: int) -> None:
    """Make room for the session an upload of ``size_bytes`` is about to be read into."""
    _sessions.make_room(size_bytes // FILE_BYTES_PER_MESSAGE)
