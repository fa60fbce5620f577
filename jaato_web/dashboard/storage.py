"""Engine values turned into what the dashboard stores, and read back.

A session is stored flat, once, when it is uploaded (and a run's results when it finishes), so
pages page through rows instead of walking a 26,000-leaf tree per request. Its history is kept
once, turn by turn: one ``SessionTurn`` row per turn holds each of that turn's messages' figure
and the messages as pydantic writes them, compressed (``turn_row_batches``); the history view is
made from a page of them (``StoredMessage``), and reopening the session validates them straight
from their bytes and counts nothing again (``gcengine.session_from_record``). The budget tree is
stored as ``BudgetNode`` rows only above the turns: the conversation's turns and messages are
drawn from the turn rows that already hold them, and a run's turns from the session's, except
the few it changed (``after_turns``). A replay is stored as compact step tuples. Writers (the
services) and readers (the presenters) share these shapes, so a field renamed on one side is a
type error on the other.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import batched
from typing import Any, TypedDict

import zstandard
from pydantic import TypeAdapter
from pydantic_core import from_json

import gcengine
from jaato_web.dashboard.blobs import StoredBlob

_SESSION_JSON = TypeAdapter(gcengine.Session)
PREVIEW_CHARS = 200
# Tool arguments and results can be megabytes; the history view shows the start and says so.
PART_TEXT_CHARS = 4000


class StoredPart(TypedDict):
    """One part of a stored message, as the history view shows it."""

    type: str
    title: str
    text: str
    clipped: bool
    length: int


class StoredMessage(TypedDict):
    """One message of a ``SessionTurn.messages`` list, as the history view shows it."""

    id: str
    role: str
    kind: str
    tokens: int
    policy: str
    counted_by: str
    label: str
    parts: list[StoredPart]
    metadata: dict[str, Any]


# Stored turns, documents and originals are compressed with Zstandard at its fastest level.
# The history's text is most of a session, and every run and replay reads it back: zstd keeps
# a third of it at any level, like zlib's fastest level did, but packs it twice as fast and
# reads it back nearly three times as fast (a 10,000-turn session's 39 MB of turns: 0.06 s
# instead of 0.14 s). Its default level (3) kept 0.4 % less of the turns and 9 % less of an
# original (12.5 MB of a 45.5 MB upload, 13.7 MB at 1) but took a quarter longer to pack
# (0.18 s and 0.155 s instead of 0.14 s and 0.12 s), which every upload waits for.
PACK_LEVEL = 1


class _Codecs(threading.local):
    """A compressor and a decompressor per thread: a zstd context is not safe to share
    between threads, and making one per value cost as much as the packing itself."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=PACK_LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_codecs = _Codecs()


@dataclass(frozen=True)
class NodeRow:
    path: str
    parent_path: str
    position: int
    depth: int
    key: str
    label: str
    policy: str
    tokens: int
    child_count: int
    message_ids: list[str]


CONVERSATION = gcengine.InstructionSource.CONVERSATION.value


def budget_rows(budget: gcengine.InstructionBudget) -> list[NodeRow]:
    """Every node of the tree above the conversation's turns, parents before children, figures
    computed bottom-up once; the turns and their messages are the turn rows'."""
    rows: list[NodeRow] = []
    for position, (source, entry) in enumerate(budget.entries.items()):
        _flatten(entry, source.value, "", position, 0, rows)
    return rows


def _flatten(
    entry: gcengine.SourceEntry,
    key: str,
    parent_path: str,
    position: int,
    depth: int,
    rows: list[NodeRow] | None,
) -> tuple[int, str]:
    """Add the rows of ``entry`` and its descendants to ``rows`` (the conversation's children
    are only added up: ``rows`` is None below it); its tokens and policy."""
    path = f"{parent_path}/{key}" if parent_path else key
    slot = -1
    if rows is not None:
        slot = len(rows)
        rows.append(NodeRow(path, parent_path, position, depth, key, "", "", 0, 0, []))
    if entry.children:
        below = None if path == CONVERSATION else rows
        tokens = 0
        policies: set[str] = set()
        for child_position, (child_key, child) in enumerate(entry.children.items()):
            child_tokens, child_policy = _flatten(
                child, child_key, path, child_position, depth + 1, below
            )
            tokens += child_tokens
            policies.add(child_policy)
        policy = policies.pop() if len(policies) == 1 else gcengine.GCPolicy.PARTIAL.value
    else:
        tokens, policy = entry.tokens, entry.gc_policy.value
    if rows is not None:
        rows[slot] = NodeRow(
            path=path,
            parent_path=parent_path,
            position=position,
            depth=depth,
            key=key,
            label=entry.label or key,
            policy=policy,
            tokens=tokens,
            child_count=len(entry.children),
            message_ids=list(entry.message_ids),
        )
    return tokens, policy


