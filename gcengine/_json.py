"""Small validators shared by every reader, so all messages look alike and name a JSON path."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

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


class UnreadableNumber(ValueError):
    """A number in a JSON text that JSON does not allow (``NaN``, ``Infinity``) or that no
    reader can hold (``1e400``, an integer of thousands of digits); ``path`` says where."""

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


def loads_strict(text: str | bytes) -> Any:
    """``json.loads``, refusing what is not JSON although Python reads it: ``NaN``,
    ``Infinity``, numbers too large for a float and integers too long to convert.

    A session holding one would be written back as invalid JSON, which strict readers (and
    PostgreSQL's JSON types) refuse. Raises ``json.JSONDecodeError`` for bad syntax and
    ``UnreadableNumber``, naming the JSON path, for such a number. Integers are read by the
    fast path; only a text holding one too long is read again to find it, and the decoded
    value is searched only when the parser met such a number.
    """
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
    except ValueError:  # an integer too long to convert: read again to say where
        data = json.loads(text, parse_constant=constant, parse_float=floating, parse_int=integer)
    if met:
        found = _find(data, lambda value: isinstance(value, _Unreadable))
        assert found is not None
        value, path = found
        raise UnreadableNumber(value.reason, path)
    return data


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
    an error names the string's path, and a bad number the path inside it."""
    try:
        return loads_strict(text)
    except json.JSONDecodeError as error:
        what = describe_syntax_error(error).removeprefix("not valid JSON: ")
        raise SessionFormatError(f"is not valid JSON ({what})", path) from None
    except UnreadableNumber as error:
        raise SessionFormatError(error.reason, (*path, *error.path)) from None
