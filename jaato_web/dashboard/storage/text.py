"""Text with NUL characters, kept losslessly in columns PostgreSQL would refuse it in.

Real tool output holds NUL (``\\x00``): a binary file read by a tool, a process's raw output.
Compressed blobs keep it as they keep everything, but PostgreSQL refuses it in text columns
("text fields cannot contain NUL") and in ``jsonb`` (``\\u0000``). The fields below are the one
place that deals with it, for every database alike: what they write has each NUL, and each
escape character already in the text, replaced by a two-character code from Unicode's
private-use area; what they read has it undone. Lookups that search text
(``icontains``, ``iexact`` and the other pattern lookups) escape their pattern the same way,
so a search for a NUL finds it.

The code is a prefix code over single characters (``ESCAPE`` + ``ESCAPED_ESCAPE`` for the escape
character, ``ESCAPE`` + ``ESCAPED_NUL`` for NUL), so escaping a text escapes each of its parts
alike: a text holds a pattern exactly when its escaped form holds the escaped pattern (but for
a pattern starting with one of the two private-use code characters, which may then also match
inside a code). A column cut to its length never keeps half a code.

The fields declare themselves as Django's own (``deconstruct``): the columns are the same, so
migrations see no change.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import lookups
from django.db.models.expressions import Combinable

ESCAPE = "\ue000"
ESCAPED_ESCAPE = "\ue001"
ESCAPED_NUL = "\ue002"
_CODES = {ESCAPED_ESCAPE: ESCAPE, ESCAPED_NUL: "\x00"}


def escape_nul(text: str) -> str:
    """``text`` with no NUL, reversibly (``unescape_nul``)."""
    if "\x00" not in text and ESCAPE not in text:
        return text
    return text.replace(ESCAPE, ESCAPE + ESCAPED_ESCAPE).replace("\x00", ESCAPE + ESCAPED_NUL)


def unescape_nul(text: str) -> str:
    """The text ``escape_nul`` was given; text it never wrote comes back unchanged."""
    if ESCAPE not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        code = _CODES.get(text[i + 1]) if char == ESCAPE and i + 1 < len(text) else None
        if code is None:
            out.append(char)
            i += 1
        else:
            out.append(code)
            i += 2
    return "".join(out)


def escape_nul_in(value: Any) -> Any:
    """A JSON value with every string in it (keys too) escaped."""
    if isinstance(value, str):
        return escape_nul(value)
    if isinstance(value, dict):
        return {escape_nul_in(k): escape_nul_in(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escape_nul_in(item) for item in value]
    return value


def unescape_nul_in(value: Any) -> Any:
    if isinstance(value, str):
        return unescape_nul(value)
    if isinstance(value, dict):
        return {unescape_nul_in(k): unescape_nul_in(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unescape_nul_in(item) for item in value]
    return value


def _cut(text: str, length: int) -> str:
    """``text`` (escaped) cut to ``length`` characters without keeping half a code."""
    if len(text) <= length:
        return text
    cut = text[:length]
    # An odd run of escape characters at the end ends in the first half of a code.
    run = len(cut) - len(cut.rstrip(ESCAPE))
    return cut[:-1] if run % 2 else cut


class NulSafeText:
    """What the text fields share: escape on the way in (``get_prep_value``, which writers
    that skip the field for speed must call too), undo on the way out."""

    max_length: int | None

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)  # type: ignore[misc]
        if not isinstance(value, str):
            return value
        escaped = escape_nul(value)
        if escaped is not value and self.max_length is not None:
            # The text fit before it was escaped; a NUL takes two characters once escaped.
            escaped = _cut(escaped, self.max_length)
        return escaped

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return unescape_nul(value) if isinstance(value, str) else value

    def deconstruct(self) -> Any:
        name, _path, args, kwargs = super().deconstruct()  # type: ignore[misc]
        return name, self._django_path, args, kwargs  # type: ignore[attr-defined]


class NulSafeCharField(NulSafeText, models.CharField[str | int | Combinable, str]):
    _django_path = "django.db.models.CharField"
    # What django-stubs reads a field's Python type from.
    _pyi_private_set_type: str | int | Combinable
    _pyi_private_get_type: str


class NulSafeTextField(NulSafeText, models.TextField[str | Combinable, str]):
    _django_path = "django.db.models.TextField"
    _pyi_private_set_type: str | Combinable
    _pyi_private_get_type: str


class NulSafeJSONField(models.JSONField):
    """A JSON column whose strings may hold NUL (``jsonb`` refuses ``\\u0000``)."""

    def get_prep_value(self, value: Any) -> Any:
        return super().get_prep_value(escape_nul_in(value))

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        decoded = super().from_db_value(value, expression, connection)
        # The JSON text as read: with no escape character in it (as is, or as JSON writes it
        # in ASCII), nothing was escaped, and a replay's series need not be walked.
        if isinstance(value, str) and ESCAPE not in value and "\\ue000" not in value:
            return decoded
        return unescape_nul_in(decoded)

    def deconstruct(self) -> Any:
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs


# Pattern lookups do not pass their pattern through the field by default (``prepare_rhs``);
# these do, so the pattern is escaped as the column is.
class _IExact(lookups.IExact):
    prepare_rhs = True


class _Contains(lookups.Contains):
    prepare_rhs = True


class _IContains(lookups.IContains):
    prepare_rhs = True


class _StartsWith(lookups.StartsWith):
    prepare_rhs = True


class _IStartsWith(lookups.IStartsWith):
    prepare_rhs = True


class _EndsWith(lookups.EndsWith):
    prepare_rhs = True


class _IEndsWith(lookups.IEndsWith):
    prepare_rhs = True


for _field in (NulSafeCharField, NulSafeTextField):
    for _lookup in (
        _IExact,
        _Contains,
        _IContains,
        _StartsWith,
        _IStartsWith,
        _EndsWith,
        _IEndsWith,
    ):
        _field.register_lookup(_lookup)