@dataclass(frozen=True)
class TurnRow:
    position: int
    turn_index: int | None
    kind: str
    budget_key: str
    budget_label: str
    budget_policy: str
    message_count: int
    tokens: int
    policy: str
    tool_calls: int
    preview: str
    packed: bytes


TurnFields = tuple[int, int | None, str, str, str, str, int, int, str, int, str]
"""A ``TurnRow``'s fields but ``packed``, in order."""

MessageFigure = tuple[int, str, str, str]
"""A message's tokens, policy, what made the figure, and its label in the budget tree."""


def message_figures(budget: gcengine.InstructionBudget) -> dict[str, MessageFigure]:
    """Per message: tokens, policy, how the figure was made and its label, from budget leaves."""
    conversation = budget.get_entry(gcengine.InstructionSource.CONVERSATION)
    figures: dict[str, MessageFigure] = {}
    if conversation is None:
        return figures
    stack = [conversation]
    while stack:
        entry = stack.pop()
        if entry.children:
            stack.extend(entry.children.values())
        elif len(entry.message_ids) == 1:
            counted_by = str(entry.metadata.get("counted_by", ""))
            figures[entry.message_ids[0]] = (
                entry.tokens,
                entry.gc_policy.value,
                counted_by,
                entry.label or "",
            )
    return figures


def clipped(text: str, limit: int = PART_TEXT_CHARS) -> tuple[str, bool]:
    """The start of a long text and whether it was cut."""
    return (text, False) if len(text) <= limit else (text[:limit], True)


def preview_of(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The start of a text on one line: its first ``limit`` characters once every run of
    whitespace is one space. Only as much of the text is read as that takes (splitting a
    49 MB pasted log into its words made a list of 8 million, 480 MB): the start of a text,
    its whitespace made single, is the start of the whole text's."""
    start = text[:limit]
    # Most texts begin with words between single spaces: then the start is already on one
    # line. A printable string holds no whitespace but the plain space, and a start that
    # neither begins nor ends with one, nor holds two together, is what joining its words
    # gives (a tenth of the time, which every turn of an upload pays).
    if start.isprintable() and start[:1] != " " and start[-1:] != " " and "  " not in start:
        return start
    head = 2 * limit
    while True:
        words = " ".join(text[:head].split())
        if len(words) >= limit or head >= len(text):
            return words[:limit]
        head *= 4


def part_row(part: gcengine.Part) -> StoredPart:
    """A part as the history view shows it: its kind, a readable body, and whether it is cut."""
    kind = part.type.value
    if part.function_call is not None:
        body = pretty_json(part.function_call.args)
        title = part.function_call.name
    elif part.function_response is not None:
        body = pretty_json(part.function_response.result)
        title = part.function_response.name
    elif part.inline_data is not None:
        body = f"{part.inline_data.mime_type}, {len(part.inline_data.data):,} characters of data"
        title = "media"
    elif part.opaque is not None:
        body = pretty_json(part.opaque.data)
        title = part.opaque.kind
    else:
        body = part.text or ""
        title = ""
    text, cut = clipped(body)
    return {"type": kind, "title": title, "text": text, "clipped": cut, "length": len(body)}


def pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=1, default=str)
    except (TypeError, ValueError):
        return repr(value)


def packed(value: Any) -> bytes:
    """A JSON value as stored: compact JSON, compressed."""
    return _compress(_json_bytes(value))


# Large data is compressed into chunks of this size (compressing the whole at once reserves an
# output as large as the input), read in pieces eight times as large: each piece is a hand-over
# of the GIL, and beside a thread busy in Python each hand-over waits.
_COMPRESS_SLICE = 1 << 20
_COMPRESS_PIECE = 8 * _COMPRESS_SLICE


