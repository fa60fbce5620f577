"""Anchors as a reader finds them: the paths, identifiers, error codes, URLs and issue tags a
text names, recognised in one place.

Two parts of the engine read anchors: reachability (``gcengine.reachability.anchors``: a later
turn naming ``InvoiceError`` refers back to the tool output that holds it) and anchor
retention (``gcengine.quality.anchors``: whether a compaction kept ``src/billing/tax.py:38`` in
view). Both take these kinds from ``found_in``, each deriving its own view (reachability's keys
and line spans, retention's classes and normalised keys), so they never disagree about
whether a word is an anchor. An anchor is something a person would search for:

* a path: a file name with a known extension (``invoice.py``), anything with a folder and an
  extension (``src/billing/tax.py``), or a folder path without one when it is rooted
  (``/usr/bin/chromium``, ``~/.ssh/config``, ``./scripts/run``) or two folders deep
  (``src/billing/rules``); with the line or lines it names (``tax.py:38``, ``tax.py:38-40``) and
  a test named after it (``tests/test_tax.py::test_cap``);
* an identifier: a name of four characters or more with an inner underscore (``round_money``,
  ``_quantize_all``, ``TAX_RATES``) or a capital inside it (``InvoiceError``, ``HTTPError``,
  ``totalWithTax``; not a plural like ``APIs``), a name written as a call (``convert()``), or
  one the writer marked as code (`` `convert` ``); the parts of a dotted or qualified name
  count on their own (``self.round_money``);
* an error code: ``BILL-4012``, ruff's ``F401`` and ``SIM905``, TypeScript's ``TS2345``,
  mypy's ``[arg-type]`` at the end of its line (not a regex's ``[a-z]``, a CSS selector's
  ``[data-id]`` or a log's ``[app-name]`` tag);
* an http or https URL, with its query;
* an issue tag: ``#412`` (not an HTML character reference, ``&#412;``).

Text is read by words: split at whitespace and punctuation (C-speed splitting, on the tens of
megabytes of tool output a long session holds), each distinct word classified by a pure
function whose answers a bounded memo keeps (a session repeats most of its words). What
splitting cannot see (a URL's query, code in backticks, a call's parentheses, a bracketed
code) is searched for with patterns led by a literal character, which the search skips to.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from itertools import chain
from typing import Any, Final, NamedTuple


class AnchorKind:
    """The kinds ``found_in`` tells apart: a file (a path), a name (an identifier), an error
    code, a URL, an issue tag. Plain strings, not an enumeration: a text's anchors are told
    apart by hashing them, and an enumeration's members hash in Python code."""

    FILE: Final = "file"
    NAME: Final = "name"
    CODE: Final = "code"
    URL: Final = "url"
    TAG: Final = "tag"


class Found(NamedTuple):
    """One anchor in a text: its kind, its value as written (a path without its lines), its
    ``key`` (``anchor_key``) and for a path the first and last line it names (``end`` None
    for one line). A tuple: a text's anchors are told apart by hashing them, which a tuple
    does at C speed."""

    kind: str
    value: str
    key: str
    start: int | None = None
    end: int | None = None


def anchor_key(kind: str, value: str) -> str:
    """An anchor as one string, ``kind:value`` (``file:src/billing/tax.py``,
    ``name:InvoiceError``): what tells anchors apart, a file one however its start is written
    (``./src/tax.py``, and a diff's ``a/src/tax.py`` and ``b/src/tax.py``, are
    ``file:src/tax.py``)."""
    if kind == AnchorKind.FILE:
        value = value.removeprefix("./")
        if value[:2] in ("a/", "b/") and "/" in value[2:]:
            value = value[2:]
    return f"{kind}:{value}"


def _found(kind: str, value: str, start: int | None = None, end: int | None = None) -> Found:
    key = anchor_key(kind, value) if kind == AnchorKind.FILE else f"{kind}:{value}"
    # Made as a tuple is (``Found(...)`` runs Python code): a session has words by the million.
    return tuple.__new__(Found, (kind, value, key, start, end))


