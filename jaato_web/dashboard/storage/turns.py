"""The history as it is stored, turn by turn: one ``SessionTurn`` row per turn, holding each
of its messages' figure and the messages as pydantic writes them, compressed; and a page of
those messages as the history view shows them (``StoredMessage``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import batched
from typing import Any, TypedDict

from pydantic import ConfigDict, TypeAdapter

import gcengine
from jaato_web.dashboard.storage.packing import compressed_each, decompressed, decompressed_each

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
# straight from the bytes (pydantic-core builds the models, far faster than Python can: built
# from the parsed JSON with ``construct``, a 10,000-turn session's messages took half as long
# again). Only the keys of what it reads are looked up in pydantic-core's cache of short
# strings, not every value: each value looked up is a hash and a probe, and most (message and
# call ids) are read once. Validating that session's turns took a fifth less (0.11 s, not 0.135
# s of CPU at load 6), for 4 % more memory (90 MB, not 86: tool names held once per call).
_TURN = TypeAdapter(
    tuple[list[MessageFigure], list[gcengine.Message]], config=ConfigDict(cache_strings="keys")
)


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
            unpacking = unpacker.submit(decompressed_each, batch)
            if pending is not None:
                yield from map(_turn_read, pending.result())
            pending = unpacking
        if pending is not None:
            yield from map(_turn_read, pending.result())


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
            packing = packer.submit(compressed_each, texts)
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
