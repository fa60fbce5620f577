"""Anchors: the things a segment carries that a later one can name.

A file path (with the lines a tool read), an identifier, an error code, a URL or an issue
tag: what lets "turn 41 names ``InvoiceError``" point back at the tool output that holds it,
without embeddings. Each is a string ``kind:value`` (``file:src/billing/tax.py``,
``name:InvoiceError``, ``code:BILL-4012``, ``url:...``, ``tag:#412``).

A message's anchors are read once and kept with the message until it is edited (its
``Readings``): a session's text runs to tens of megabytes, and a replay or a
second analysis of the same messages reads none of it again. Reading is by whitespace and
punctuation (C-speed splitting) and each distinct word is classified once per process, so the
cost grows with the text, not with a regular expression tried at every character.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gcengine.messages import Message, PartType

FILE, NAME, CODE, URL, TAG = "file", "name", "code", "url", "tag"
ANCHOR_KINDS = (FILE, NAME, CODE, URL, TAG)
# The kinds a sentence names first: what people search for.
SHOWN_FIRST = (FILE, CODE, NAME)
_RANK = {kind: rank for rank, kind in enumerate((*SHOWN_FIRST, URL, TAG))}

# Punctuation that never belongs to an anchor: read as a space, so splitting finds the words.
_SEPARATORS = bytes.maketrans(b"()[]{}<>,;=\"'`|*!?&^%$~\\", b" " * 24)
_EDGES = ".:,-+@"
# Extensions a bare file name (no folder) must have to count as a file, not ``invoice.lines``.
_SOURCE_EXTENSIONS = frozenset(
    (  # noqa: SIM905 (a list of words reads best as words)
        "py pyi js jsx ts tsx json jsonl md rst txt toml yaml yml cfg ini go rs java kt rb c h cc "
        "cpp hpp cs sh sql html css scss lock xml csv ipynb swift php proto tf"
    ).split()
)
_PATH = re.compile(r"/?(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.([A-Za-z][A-Za-z0-9]{0,5})")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z][a-z0-9]+[A-Z]|[a-z][a-z0-9]*[A-Z]")
_CODE = re.compile(r"[A-Z][A-Z0-9]{1,9}-\d{2,6}|[A-Z]{1,3}\d{3,4}")
_TAG = re.compile(r"#\d{1,7}")
_BACKTICKED = re.compile(r"`([A-Za-z_][\w.]{1,79})(?:\(\))?`")
_BRACKETED_CODE = re.compile(r"\[([a-z]+(?:-[a-z]+)+)\]")
_LINE = re.compile(r"\d{1,7}")
# Where a tool call names the file it reads or changes, and the lines it covers.
_PATH_ARGUMENTS = frozenset(
    {"path", "file", "file_path", "filepath", "filename", "target_file", "notebook_path"}
)
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
# Classified words, shared by every reading in the process: a session repeats most of them.
# Plain words (most of them) are only remembered as such.
_CLASSIFIED: dict[bytes, tuple[tuple[str, ...], int | None]] = {}
_PLAIN: set[bytes] = set()
_CLASSIFIED_MAX = 1_000_000
_NOTHING: tuple[tuple[str, ...], int | None] = ((), None)


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
    anchors: set[str] = {span.key for span in acted_on}
    lines: list[tuple[str, int]] = []
    text = "\n".join(texts)
    _special(text, anchors)
    # Words are split as bytes (a 256-entry table: C speed on megabytes of tool output), and
    # most of them are known plain words by now.
    for word in _words(text) - _PLAIN:
        keys, line = _classified(word)
        if keys:
            anchors.update(keys)
            if line is not None:
                lines.append((keys[0], line))
    decides = bool(prose) and not _DECISION_WORDS.isdisjoint(_words("\n".join(prose)))
    short_names = tuple(short for anchor in anchors if (short := basename_key(anchor)) is not None)
    return MessageAnchors(
        tuple(sorted(anchors, key=shown_order)),
        short_names,
        tuple(sorted(lines)),
        tuple(acted_on),
        decides,
    )


def _words(text: str) -> set[bytes]:
    return set(text.encode("utf-8", "surrogatepass").translate(_SEPARATORS).split())


def _special(text: str, anchors: set[str]) -> None:
    """What splitting cannot see: a word the writer marked as code (`convert`), and a bracketed
    checker code ([arg-type]). Both patterns start with a literal character, so the search
    skips to it at C speed."""
    if "`" in text:
        for name in _BACKTICKED.findall(text):
            anchors.add(f"{NAME}:{name}")
    if "[" in text:
        for code in _BRACKETED_CODE.findall(text):
            anchors.add(f"{CODE}:[{code}]")


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
    path = next(
        (v for k, v in args.items() if k in _PATH_ARGUMENTS and isinstance(v, str) and v), None
    )
    if path is None:
        return None
    key = _file_key(path.strip())
    if key is None:
        return None
    start = _whole(args, _START_ARGUMENTS)
    end = _whole(args, _END_ARGUMENTS)
    limit = _whole(args, _LIMIT_ARGUMENTS)
    if start is not None and end is None and limit is not None:
        end = start + limit - 1
    if start is None and end is not None:
        start = 1
    return FileSpan(key, start, end)


def _whole(args: Mapping[str, Any], names: Iterable[str]) -> int | None:
    for name in names:
        value = args.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _classified(word: bytes) -> tuple[tuple[str, ...], int | None]:
    """The anchors one word stands for (and a line number it names in a file)."""
    known = _CLASSIFIED.get(word)
    if known is None:
        if len(_CLASSIFIED) + len(_PLAIN) >= _CLASSIFIED_MAX:
            _CLASSIFIED.clear()
            _PLAIN.clear()
        known = _classify(word.decode("utf-8", "replace"))
        if known[0]:
            _CLASSIFIED[word] = known
        else:
            _PLAIN.add(word)
    return known


def _classify(word: str) -> tuple[tuple[str, ...], int | None]:
    if "://" in word:
        if word.startswith(("http://", "https://")):
            return (f"{URL}:{word.rstrip(_EDGES)}",), None
        return _NOTHING
    word = word.strip(_EDGES)
    if not word:
        return _NOTHING
    if "/" in word or "." in word:
        found = _file_word(word)
        if found is not None:
            return found
        if "/" in word:
            return _NOTHING
        keys = tuple(k for part in word.split(".") for k in _classify(part)[0])
        return keys, None
    if _TAG.fullmatch(word):
        return (f"{TAG}:{word}",), None
    if _CODE.fullmatch(word):
        return (f"{CODE}:{word}",), None
    if _is_identifier(word):
        return (f"{NAME}:{word}",), None
    return _NOTHING


def _file_word(word: str) -> tuple[tuple[str, ...], int | None] | None:
    """A path, maybe with ``:line`` or a test's ``::name`` after it."""
    path, _, test = word.partition("::")
    path, _, after = path.partition(":")
    key = _file_key(path)
    if key is None:
        return None
    keys = [key]
    if test and _is_identifier(test.split("[")[0]):
        keys.append(f"{NAME}:{test.split('[')[0]}")
    line_text = after.split(":")[0]
    line = int(line_text) if _LINE.fullmatch(line_text) else None
    return tuple(keys), line


def _file_key(path: str) -> str | None:
    match = _PATH.fullmatch(path)
    if match is None:
        return None
    if "/" not in path and match.group(1).lower() not in _SOURCE_EXTENSIONS:
        return None
    path = path.removeprefix("./")
    if path[:2] in ("a/", "b/") and "/" in path[2:]:
        path = path[2:]  # a diff's a/ and b/ sides name the same file
    return f"{FILE}:{path}"


def _is_identifier(word: str) -> bool:
    """A name that identifies something in code: with an inner underscore (``round_money``,
    ``TAX_RATES``) or humps (``InvoiceError``, ``totalWithTax``), never a plain word."""
    if len(word) < 4 or not _IDENTIFIER.fullmatch(word):
        return False
    if "_" in word.strip("_"):
        return True
    return _CAMEL.search(word) is not None
