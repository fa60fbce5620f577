"""``gc.json`` keys as they are declared: a typed field with its default, and a ``KeySpec``.

A key is a field of a small pydantic model (the keys every strategy reads in ``common``, a
strategy's own in its module), annotated with a ``KeySpec``: its label and help for people,
the kind of value (which control edits it, and how the loader checks it), its bounds and the
word a bound's message uses. Everything that shows, edits, loads or writes a policy reads
these declarations (``gcengine.config`` composes them into ``GCConfig``), so a key is
declared once, where the strategy that reads it is.

``checked`` is the loader's check of one value against its declaration: the messages are the
ones a ``ConfigError`` names the key with (``must be a whole number or null, not 1.5``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gcengine.errors import ConfigError

KeyKind = Literal[
    "choice", "percent", "whole_number", "number", "flag", "text", "turn_list", "id_list", "object"
]


@dataclass(frozen=True)
class KeySpec:
    """What a ``gc.json`` key is, beyond the type and default its field declares.

    ``kind`` is the kind of value (a control to edit it with, and the loader's check):
    ``choice`` (one of ``choices``), ``percent`` (0-100), ``whole_number``, ``number``,
    ``flag`` (true or false), ``text``, ``turn_list`` (stable turn indices), ``id_list``
    (message ids) or ``object`` (a JSON object; when the field is a model, its fields are the
    object's own keys, declared the same way). ``minimum`` and ``maximum`` bound a number,
    ``unit`` is the word a message about the maximum uses (``segments``). ``rule`` says what
    is wrong with a whole checked value that each of its parts cannot (None when nothing is).

    ``written_when_default``: a key JAATO's loader does not read is left out of a dump while
    it holds its default. ``plugin_option``: handed to the plugin when it starts, as JAATO's
    loader hands it (when it holds a value). ``env``: the environment variable that fills it
    in when a ``gc.json`` does not set it.
    """

    label: str
    help: str
    kind: KeyKind
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    unit: str = ""
    rule: Callable[[Any], str | None] | None = None
    written_when_default: bool = True
    plugin_option: bool = False
    env: str | None = None


def declared_keys(model: type[BaseModel]) -> Iterator[tuple[str, FieldInfo, KeySpec]]:
    """The keys ``model`` declares, in its order: each field with its ``KeySpec``."""
    for name, field in model.model_fields.items():
        spec = key_spec(field)
        if spec is not None:
            yield name, field, spec


def key_spec(field: FieldInfo) -> KeySpec | None:
    """The ``KeySpec`` a field is annotated with, if any."""
    return next((m for m in field.metadata if isinstance(m, KeySpec)), None)


def options_model(field: FieldInfo) -> type[BaseModel] | None:
    """The model whose fields are an object key's own keys (``roots``), if it has one."""
    annotation = field.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


UNSET: Any = object()
"""What ``checked`` gives for a value that leaves the key unset (a text key's null)."""


def checked(key: str, value: Any, spec: KeySpec, field: FieldInfo | None = None) -> Any:
    """``value`` as ``field`` holds it (null only where its type allows), or a
    ``ConfigError`` naming ``key``; ``UNSET`` when the value leaves the key at its default."""
    nullable = field is not None and type(None) in get_args(field.annotation)
    if spec.kind == "text" and value is None:
        return UNSET
    if value is None and nullable:
        return None
    if spec.kind in ("percent", "number"):
        return _number(key, value, spec, nullable)
    if spec.kind == "whole_number":
        return _whole(key, value, spec, nullable)
    if spec.kind == "object":
        return _object(key, value, spec, options_model(field) if field else None)
    return _CHECKS[spec.kind](key, value, spec)


def _number(key: str, value: Any, spec: KeySpec, nullable: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(
            f"must be a number{' or null' if nullable else ''}, not {json.dumps(value)}", key
        )
    # A percentage's bounds are checked once the whole policy is read, the environment's too.
    if spec.kind == "number" and spec.minimum is not None and value < spec.minimum:
        raise ConfigError(f"must be a number from {spec.minimum:g}, not {value:g}", key)
    return float(value)


def _whole(key: str, value: Any, spec: KeySpec, nullable: bool) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ConfigError(
            f"must be a whole number{' or null' if nullable else ''}, not {json.dumps(value)}",
            key,
        )
    if spec.minimum is not None and value < spec.minimum:
        raise ConfigError(f"must be at least {spec.minimum:g}", key)
    if spec.maximum is not None and value > spec.maximum:
        raise ConfigError(f"must be at most {spec.maximum:g} {spec.unit}".rstrip(), key)
    return int(value)


def _flag(key: str, value: Any, spec: KeySpec) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false, not {json.dumps(value)}", key)
    return value


def _text(key: str, value: Any, spec: KeySpec) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"must be a string, not {json.dumps(value)}", key)
    return value


def _choice(key: str, value: Any, spec: KeySpec) -> str:
    if value not in spec.choices:
        *others, last = spec.choices
        raise ConfigError(f"must be {', '.join(others)} or {last}, not {json.dumps(value)}", key)
    return str(value)


def _turn_list(key: str, value: Any, spec: KeySpec) -> list[int]:
    if not isinstance(value, list):
        raise ConfigError("must be a list of turn indices", key)
    for position, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            raise ConfigError(
                f"item {position} must be a turn index (a whole number from 0), "
                f"not {json.dumps(item)}",
                key,
            )
    return sorted(set(value))


def _id_list(key: str, value: Any, spec: KeySpec) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(i, str) and i for i in value):
        raise ConfigError("must be a list of message ids (strings)", key)
    return list(dict.fromkeys(value))


_CHECKS: dict[str, Callable[[str, Any, KeySpec], Any]] = {
    "flag": _flag,
    "text": _text,
    "choice": _choice,
    "turn_list": _turn_list,
    "id_list": _id_list,
}


def _object(key: str, value: Any, spec: KeySpec, model: type[BaseModel] | None) -> Any:
    """An object key's value: its options (``model``'s keys) each checked as strictly as a
    key (an error names ``roots.recent_turns``), or, for an object of free options, the
    object as it is."""
    if not isinstance(value, Mapping):
        raise ConfigError("must be an object", key)
    if model is None:
        return dict(value)
    options = {name: (option, known) for name, option, known in declared_keys(model)}
    found: dict[str, Any] = {}
    for name, option in value.items():
        if not isinstance(name, str) or name.startswith("_"):
            continue  # notes for people (``_comment``)
        if name not in options:
            raise ConfigError(f"unknown option (known: {', '.join(options)})", f"{key}.{name}")
        found[name] = option
    for name, option in found.items():
        option_field, option_spec = options[name]
        found[name] = checked(f"{key}.{name}", option, option_spec, option_field)
    result = model(**found)
    problem = spec.rule(result) if spec.rule is not None else None
    if problem is not None:
        raise ConfigError(problem, key)
    return result