def _compress(*parts: bytes) -> bytes:
    """The parts, joined, compressed, with the size in the frame (so reading it back reserves
    exactly the room it needs); never joined uncompressed."""
    compressor = _codecs.compressor
    size = sum(map(len, parts))
    if len(parts) == 1 and size <= _COMPRESS_SLICE:
        # zstd's result keeps the room of the worst case (more than the input) after it is
        # written; a copy holds only what was written, so a 10,000-turn session's packed turns
        # take 16 MB while it is stored, not 40.
        return bytes(memoryview(compressor.compress(parts[0])))
    # A chunker, not ``compressobj``: for a 45 MB file beside a thread busy in Python,
    # ``compressobj`` took 0.8 s, the chunker 0.36 s (0.15 s alone).
    packer = compressor.chunker(size=size, chunk_size=_COMPRESS_SLICE)
    written: list[bytes] = []
    for part in parts:
        view = memoryview(part)
        for i in range(0, len(view), _COMPRESS_PIECE):
            written += packer.compress(view[i : i + _COMPRESS_PIECE])
    written += packer.finish()  # type: ignore[no-untyped-call]  # untyped in zstandard's stubs
    return b"".join(written)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _compressed(texts: list[bytes]) -> list[bytes]:
    """``_compress`` of each text; those up to a megabyte in one call to zstd, which lets go
    of the GIL until all of them are done (a call each took the GIL back after each text,
    and beside a thread busy in Python each hand-over waits)."""
    small: list[bytes | bytearray | memoryview] = [t for t in texts if len(t) <= _COMPRESS_SLICE]
    written: list[bytes] = []
    if small:
        buffers = _codecs.compressor.multi_compress_to_buffer(small)
        # Copied out of zstd's shared buffer, which holds room for the worst case.
        written = [buffers[number].tobytes() for number in range(len(buffers))]
    ready = iter(written)
    return [_compress(text) if len(text) > _COMPRESS_SLICE else next(ready) for text in texts]


def decompressed(data: bytes | memoryview) -> bytes:
    """The bytes a stored value packs (whatever it holds: JSON, or an original as uploaded)."""
    return _codecs.decompressor.decompress(data)


def unpacked(data: bytes | memoryview) -> Any:
    """A value ``packed`` stored, read by pydantic-core's JSON reader (twice as fast as
    Python's on a session's 10 MB document): what was written is JSON this product wrote."""
    return from_json(decompressed(data))


def pack_original(data: bytes) -> bytes:
    """The bytes as uploaded, as stored: compressed (a 10,000-turn session: 45.5 MB -> about
    13.7 MB), and given back exactly by ``unpack_original``.

    On the request's thread alone: zstd's multi-threaded context packed a 45 MB file in half
    the time (0.08 s), but kept 51 MB of buffers after, for as long as its thread lived."""
    return _compress(data)


def unpack_original(stored: bytes | memoryview) -> bytes:
    return decompressed(stored)


@dataclass(frozen=True)
class Original:
    """An uploaded file as its session keeps it: its size, and its bytes packed (or where the
    database holds them packed, to copy them there)."""

    size: int
    packed: bytes | StoredBlob


def original_of(data: bytes) -> Original:
    return Original(len(data), pack_original(data))


def turn_figures(
    session: gcengine.Session, turns: list[gcengine.Turn]
) -> list[list[MessageFigure]]:
    """Each turn's messages' figures (``turns`` are the session's), in history order: read
    from the budget's turn entries when they line up with the turns (as the builder makes
    them), else by message id."""
    conversation = session.budget.get_entry(gcengine.InstructionSource.CONVERSATION)
    entries = list(conversation.children.values()) if conversation is not None else []
    if len(entries) == len(turns) and all(
        entry.message_ids == turn.message_ids for entry, turn in zip(entries, turns, strict=True)
    ):
        return [
            [
                (
                    leaf.tokens,
                    _POLICY_VALUES[leaf.gc_policy],
                    str(leaf.metadata.get("counted_by", "")),
                    leaf.label or "",
                )
                for leaf in entry.children.values()
            ]
            if len(entry.children) == len(turn.messages)
            else [_figure_of(session, message) for message in turn.messages]
            for entry, turn in zip(entries, turns, strict=True)
        ]
    by_id = message_figures(session.budget)
    return [
        [by_id.get(message.message_id) or _figure_of(session, message) for message in turn.messages]
        for turn in turns
    ]


def _figure_of(session: gcengine.Session, message: gcengine.Message) -> MessageFigure:
    """The figure of a message the budget does not name (a bare snapshot's history)."""
    counter = gcengine.counter_by_name(session.token_counter)
    return (
        gcengine.count_message(message, counter),
        gcengine.GCPolicy.EPHEMERAL.value,
        counter.name,
        "",
    )