# Punctuation that never belongs to an anchor is read as a space, so splitting finds the words.
# "#" (a tag), "~" (a home folder) and "/", ".", ":", "@", "+", "-" (paths, codes) stay in.
_SEPARATORS = bytes.maketrans(b"()[]{}<>,;=\"'`|*!?&^%$\\", b" " * 23)
# Typographic quotes and the no-break space are separators too (folded first: a table of bytes
# cannot map characters of several bytes).
_SPACED = ("\u2018", "\u2019", "\u201c", "\u201d", "\u00a0")
# What a word may start or end with that is not part of the anchor ("BILL-4012:", "@name").
_EDGES = ".:,-+@"

_URL = re.compile(r"https?://[^\s<>\"'`)\]}|]+")
_URL_END = ".,;:!?'\"(*"
_BACKTICKED = re.compile(r"`([A-Za-z_][\w.-]{1,79})(?:\(\))?`")
# mypy's code closes the line it reports on, after a space: not a regex's character class
# ([a-z]), a CSS attribute selector (`[data-id]`, div[data-id]) or a log's tag ([app-name] ...).
_BRACKETED_CODE = re.compile(r"(?<![^ \t\n])\[[a-z]{2,}(?:-[a-z]{2,})+\](?=[ \t]*(?:$|\n))")
# The name before a call's "()": searched for in the few characters before each.
_CALLED = re.compile(r"(?<!\w)[A-Za-z_][A-Za-z0-9_]{2,}\Z")
_CALL_NAME_CHARS = 80

