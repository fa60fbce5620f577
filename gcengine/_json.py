"""Small validators shared by every reader, so all messages look alike and name a JSON path."""

from __future__ import annotations

import json
import math
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