# A turn as stored: its figures and its messages as pydantic writes them, so reading validates
# straight from the bytes (pydantic-core builds the models, far faster than Python can).
_TURN = TypeAdapter(tuple[list[MessageFigure], list[gcengine.Message]])


def _turn_json(messages: list[gcengine.Message], figures: list[MessageFigure]) -> bytes:
    """A turn as ``SessionTurn.packed`` holds it, before it is compressed: ``[figures,
    messages]`` as JSON, defaults left out."""
    return _TURN.dump_json((figures, messages), exclude_defaults=True)


# Turns are packed this many at a time (``turn_row_batches``): their JSON is written, then
# compressed on another thread while the next batch's is written.
_TURNS_PACKED_TOGETHER = 500


def unpack_turn(data: bytes | memoryview) -> tuple[list[gcengine.Message], list[MessageFigure]]:
    return _turn_read(decompressed(data))


def _turn_read(text: bytes) -> tuple[list[gcengine.Message], list[MessageFigure]]:
    figures, messages = _TURN.validate_json(text)
    return messages, figures


# Stored turns are read back this many at a time (``unpack_turns``).
_TURNS_UNPACKED_TOGETHER = 1000


def unpack_turns(
    packed: Iterable[bytes | memoryview],
) -> Iterator[tuple[list[gcengine.Message], list[MessageFigure]]]:
    """``unpack_turn`` of each value, in order, read as they come (a database's rows): a
    batch is decompressed on another thread, in one call to zstd that lets go of the GIL,
    while the one before is validated here (reopening a 10,000-turn session: 39 MB)."""
    with ThreadPoolExecutor(1, thread_name_prefix="unpack-turns") as unpacker:
        pending: Future[list[bytes]] | None = None
        for batch in batched(packed, _TURNS_UNPACKED_TOGETHER):
            unpacking = unpacker.submit(_decompressed_all, batch)
            if pending is not None:
                yield from map(_turn_read, pending.result())
            pending = unpacking
        if pending is not None:
            yield from map(_turn_read, pending.result())


def _decompressed_all(packed: tuple[bytes | memoryview, ...]) -> list[bytes]:
    """``decompressed`` of each value, in one call to zstd (values ``_compress`` wrote carry
    their size, which that call needs)."""
    buffers = _codecs.decompressor.multi_decompress_to_buffer(list(packed))
    return [buffers[number].tobytes() for number in range(len(buffers))]


def turn_rows(session: gcengine.Session) -> list[TurnRow]:
    """Every row of ``turn_row_batches``, in order."""
    return [row for batch in turn_row_batches(session) for row in batch]


def turn_row_batches(session: gcengine.Session) -> Iterator[list[TurnRow]]:
    """The history, turn by turn, each message with its figure from the budget, and the turn
    as the budget tree shows it, a batch of turns at a time. Each turn's JSON (``_turn_json``)
    is compressed on its own; a batch is compressed on another thread while the next one is
    made (zstd lets go of the GIL), and given once that one is made, so a store writes it
    meanwhile too. A store that writes each batch before asking for the next never holds a
    long session's packed turns all at once (16 MB for 10,000 turns, beside the session)."""
    with ThreadPoolExecutor(1, thread_name_prefix="pack-turns") as packer:
        pending: tuple[list[TurnFields], Future[list[bytes]]] | None = None
        for batch, texts in _turn_batches(session):
            packing = packer.submit(_compressed, texts)
            if pending is not None:
                yield _packed_rows(*pending)
            pending = batch, packing
        if pending is not None:
            yield _packed_rows(*pending)


