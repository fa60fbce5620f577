"""A session's document beside its turn rows, the session a run left, and a run's stash."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import gcengine
from jaato_web.dashboard.storage.packing import compress, decompressed, packed, unpacked
from jaato_web.dashboard.storage.turns import MessageFigure

# 3: the user inputs the history holds are recorded as their places in it
# (``gcengine.UserInputRecord``); documents of format 2 hold them as text, and read alike.
DOCUMENT_FORMAT = 3


def pack_session(session: gcengine.Session) -> bytes:
    """A session's document as stored beside its turn rows: everything but the history, which
    the turn rows hold."""
    # ``{"format": ..., "session": record}``, the record written as JSON by pydantic-core and
    # compressed without being joined: a 10,000-turn session's record is 10 MB of JSON.
    head = b'{"format":%d,"session":' % DOCUMENT_FORMAT
    return compress(head, gcengine.session_record_json(session), b"}")


def unpack_session(
    document: bytes | memoryview,
    turns: Iterable[tuple[list[gcengine.Message], list[MessageFigure]]],
) -> gcengine.Session:
    """The session ``pack_session`` and the turn rows hold (each turn's messages and figures,
    in order), read back without counting. The messages are new, made as their turns are
    read, so their readings are made at once (``gcengine.readings_made``) before the budget
    is built."""
    stored = unpacked(document)
    history: list[gcengine.Message] = []
    figures: list[tuple[int, str]] = []
    for messages, turn_figures in turns:
        history += messages
        figures += [(tokens, counted_by) for tokens, _, counted_by, _ in turn_figures]
    gcengine.readings_made(history)
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


def pack_stash(stash: gcengine.Stash) -> bytes:
    """A run's stash as stored: JSON, compressed, like the session it came from."""
    return compress(stash.model_dump_json().encode())


def unpack_stash(packed: bytes) -> gcengine.Stash:
    return gcengine.Stash.model_validate_json(decompressed(packed))