_TAG = re.compile(r"#\d{1,7}")
_CODE = re.compile(r"[A-Z][A-Z0-9]{1,9}-\d{2,6}|[A-Z]{1,3}\d{3,4}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Where a dotted, qualified or joined word parts into words that may be anchors on their own.
_PARTS = re.compile(r"[./:-]+")
# A start that belongs to the anchor: a relative path's, a dotfile's (.eslintrc.json).
_KEPT_START = re.compile(r"\.{1,2}/|\.\w")
_PLURAL_ACRONYM = re.compile(r"[A-Z]+s")
_PATH_SHAPE = re.compile(r"/?(?:[\w.@+~-]+/)*[\w.@+~-]+")
_EXTENSION = re.compile(r"[A-Za-z][A-Za-z0-9]{0,5}")
# Lines count from 1: ``tax.py:0`` names the file, not a line.
_LINES = re.compile(r"([1-9]\d{0,6})(?:-(\d{1,7}))?(?::|$)")
# Extensions a file name without a folder must have to be a file: a dotted word is more often
# an attribute (``invoice.lines``). Not ``log`` and ``env``: ``console.log``, ``process.env``.
_FILE_EXTENSIONS = frozenset(
    (  # noqa: SIM905 (a list of words reads best as words)
        "py pyi ipynb js mjs cjs ts tsx jsx json jsonl md rst txt toml yaml yml cfg ini conf sh "
        "bash zsh go rs java kt kts c h cc cpp hpp cs rb php html htm css scss sass less sql "
        "lock xml csv tsv vue svelte swift scala ex exs erl hs lua dart tf hcl proto graphql "
        "gradle pdf png jpg jpeg gif svg wasm dockerfile mk make bat ps1"
    ).split()
)
# A tool call's arguments that name the file or folder it works on.
_PATH_ARGUMENTS = frozenset(
    {"path", "file", "file_path", "filepath", "filename", "target_file", "notebook_path"}
)


def found_in(text: str) -> list[Found]:
    """Every anchor ``text`` names, some maybe more than once: URLs, marked code, calls and
    bracketed codes first, then what its words are, in the order they are first written (the
    same order in every process, so a list of them reads alike wherever it is made)."""
    found: list[Found] = []
    text = _spaced(text)
    # Before the URLs are taken out: a code is bracketed at the end of its line as written, so
    # a URL after it (which a reader of one sentence may not see) never makes it one.
    bracketed = _BRACKETED_CODE.findall(text) if "[" in text else ()
    if "://" in text and "http" in text:
        found.extend(_found(AnchorKind.URL, url.rstrip(_URL_END)) for url in _URL.findall(text))
        text = _URL.sub(" ", text)
    if "`" in text:
        found.extend(chain.from_iterable(map(_marked_code, _BACKTICKED.findall(text))))
    if "()" in text:
        found.extend(_called(text))
    found.extend(_found(AnchorKind.CODE, code) for code in bracketed)
    if "&#" in text:
        text = text.replace("&#", "& ")  # an HTML character reference is no tag
    # Mapped, not looped over: each distinct word (most of them plain, known to the memo) is
    # looked up at C speed.
    found.extend(chain.from_iterable(map(_word_anchors, _candidates(text))))
    return found


def words(text: str) -> dict[bytes, None]:
    """The distinct words of ``text`` in the order first written, split at whitespace and at
    punctuation that never belongs to an anchor: a 256-entry table, C speed on megabytes."""
    return _split(_spaced(text))


def _split(text: str) -> dict[bytes, None]:
    return dict.fromkeys(text.encode("utf-8", "surrogatepass").translate(_SEPARATORS).split())


# What a word must hold to be an anchor (``_classify``): a capital (a code, a name with one
# inside), an underscore, a tag's "#", or a path's, a qualified or a joined word's ``./:-``. A
# word without any is no path (no dot or slash), code (no capital), tag, identifier (no
# underscore or capital) nor parts of one: ``_classify`` gives it nothing.
_ANCHOR_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ_#./:-"
_PLAIN_BYTES = bytes(byte for byte in range(256) if byte not in _ANCHOR_BYTES)
# Such a character and the rest of its word, in text whose whitespace is all spaces (what
# ``bytes.split`` splits at, as ``_split`` does).
_ANCHOR_WORD_END = re.compile(b"[" + re.escape(_ANCHOR_BYTES) + b"][^ ]*")
_WORDS_SPACED = bytes(ord(" ") if bytes([b]).isspace() else b for b in _SEPARATORS)
# In text with fewer than one such character in this many (prose, a generated session's
# words), the words holding one are found by a search that skips to them; other text is split.
_FEW_ANCHOR_BYTES = 32
# Shorter text is split at once: counting those characters costs more than the search spares.
_SHORT = 256


def _candidates(text: str) -> dict[bytes, None]:
    """The words of ``text`` that may be anchors, each once, in the order first written:
    ``_split``'s but for words that hold none of ``_ANCHOR_BYTES``."""
    data = text.encode("utf-8", "surrogatepass").translate(_WORDS_SPACED)
    few = len(data) > _SHORT and len(data.translate(None, _PLAIN_BYTES)) * _FEW_ANCHOR_BYTES
    if not few or few > len(data):
        return dict.fromkeys(data.split())
    before = data.rfind  # a word starts after the space before its first such character
    return dict.fromkeys(
        [data[before(b" ", 0, m.start()) + 1 : m.end()] for m in _ANCHOR_WORD_END.finditer(data)]
    )


def _spaced(text: str) -> str:
    """``text`` with typographic quotes and no-break spaces as spaces (a text without any, as
    most are, is searched for each at C speed and returned as it is)."""
    for space in _SPACED:
        if space in text:
            text = text.replace(space, " ")
    return text


def argument_path(args: Mapping[str, Any]) -> str | None:
    """The path a tool call's arguments name as the file or folder it works on: the tool says
    it is one, whatever its shape (``Makefile``, ``src``), if it is a line with a letter."""
    for key, value in args.items():
        if key.lower() in _PATH_ARGUMENTS and isinstance(value, str):
            path = value.strip()
            if "\n" not in path and any(c.isalpha() for c in path):
                return path
    return None


def _marked_code(name: str) -> tuple[Found, ...]:
    """What a name in backticks is: a path or code if it is one, else an identifier even when
    it is a plain word (`` `convert` ``): the writer marked it as code."""
    found = _classify(name)
    if any(f.kind != AnchorKind.NAME for f in found):
        return found
    name = name.rstrip(_EDGES)
    return (_found(AnchorKind.NAME, name),) if len(name) > 1 else ()


def _called(text: str) -> Iterable[Found]:
    """The names written as calls (``convert()``, ``self.convert()``)."""
    pieces = text.split("()")
    for piece in pieces[:-1]:
        match = _CALLED.search(piece[-_CALL_NAME_CHARS:])
        if match is not None:
            yield _found(AnchorKind.NAME, match.group(0))


# A pure function of the word, so a memo of it is safe to share; bounded, so a process never
# holds more than this many words (a session repeats most of its words, and the rest go).
@functools.lru_cache(maxsize=1 << 18)
def _word_anchors(word: bytes) -> tuple[Found, ...]:
    return _classify(word.decode("utf-8", "replace"))


def _classify(word: str) -> tuple[Found, ...]:
    """The anchors one word (split at whitespace and punctuation) stands for."""
    word = word.rstrip(_EDGES)
    if word[:1] != "." or not _KEPT_START.match(word):
        word = word.lstrip(_EDGES)
    if not word:
        return ()
    if word[0] == "#":
        return (_found(AnchorKind.TAG, word),) if _TAG.fullmatch(word) else ()
    dotted = "/" in word or "." in word
    if dotted and (path := _path(word)):
        return path
    if word[-1].isdigit() and "A" <= word[0] <= "Z" and _CODE.fullmatch(word):  # [A-Z] first
        return (_found(AnchorKind.CODE, word),)
    if _is_identifier(word):
        return (_found(AnchorKind.NAME, word),)
    if not dotted and ":" not in word and "-" not in word:
        return ()
    # A dotted, qualified or joined word (self.round_money, pkg:factory, ValueError/TypeError):
    # its parts count on their own.
    return tuple(found for part in _PARTS.split(word) if part for found in _classify(part))


def _path(word: str) -> tuple[Found, ...]:
    """A path, maybe with the lines it names (``:38``, ``:38-40``, ``:38:5``) or a test
    (``::test_cap``) after it; nothing if the word is no path."""
    body, _, test = word.partition("::")
    path, _, after = body.partition(":")
    if not _is_path(path):
        return ()
    lines = _LINES.match(after)
    if lines is None:
        found = [_found(AnchorKind.FILE, path)]
    else:
        start, end = lines.groups()
        found = [_found(AnchorKind.FILE, path, int(start), int(end) if end else None)]
    for name in test.split("::") if test else ():
        name = name.split("[")[0]
        if _is_identifier(name):
            found.append(_found(AnchorKind.NAME, name))
    return tuple(found)


def _is_path(path: str) -> bool:
    """Whether ``path`` (a word without lines) is a path; see the module's docstring."""
    if not _PATH_SHAPE.fullmatch(path) or not any(c.isalpha() for c in path):
        return False
    _, slash, name = path.rpartition("/")
    stem, dot, extension = name.rpartition(".")
    if dot and (stem or slash):
        known = extension.lower() in _FILE_EXTENSIONS
        if known or (slash and _EXTENSION.fullmatch(extension)):
            return True
    return path.startswith(("./", "../")) or path.count("/") >= 2


def _is_identifier(word: str) -> bool:
    """A name that identifies something in code: with an inner underscore or a capital inside
    it (not an acronym's plural, ``APIs``), never a plain word."""
    if len(word) < 4 or not _IDENTIFIER.fullmatch(word):
        return False
    if "_" in word.strip("_"):
        return True
    humped = word[1:].lower() != word[1:] and word.upper() != word
    return humped and not _PLURAL_ACRONYM.fullmatch(word)