def _turn_batches(
    session: gcengine.Session,
) -> Iterator[tuple[list[TurnFields], list[bytes]]]:
    """Each turn's ``TurnFields`` and JSON, ``_TURNS_PACKED_TOGETHER`` turns at a time."""
    turns = session.turns()
    batch: list[TurnFields] = []
    texts: list[bytes] = []
    for position, (turn, figures) in enumerate(
        zip(turns, turn_figures(session, turns), strict=True)
    ):
        first_text = next((text for m in turn.messages if (text := m.text)), "")
        policies = {figure[1] for figure in figures}
        shared = next(iter(policies)) if len(policies) == 1 else None  # most turns: ephemeral
        kind = turn.kind
        batch.append(
            (
                position,
                turn.index,
                _KIND_VALUES[kind],
                gcengine.turn_key_of(turn.index, turn.messages[0]),
                gcengine.turn_name(turn.index, kind),
                shared or _PARTIAL,
                len(turn.messages),
                sum([figure[0] for figure in figures]),
                shared or _POLICY_VALUES[gcengine.most_protective(policies)],
                sum([len(m.function_calls) for m in turn.messages]),
                preview_of(first_text),
            )
        )
        texts.append(_turn_json(turn.messages, figures))
        if len(texts) == _TURNS_PACKED_TOGETHER:
            yield batch, texts
            batch, texts = [], []
    if batch:
        yield batch, texts


# Enum values by member, for loops over every turn or message: a dict read costs a fraction
# of ``.value``.
_POLICY_VALUES = {policy: policy.value for policy in gcengine.GCPolicy}
_KIND_VALUES = {kind: kind.value for kind in gcengine.MessageKind}
_PARTIAL = gcengine.GCPolicy.PARTIAL.value


def _packed_rows(batch: list[TurnFields], packing: Future[list[bytes]]) -> list[TurnRow]:
    """The rows with their packed turns."""
    return [
        TurnRow(*fields, packed=data) for fields, data in zip(batch, packing.result(), strict=True)
    ]


def message_views(
    messages: list[gcengine.Message], figures: list[MessageFigure]
) -> list[StoredMessage]:
    """A turn's messages as the history view shows them."""
    return [
        {
            "id": message.message_id,
            "role": message.role.value,
            "kind": message.kind.value,
            "tokens": tokens,
            "policy": policy,
            "counted_by": counted_by,
            "label": label,
            "parts": [part_row(p) for p in message.parts],
            "metadata": message.metadata if message.kind is not gcengine.MessageKind.CHAT else {},
        }
        for message, (tokens, policy, counted_by, label) in zip(messages, figures, strict=True)
    ]


# In a replay's series each collection keeps its figures, not the anchors it lost.
_FIGURES_ONLY: Any = {"classes": {"__all__": {"lost"}}, "invented": {"examples"}}


def retention_record(retention: gcengine.AnchorRetention) -> dict[str, Any]:
    """How a run or an agent's compaction stores its score: all of it, with what it lost."""
    return retention.model_dump(mode="json")


def retention_figures(retention: gcengine.AnchorRetention) -> dict[str, Any]:
    """How a replay stores a collection's score: the figures, without the anchors."""
    return retention.model_dump(mode="json", exclude=_FIGURES_ONLY)


def retention_read(record: dict[str, Any] | None) -> gcengine.AnchorRetention | None:
    return None if record is None else gcengine.AnchorRetention.model_validate(record)


def _requests(requests: list[gcengine.PromptRequest]) -> list[list[int | None]]:
    return [[r.turn_index, r.tokens, r.shared_prefix_tokens] for r in requests]


def requests_read(rows: list[list[Any]]) -> list[gcengine.PromptRequest]:
    return [
        gcengine.PromptRequest(turn_index=turn, tokens=tokens, shared_prefix_tokens=shared)
        for turn, tokens, shared in rows
    ]


def replay_series(
    simulation: gcengine.Simulation, without_gc: list[gcengine.PromptRequest], *, scored: bool
) -> dict[str, Any]:
    """A replay as stored: compact step tuples (a 10,000-turn replay has 20,000 steps), each
    request as [turn index, tokens, tokens shared with the request before], the same replay's
    requests without GC, and when ``scored`` each collection's anchor retention (None for a
    collection that failed). A series not scored has no ``retention`` in its events."""
    return {
        "plugin": simulation.plugin,
        "context_limit": simulation.context_limit,
        "threshold_percent": simulation.threshold_percent,
        "target_percent": simulation.target_percent,
        "pressure_percent": simulation.pressure_percent,
        "continuous_mode": simulation.continuous_mode,
        "steps": [
            [s.turn_index, s.point, s.tokens_before, s.tokens_after] for s in simulation.steps
        ],
        "events": [
            {
                "turn_index": e.turn_index,
                "point": e.point,
                "reason": e.reason.value,
                "success": e.result.success,
                "items": e.result.items_collected,
                "tokens_before": e.result.tokens_before,
                "tokens_after": e.result.tokens_after,
                "error": e.result.error,
                **(
                    {"retention": retention_figures(e.retention) if e.retention else None}
                    if scored
                    else {}
                ),
            }
            for e in simulation.events
        ],
        "requests": _requests(simulation.requests),
        "requests_without_gc": _requests(without_gc),
    }


