"""Anchors: the things a segment carries that a later one can name.

A file path (with the lines a tool read), an identifier, an error code, a URL or an issue
tag: what lets "turn 41 names ``InvoiceError``" point back at the tool output that holds it,
without embeddings. Each is a string ``kind:value`` (``file:src/billing/tax.py``,
``name:InvoiceError``, ``code:BILL-4012``, ``url:...``, ``tag:#412``), made from what
``gcengine.anchors`` finds in the message's text: anchor retention reads the same findings, so
the two agree on what an anchor is.

A message's anchors are read once and kept with the message until it is edited (its
``Readings``): a session's text runs to tens of megabytes, and a replay or a
second analysis of the same messages reads none of it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from gcengine.anchors import AnchorKind, Found, anchor_key, argument_path, found_in, words
from gcengine.messages import Message, PartType

FILE, NAME, CODE, URL, TAG = (
    AnchorKind.FILE,
    AnchorKind.NAME,
    AnchorKind.CODE,
    AnchorKind.URL,
    AnchorKind.TAG,
)
ANCHOR_KINDS = (FILE, NAME, CODE, URL, TAG)
# The kinds a sentence names first: what people search for.
SHOWN_FIRST = (FILE, CODE, NAME)
_RANK = {kind: rank for rank, kind in enumerate((*SHOWN_FIRST, URL, TAG))}

# At C speed: a session's messages hold millions of anchors, a few of them with a line.
_KEY: Callable[[Found], str] = attrgetter("key")
_START: Callable[[Found], int | None] = attrgetter("start")
# Where a tool call names the lines it covers.
_START_ARGUMENTS = ("start_line", "line_start", "offset", "from_line", "line")
_END_ARGUMENTS = ("end_line", "line_end", "to_line")
_LIMIT_ARGUMENTS = ("limit", "lines")
# Words that mark a decision or a constraint in what the user or the agent wrote.
_DECISION_WORDS = frozenset(
    word.encode()
    for base in (  # noqa: SIM905 (a list of words reads best as words)
        "must never always instead prefer decided decide decision chose choose agreed "
        "confirmed confirm signed settled"
    ).split()
    for word in (base, base.capitalize())
)


@dataclass(frozen=True, slots=True)
class FileSpan:
    """A file a tool call acts on (reads, edits, writes), with the lines it covers when the
    call says (``start`` and ``end`` inclusive, None for the whole file)."""

    key: str
    start: int | None = None
    end: int | None = None

    def covers(self, line: int) -> bool:
        if self.start is None:
            return True
        return self.start <= line <= (self.end if self.end is not None else self.start)


@dataclass(frozen=True, slots=True)
class MessageAnchors:
    """What one message carries: every anchor in it, the short names its files also go by
    (``file:invoice.py``, see ``basename_key``), the lines it names in files
    (``src/billing/tax.py:38``), the files its tool calls act on, and whether its own words
    state a decision or a constraint.

    Its anchors are in ``shown_order``: a message naming a segment through several of them
    refers to it by the first, which the sentence saying why a segment went then shows in
    every process alike (a set of strings is walked in an order that changes with the
    process's hash seed, so a run and its replay in another worker named different files).
    """

    anchors: tuple[str, ...]
    short_names: tuple[str, ...]
    lines: tuple[tuple[str, int], ...]
    acted_on: tuple[FileSpan, ...]
    decides: bool


def shown_order(anchor: str) -> tuple[int, str]:
    """Files first, then error codes, names, URLs and tags; alphabetically within a kind."""
    return _RANK.get(anchor.partition(":")[0], len(_RANK)), anchor


def basename_key(anchor: str) -> str | None:
    """``file:invoice.py`` for ``file:src/billing/invoice.py``: a bare file name a message
    names finds the file it stands for."""
    if not anchor.startswith("file:") or "/" not in anchor:
        return None
    return "file:" + anchor.rsplit("/", 1)[1]


def message_anchors(message: Message) -> MessageAnchors:
    """The message's anchors, read once per message value."""
    readings = message.readings()
    if isinstance(readings.anchors, MessageAnchors):
        return readings.anchors
    found = readings.anchors = _read(message)
    return found


def _read(message: Message) -> MessageAnchors:
    texts: list[str] = []
    prose: list[str] = []
    acted_on: list[FileSpan] = []
    for part in message.parts:
        if part.type is PartType.TEXT and part.text:
            texts.append(part.text)
            prose.append(part.text)
        elif part.function_call is not None:
            args = part.function_call.args
            span = _acted_on(args)
            if span is not None:
                acted_on.append(span)
            _strings(args, texts)
        elif part.function_response is not None:
            _strings(part.function_response.result, texts)
    found = found_in("\n".join(texts))
    anchors = {span.key for span in acted_on}
    anchors.update(map(_KEY, found))
    lines = [(f.key, f.start) for f in filter(_START, found) if f.start is not None]
    decides = bool(prose) and not _DECISION_WORDS.isdisjoint(words("\n".join(prose)))
    short_names = tuple(short for anchor in anchors if (short := basename_key(anchor)) is not None)
    return MessageAnchors(
        tuple(sorted(anchors, key=shown_order)),
        short_names,
        tuple(sorted(lines)),
        tuple(acted_on),
        decides,
    )


def _strings(value: Any, into: list[str]) -> None:
    """Every string in a tool's arguments or result (keys are the tool's vocabulary, not
    anchors)."""
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            if isinstance(item, str):
                into.append(item)
            elif item is not None and not isinstance(item, bool | int | float):
                _strings(item, into)
    elif isinstance(value, list | tuple):
        for item in value:
            _strings(item, into)


def _acted_on(args: Mapping[str, Any]) -> FileSpan | None:
    """The file a tool call reads or changes, from its arguments, with the lines it covers."""
    path = argument_path(args)
    if path is None:
        return None
    start = _whole(args, _START_ARGUMENTS)
    end = _whole(args, _END_ARGUMENTS)
    limit = _whole(args, _LIMIT_ARGUMENTS)
    if start is not None and end is None and limit is not None:
        end = start + limit - 1
    if start is None and end is not None:
        start = 1
    return FileSpan(anchor_key(FILE, path), start, end)


def _whole(args: Mapping[str, Any], names: Iterable[str]) -> int | None:
    for name in names:
        value = args.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None
