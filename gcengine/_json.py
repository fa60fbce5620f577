"""Small validators shared by every reader, so all messages look alike and name a JSON path."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from enum import StrEnum
from itertools import chain, compress, repeat
from operator import not_
from typing import Any

from pydantic_core import from_json

from gcengine.errors import JsonPath, SessionFormatError


def json_type(value: Any) -> str:
    """Name a decoded JSON value the way a user would ("a list", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def show(value: Any, limit: int = 60) -> str:
    """A value as it looks in the file (``null``, ``"text"``, ``1.5``), shortened."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_or_none(value: Any) -> str | None:
    """The value if it is a string; membership tests on anything else could even raise."""
    return value if isinstance(value, str) else None


def default_if_null(value: Any, default: Any) -> Any:
    """JSON null (or a missing key) means the default; any other value is validated as is."""
    return default if value is None else value


def expect_mapping(value: Any, path: JsonPath, what: str = "an object") -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SessionFormatError(f"must be {what}, not {json_type(value)}", path)
    return value


def expect_list(value: Any, path: JsonPath) -> list[Any]:
    if not isinstance(value, list):
        raise SessionFormatError(f"must be a list, not {json_type(value)}", path)
    return value


def expect_str(value: Any, path: JsonPath, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        expected = "a string or null" if optional else "a string"
        raise SessionFormatError(f"must be {expected}, not {json_type(value)}", path)
    return value


def parse_count(value: Any, path: JsonPath) -> int:
    """A non-negative whole number (token counts, limits); 12.0 is accepted, 12.5 is not."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
        or value != int(value)
    ):
        shown = (
            show(value)
            if isinstance(value, int | float) and not isinstance(value, bool)
            else json_type(value)
        )
        raise SessionFormatError(f"must be a whole number, not {shown}", path)
    if value < 0:
        raise SessionFormatError("must not be negative", path)
    return int(value)


def parse_enum[E: StrEnum](enum: type[E], value: Any, path: JsonPath) -> E:
    try:
        return enum(value)
    except (ValueError, TypeError):
        allowed = ", ".join(member.value for member in enum)
        raise SessionFormatError(f"{show(value)} is not one of {allowed}", path) from None


# Objects and lists nested deeper than this are refused wherever JSON is read. Real sessions
# nest a dozen levels; the engine's own stored form (a ``Session`` as JSON) wraps a value in
# up to ten levels more, and pydantic's JSON reader stops at 200, so a session read at this
# depth can always be stored and read back.
MAX_NESTING = 100
_TOO_DEEP = f"objects and lists nest more than {MAX_NESTING} levels deep here"
LONE_SURROGATE = (
    "the text holds a lone surrogate (half of a UTF-16 pair, such as \\ud800), "
    "which UTF-8 cannot encode and so no store can keep"
)
# Where a lone surrogate may hide: a surrogate's escape in the JSON text (valid pairs match
# too, so a match only means the decoded strings must be looked at), or, in text handed in as
# a Python string, the code point itself.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