# 3: the user inputs the history holds are recorded as their places in it
# (``gcengine.UserInputRecord``); documents of format 2 hold them as text, and read alike.
DOCUMENT_FORMAT = 3


def pack_session(session: gcengine.Session) -> bytes:
    """A session's document as stored beside its turn rows: everything but the history, which
    the turn rows hold."""
    # ``{"format": ..., "session": record}``, the record written as JSON by pydantic-core and
    # compressed without being joined: a 10,000-turn session's record is 10 MB of JSON.
    head = b'{"format":%d,"session":' % DOCUMENT_FORMAT
    return _compress(head, gcengine.session_record_json(session), b"}")


def unpack_session(
    document: bytes | memoryview,
    turns: Iterable[tuple[list[gcengine.Message], list[MessageFigure]]],
) -> gcengine.Session:
    """The session ``pack_session`` and the turn rows hold (each turn's messages and figures,
    in order), read back without counting."""
    stored = unpacked(document)
    history: list[gcengine.Message] = []
    figures: list[tuple[int, str]] = []
    for messages, turn_figures in turns:
        history += messages
        figures += [(tokens, counted_by) for tokens, _, counted_by, _ in turn_figures]
    return gcengine.session_from_record(stored["session"], history, figures)


def pack_session_after(after: gcengine.Session, before: gcengine.Session) -> bytes:
    """A run's collected session as stored: its history as positions in the session before
    (each message it kept) or records (what it inserted), with every message's figure; the
    rest of the session only where the run changed it (a run changes the history alone, and
    the rest of a long session is megabytes: the agent's inputs and accounting)."""
    position = {id(message): number for number, message in enumerate(before.history)}
    history = [
        position[id(message)] if id(message) in position else gcengine.message_records([message])[0]
        for message in after.history
    ]
    stored: dict[str, Any] = {
        "format": DOCUMENT_FORMAT,
        "history": history,
        "figures": gcengine.budget_figures(after),
    }
    if not gcengine.same_record(after, before):
        stored["session"] = gcengine.session_record(after)
    return packed(stored)


def unpack_session_after(data: bytes | memoryview, before: gcengine.Session) -> gcengine.Session:
    """The collected session ``pack_session_after`` stored, with the session the run started
    from (read back the same way the run read it)."""
    stored = unpacked(data)
    history = [
        before.history[item] if isinstance(item, int) else gcengine.messages_from_records([item])[0]
        for item in stored["history"]
    ]
    figures = [(int(tokens), str(counted_by)) for tokens, counted_by in stored["figures"]]
    if "session" in stored:  # the run changed more than the history
        return gcengine.session_from_record(stored["session"], history, figures)
    return gcengine.session_with_history(before, history, figures)


AfterTurn = int | list[Any]
"""A turn of a run's collected session: the position of a session turn it kept whole, or the
turn itself: ``[key, label, policy, tokens, [[message id, label, policy, tokens], ...]]``."""


def after_turns(
    before: gcengine.InstructionBudget, after: gcengine.InstructionBudget
) -> list[AfterTurn]:
    """The conversation a run left, turn by turn, as ``GCRun.after_turns`` keeps it: the
    turns it left alone by their position in the session (they are the budget before's very
    entries, or equal to them), the rest written out."""
    old = before.get_entry(gcengine.InstructionSource.CONVERSATION)
    new = after.get_entry(gcengine.InstructionSource.CONVERSATION)
    old_children = old.children if old is not None else {}
    position = {key: number for number, key in enumerate(old_children)}
    turns: list[AfterTurn] = []
    for key, entry in (new.children if new is not None else {}).items():
        kept = old_children.get(key)
        if kept is not None and (kept is entry or kept == entry):
            turns.append(position[key])
            continue
        leaves = [
            [
                leaf_key,
                leaf.label or leaf_key,
                leaf.effective_gc_policy().value,
                leaf.total_tokens(),
            ]
            for leaf_key, leaf in entry.children.items()
        ]
        turns.append(
            [
                key,
                entry.label or key,
                entry.effective_gc_policy().value,
                entry.total_tokens(),
                leaves,
            ]
        )
    return turns


def pack_stash(stash: gcengine.Stash) -> bytes:
    """A run's stash as stored: JSON, compressed, like the session it came from."""
    return _compress(stash.model_dump_json().encode())


def unpack_stash(packed: bytes) -> gcengine.Stash:
    return gcengine.Stash.model_validate_json(decompressed(packed))


# The largest differences are what a reader acts on; the rest is a count.
DRIFT_MESSAGES_SHOWN = 20


def drift_record(engine: gcengine.Session) -> dict[str, Any]:
    """Recorded against counted figures, as ``AgentSession.drift`` keeps them."""
    drift = gcengine.token_drift(engine)
    largest = sorted(drift.messages, key=lambda m: abs(m.counted - m.recorded), reverse=True)
    return {
        "counter": drift.counter,
        "figures": figure_sources(engine),
        "compared_messages": len(drift.messages),
        "recorded_total": drift.recorded_total,
        "counted_total": drift.counted_total,
        "difference": drift.difference,
        "difference_percent": drift.difference_percent,
        "provider_prompt_tokens": drift.provider_prompt_tokens,
        "counted_context_tokens": drift.counted_context_tokens,
        "largest": [
            {
                "message_id": m.message_id,
                "label": m.label,
                "recorded": m.recorded,
                "counted": m.counted,
            }
            for m in largest[:DRIFT_MESSAGES_SHOWN]
            if m.counted != m.recorded
        ],
    }


def figure_sources(engine: gcengine.Session) -> dict[str, Any]:
    """Where the session's figures came from, as the session page explains them: each entry's
    tokens (a message, a system instruction, a tool schema...) were either recorded by the
    agent in the file, or counted here with the session's counter. The two add up to the
    session's total (earlier reasoning, not sent to the model, is left out of both)."""
    recorded = counted = recorded_tokens = counted_tokens = 0
    recorded_other = counted_other = 0
    for source, entry in engine.budget.entries.items():
        if source is gcengine.InstructionSource.THINKING:
            continue
        is_message = source is gcengine.InstructionSource.CONVERSATION
        for tokens, made_by in entry.leaf_figures():
            if not tokens and not is_message:
                continue
            if made_by is None or made_by == "recorded":
                recorded_tokens += tokens
                recorded, recorded_other = (
                    (recorded + 1, recorded_other) if is_message else (recorded, recorded_other + 1)
                )
            else:
                counted_tokens += tokens
                counted, counted_other = (
                    (counted + 1, counted_other) if is_message else (counted, counted_other + 1)
                )
    # The counter's shortcomings matter only for the figures it made.
    counting = engine.token_counting if counted else None
    accounting = engine.turn_accounting
    return {
        "snapshot": engine.source_format is gcengine.SourceFormat.JAATO_BUDGET_SNAPSHOT,
        "recorded_messages": recorded,
        "recorded_tokens": recorded_tokens,
        "counted_messages": counted,
        "counted_tokens": counted_tokens,
        "recorded_other": recorded_other,
        "counted_other": counted_other,
        "exact": counting.exact if counting else True,
        "notes": list(counting.notes) if counting else [],
        "turn_accounting": {
            "turns": len(accounting),
            "prompt": sum(t.prompt for t in accounting),
            "output": sum(t.output for t in accounting),
        },
        "recorded_calls": len(engine.recorded_usage),
    }


# A session's state lists are shown in full up to these lengths; the rest is a count.
STATE_ITEMS_SHOWN = 100
STATE_TEXT_CHARS = 600


class StoredAgentState(TypedDict):
    """What the agent's own record says beyond the conversation, as ``AgentSession.agent_state``
    keeps it for the session page and the API."""

    interrupted: dict[str, Any] | None
    subagents: list[dict[str, Any]]
    plugin_states: list[dict[str, str]]
    failed_tool_results: list[dict[str, Any]]
    failed_tool_result_count: int
    compactions: list[dict[str, Any]]
    tool_pair_problems: list[dict[str, Any]]
    tool_pair_problem_count: int
    usage: list[list[int]]


def _turn_of(message: gcengine.Message) -> int | None:
    return gcengine.turn_number(message.turn_index) if message.turn_index is not None else None