class UnreadableValue(ValueError):
    """A value in a JSON text that JSON does not allow (``NaN``, ``Infinity``), that no reader
    can hold (``1e400``, an integer of thousands of digits, nesting deeper than
    ``MAX_NESTING``) or that no store can keep (a lone surrogate); ``path`` says where."""

    def __init__(self, reason: str, path: tuple[str | int, ...]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path


class _Unreadable:
    """What the parser puts where such a number was, to be found (and named) afterwards."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def show_token(token: str, limit: int = 24) -> str:
    return token if len(token) <= limit else token[: limit - 1] + "…"


def loads_strict(text: str | bytes, *, enclosing: int = 0) -> Any:
    """``json.loads``, refusing what is not JSON although Python reads it (``NaN``,
    ``Infinity``, numbers too large for a float, integers too long to convert) and what parses
    but could not be stored afterwards: nesting deeper than ``MAX_NESTING`` (counting the
    ``enclosing`` levels around a JSON text held in a string) and lone surrogates.

    A session holding one would be written back as invalid JSON, which strict readers (and
    PostgreSQL's JSON types) refuse, or could not be written at all. Raises
    ``json.JSONDecodeError`` for bad syntax and ``UnreadableValue``, naming the JSON path, for
    the rest. Integers are read by the fast path; only a text holding one too long is read
    again to find it, and the decoded value is searched for strings only when the text may
    hold a surrogate.
    """
    fast = loads_fast(text, enclosing=enclosing)
    if fast is not NOT_TAKEN:
        return fast
    met: list[_Unreadable] = []

    def unreadable(reason: str) -> _Unreadable:
        met.append(_Unreadable(reason))
        return met[-1]

    def constant(token: str) -> _Unreadable:
        return unreadable(f"{token} is not a number JSON allows (it has no NaN or Infinity)")

    def floating(token: str) -> float | _Unreadable:
        value = float(token)
        if math.isinf(value):
            return unreadable(f"{show_token(token)} is too large for a JSON number")
        return value

    def integer(token: str) -> int | _Unreadable:
        try:
            return int(token)
        except ValueError:  # more digits than Python converts
            return unreadable(
                f"a number of {len(token.lstrip('-')):,} digits is longer than any reader "
                f"keeps (at most {sys.get_int_max_str_digits():,})"
            )

    try:
        data = json.loads(text, parse_constant=constant, parse_float=floating)
    except json.JSONDecodeError:
        raise
    except RecursionError:  # nested far deeper than the limit: the parser itself gave up
        raise UnreadableValue(_too_deep_where(text), ()) from None
    except ValueError:  # an integer too long to convert: read again to say where
        data = json.loads(text, parse_constant=constant, parse_float=floating, parse_int=integer)
    if met:
        found = _find(data, lambda value: isinstance(value, _Unreadable))
        assert found is not None
        value, path = found
        raise UnreadableValue(value.reason, path)
    storable_check(data, enclosing=enclosing, strings=_may_hold_surrogate(text))
    return data


NOT_TAKEN = object()


def loads_fast(text: str | bytes, *, enclosing: int = 0) -> Any:
    """The value, read by pydantic-core's JSON reader when it takes the text whole and the
    value is one ``loads_strict`` takes; ``NOT_TAKEN`` otherwise, for ``loads_strict`` to read
    again and say exactly what and where.

    It reads bytes without first decoding them to one string as large as the file (a
    10,000-turn session: 61 MB at its peak, not 112, in a third of the time), shares equal
    short strings, and refuses by itself what ``loads_strict`` must: NaN, lone surrogates,
    integers too long, nesting past 200. What it takes that JSON does not (a number too
    large for a float, read as infinity) or that nests too deep is looked for here.
    """
    allowed = MAX_NESTING - enclosing
    try:
        value = from_json(text, allow_inf_nan=False)
    except (ValueError, TypeError):  # TypeError: a string holding a lone surrogate
        return NOT_TAKEN
    if isinstance(value, float) and math.isinf(value):
        return NOT_TAKEN
    return NOT_TAKEN if _deeper_than(value, allowed, or_infinite=True) else value


_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _too_deep_where(text: str | bytes) -> str:
    """The reason, with the line and column where the nesting passes the limit: the parser
    gave up with no path to name, so the place is found in the text."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    level = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            level += 1
            if level > MAX_NESTING:
                line = text.count("\n", 0, match.start()) + 1
                column = match.start() - text.rfind("\n", 0, match.start())
                return _TOO_DEEP.replace(" here", f" at line {line}, column {column}")
        elif token in "]}":
            level -= 1
    return _TOO_DEEP.removesuffix(" here")


def _may_hold_surrogate(text: str | bytes) -> bool:
    if isinstance(text, bytes):
        return _SURROGATE_ESCAPE_BYTES.search(text) is not None
    if _SURROGATE_ESCAPE.search(text):
        return True
    return not text.isascii() and _SURROGATE.search(text) is not None


def storable_check(data: Any, *, enclosing: int = 0, strings: bool = True) -> None:
    """Raise ``UnreadableValue`` where decoded JSON nests deeper than ``MAX_NESTING`` (counting
    ``enclosing`` levels around it) or, with ``strings``, where a string (or a key) holds a
    lone surrogate. Either would make storing the session fail later, far from the file."""
    allowed = MAX_NESTING - enclosing
    if _deeper_than(data, allowed):
        found = _find_container(data, allowed + 1)
        assert found is not None
        raise UnreadableValue(_TOO_DEEP, found)
    if strings:
        path = lone_surrogate_path(data)
        if path is not None:
            raise UnreadableValue(LONE_SURROGATE, path)


def _deeper_than(data: Any, allowed: int, *, or_infinite: bool = False) -> bool:
    """Whether any object or list sits more than ``allowed`` levels deep (the top is 1), or,
    with ``or_infinite``, holds an infinite number.

    Walked a level at a time, each level's values gathered in one list by iterators that
    take no Python step per value or container: every file read is walked whole (a
    10,000-turn session: 110,000 objects and lists holding 287,000 values), and a Python
    loop over its containers took 0.061 s, nearly twice the parse itself; 0.047 s so."""
    level: list[Any] = [data] if isinstance(data, dict | list) else []
    depth = 1
    while level:
        if depth > allowed:
            return True
        is_object = list(map(isinstance, level, repeat(dict)))
        values = list(
            chain(
                chain.from_iterable(map(dict.values, compress(level, is_object))),
                chain.from_iterable(compress(level, map(not_, is_object))),
            )
        )
        if or_infinite and (math.inf in values or -math.inf in values):
            return True
        level = list(compress(values, map(isinstance, values, repeat((dict, list)))))
        depth += 1
    return False


def _find_container(data: Any, level: int) -> tuple[str | int, ...] | None:
    """The path of the first object or list (in document order) at ``level``."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if len(path) + 1 == level:
            return path
        items = value.items() if isinstance(value, dict) else enumerate(value)
        stack.extend((child, (*path, key)) for key, child in reversed(list(items)))
    return None


def lone_surrogate_path(data: Any) -> tuple[str | int, ...] | None:
    """Where the first string holding a lone surrogate is, in document order; a key is named
    by its object's path and ``(key)``."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return path
        elif isinstance(value, dict):
            for key, child in reversed(list(value.items())):
                stack.append((child, (*path, key)))
                stack.append((key, (*path, "(key)")))
        elif isinstance(value, list):
            stack.extend((child, (*path, i)) for i, child in reversed(list(enumerate(value))))
    return None


def find_non_finite(data: Any) -> tuple[str, tuple[str | int, ...]] | None:
    """The first NaN or infinite float in already decoded data (a dict handed in directly),
    as a reason and a JSON path; None when there is none."""
    found = _find(data, lambda value: isinstance(value, float) and not math.isfinite(value))
    if found is None:
        return None
    value, path = found
    return f"{value} is not a number JSON allows (it has no NaN or Infinity)", path


def _find(data: Any, wanted: Any) -> tuple[Any, tuple[str | int, ...]] | None:
    """The first value (in document order) for which ``wanted`` holds, and its path."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, (*path, k)) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in reversed(list(enumerate(value))))
        elif wanted(value):
            return value, path
    return None


# What Python's JSON parser says, in the words of the person who wrote the file.
_SYNTAX = {
    "Expecting value": "a value is missing",
    "Expecting ',' delimiter": "a comma is missing",
    "Expecting ':' delimiter": "a colon is missing after a key",
    "Expecting property name enclosed in double quotes": "a key must be text in double quotes",
    "Unterminated string starting at": "a string is not closed",
    "Invalid control character at": (
        "a string holds a raw control character (write a line break as \\n, a tab as \\t)"
    ),
    "Invalid \\escape": "a string holds an invalid backslash escape",
    "Invalid \\uXXXX escape": "a string holds an invalid \\u escape",
    "Extra data": "more data follows the end of the JSON value",
    "Illegal trailing comma before end of object": "a comma ends an object",
    "Illegal trailing comma before end of array": "a comma ends a list",
}


def describe_syntax_error(error: json.JSONDecodeError, *, line: bool = True) -> str:
    """``not valid JSON: a string is not closed at line 196, column 12`` (the column only,
    for a line of a JSON Lines file)."""
    what = _SYNTAX.get(error.msg) or error.msg.removesuffix(" at").lower()
    where = f"line {error.lineno}, column {error.colno}" if line else f"column {error.colno}"
    return f"not valid JSON: {what} at {where}"


def embedded_json(text: str, path: JsonPath) -> Any:
    """JSON held in a string of the file (tool arguments, a span attribute), read strictly;
    an error names the string's path, and a bad value the path inside it. Its nesting counts
    from the string's own depth, as it will once stored in its place."""
    try:
        return loads_strict(text, enclosing=len(path))
    except json.JSONDecodeError as error:
        what = describe_syntax_error(error).removeprefix("not valid JSON: ")
        raise SessionFormatError(f"is not valid JSON ({what})", path) from None
    except UnreadableValue as error:
        raise SessionFormatError(error.reason, (*path, *error.path)) from None