def agent_state_record(engine: gcengine.Session) -> StoredAgentState:
    """The state a page can show without the engine: an interrupted turn and the calls it left
    waiting, sub-agents, plugin states, failed tool results, the compactions the agent itself
    performed, and tool calls and results that lost their other half."""
    interrupted = engine.interrupted_turn
    failed = [
        (message, response)
        for message in engine.history
        for response in message.function_responses
        if response.is_error
    ]
    problems = gcengine.tool_pair_report(engine)
    scores = gcengine.score_observed_compactions(engine) if engine.compactions else {}
    return {
        "interrupted": None
        if interrupted is None
        else {
            "user_prompt": clipped(interrupted.user_prompt, STATE_TEXT_CHARS)[0],
            "started_at": interrupted.started_at,
            "pending_calls": [
                {
                    "id": call.id,
                    "name": call.name,
                    "args": clipped(pretty_json(call.args), STATE_TEXT_CHARS)[0],
                }
                for call in interrupted.pending_tool_calls[:STATE_ITEMS_SHOWN]
            ],
        },
        "subagents": [
            *(
                {
                    "agent_id": record.agent_id or "",
                    "profile": record.profile_name or "",
                    "status": record.status or "",
                    "turns": record.turn_count,
                    "messages": None,
                    "compaction": False,
                }
                for record in engine.subagent_records[:STATE_ITEMS_SHOWN]
            ),
            *(
                {
                    "agent_id": agent.agent_id,
                    "profile": "",
                    "status": "",
                    "turns": None,
                    "messages": len(agent.history),
                    "compaction": agent.is_compaction,
                }
                for agent in engine.subagents[:STATE_ITEMS_SHOWN]
            ),
        ],
        "plugin_states": [
            {"plugin": name, "state": clipped(pretty_json(state), STATE_TEXT_CHARS)[0]}
            for name, state in list(engine.plugin_states.items())[:STATE_ITEMS_SHOWN]
        ],
        # Only those shown are written out: a long session can fail thousands of calls.
        "failed_tool_results": [
            {
                "turn": _turn_of(message),
                "message_id": message.message_id,
                "tool": response.name,
                "text": clipped(pretty_json(response.result), STATE_TEXT_CHARS)[0],
            }
            for message, response in failed[:STATE_ITEMS_SHOWN]
        ],
        "failed_tool_result_count": len(failed),
        "compactions": [
            {
                "id": compaction.compaction_id,
                "at": compaction.at,
                "trigger": compaction.trigger,
                "tokens_before": compaction.tokens_before,
                "tokens_after": compaction.tokens_after,
                "summary": compaction.summary,
                "before_turn": gcengine.turn_number(compaction.before_turn)
                if compaction.before_turn is not None
                else None,
                "replaced": compaction.replaced_count,
                "retention": retention_record(scores[compaction.compaction_id]),
            }
            for compaction in engine.compactions[:STATE_ITEMS_SHOWN]
        ],
        "tool_pair_problems": [
            {
                "kind": problem.kind.value,
                "call_id": problem.call_id,
                "tool": problem.tool_name,
                "message_id": problem.message_id,
                "turn": gcengine.turn_number(problem.turn) if problem.turn is not None else None,
                "agent_id": problem.agent_id,
            }
            for problem in problems[:STATE_ITEMS_SHOWN]
        ],
        "tool_pair_problem_count": len(problems),
        "usage": recorded_usage_curve(engine),
    }


# The agent's recorded usage is drawn, not listed: more points than a chart has pixels only
# cost storage, and each bucket keeps its lowest and highest call so no drop or peak is lost.
USAGE_POINTS = 2000


def recorded_usage_curve(engine: gcengine.Session) -> list[list[int]]:
    """The context size each model call reported, as [turn number, prompt tokens] in call
    order: the session's real usage curve, compactions included (the file's own figures)."""
    turn_of = {m.message_id: m.turn_index for m in engine.history}
    for compaction in engine.compactions:
        turn_of.update((m.message_id, m.turn_index) for m in compaction.replaced)
    points = [
        [gcengine.turn_number(turn), usage.prompt_tokens]
        for usage in engine.recorded_usage
        if (turn := turn_of.get(usage.message_id or "")) is not None
    ]
    if len(points) <= USAGE_POINTS:
        return points
    bucket = -(-len(points) // (USAGE_POINTS // 2))
    kept: list[list[int]] = []
    for start in range(0, len(points), bucket):
        chunk = points[start : start + bucket]
        low = min(range(len(chunk)), key=lambda i: chunk[i][1])
        high = max(range(len(chunk)), key=lambda i: chunk[i][1])
        kept.extend(chunk[i] for i in sorted({low, high}))
    return kept
