"""GC policies: ``gc.json`` read strictly, written back in the shape JAATO loads.

Two shapes are read:

* JAATO's flat object: ``{"type": "budget", "threshold_percent": 80, ...}``; ``type`` may be
  ``truncate``/``summarize``/``hybrid``/``budget`` with or without the ``gc_`` prefix;
* the design document's ``{"plugin": "gc_budget", "config": {...}}``.

Where JAATO's loader is lenient to the point of surprise, this one is strict and says why:

* an unknown key, a value of the wrong type, a percentage outside 0-100, a target at or above
  the threshold, or an unknown strategy is a ``ConfigError`` naming the key (JAATO ignores
  them, or silently falls back to truncation, or disables GC);
* a missing ``pressure_percent`` means the default 90, not continuous mode; continuous mode is
  asked for explicitly with ``pressure_percent`` 0 or null (or ``"continuous_mode": true``);
* ``notify_on_gc`` defaults to false everywhere (JAATO's loader says true, its plugins false);
* ``JAATO_GC_THRESHOLD`` / ``_TARGET`` / ``_PRESSURE`` fill in fields the file does not set
  (JAATO lets the file's literal defaults hide them).

Keys starting with ``_`` (``_comment``, ``_docs``) are notes for people and are ignored.
"""

from __future__ import annotations

import json
import math
import os
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field, field_validator

from gcengine.errors import ConfigError

Strategy = Literal["gc_truncate", "gc_summarize", "gc_hybrid", "gc_budget"]
STRATEGIES: tuple[Strategy, ...] = ("gc_truncate", "gc_summarize", "gc_hybrid", "gc_budget")

# The placeholders each strategy's notification templates may use.
NOTIFICATION_FIELDS: dict[str, frozenset[str]] = {
    "gc_truncate": frozenset({"removed", "kept", "tokens_freed"}),
    "gc_summarize": frozenset({"removed", "kept", "tokens_freed"}),
    "gc_hybrid": frozenset({"truncated", "summarized", "kept", "tokens_freed"}),
    "gc_budget": frozenset({"items", "freed", "tokens_freed"}),
}
NOOP_NOTIFICATION_FIELDS = frozenset({"total", "preserve"})

ENV_OVERRIDES = {
    "threshold_percent": "JAATO_GC_THRESHOLD",
    "target_percent": "JAATO_GC_TARGET",
    "pressure_percent": "JAATO_GC_PRESSURE",
}


class GCConfig(BaseModel):
    """A validated policy: which strategy runs, when, and what it must keep."""

    plugin: Strategy = "gc_truncate"
    threshold_percent: float = 80.0
    target_percent: float = 60.0
    pressure_percent: float | None = Field(
        default=90.0,
        description="None means continuous mode: collect above target, never touch preservable",
    )
    max_turns: int | None = None
    auto_trigger: bool = True
    check_before_send: bool = True
    preserve_recent_turns: int = 5
    pinned_turn_indices: list[int] = Field(
        default_factory=list, description="stable turn indices of the session as uploaded"
    )
    pinned_message_ids: list[str] = Field(default_factory=list)
    notify_on_gc: bool = False
    notification_template: str | None = None
    noop_notification_template: str | None = None
    summarize_middle_turns: int | None = None
    max_summary_tokens: int | None = None
    agent_name: str | None = None
    plugin_config: dict[str, Any] = Field(default_factory=dict)

    @field_validator("pressure_percent")
    @classmethod
    def _zero_pressure_is_continuous(cls, value: float | None) -> float | None:
        return value or None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def continuous_mode(self) -> bool:
        return not self.pressure_percent

    @property
    def strategy_name(self) -> str:
        """The strategy without its ``gc_`` prefix, as JAATO's UI shows it."""
        return self.plugin.removeprefix("gc_")


_FIELDS = set(GCConfig.model_fields) | {"type", "continuous_mode"}
_PERCENT_FIELDS = ("threshold_percent", "target_percent", "pressure_percent")


def load_gc_config(
    source: str | bytes | os.PathLike[str] | Mapping[str, Any] | list[Any],
    *,
    env: Mapping[str, str] | None = None,
) -> GCConfig:
    """Read a ``gc.json`` (a path object, JSON text or bytes, or a parsed object) into a config.

    A ``str`` is always JSON text, never a file name: pass a ``pathlib.Path`` to read a file.

    ``env`` defaults to ``os.environ``; pass a mapping to make the result independent of it.
    """
    data = _decode(source)
    if not isinstance(data, Mapping):
        raise ConfigError("a gc.json must hold a JSON object")
    flat, strategy_key = _flatten(data)
    environment = os.environ if env is None else env
    values: dict[str, Any] = {"plugin": _strategy(flat.pop("type", "truncate"), strategy_key)}
    for key, raw in flat.items():
        if key.startswith("_"):
            continue
        if key not in _FIELDS:
            raise ConfigError(
                f"unknown key (known keys: {', '.join(sorted(_FIELDS - {'plugin'}))})", key
            )
        values[key] = raw
    from_environment: dict[str, str] = {}
    for key, variable in ENV_OVERRIDES.items():
        if key not in values and variable in environment:
            values[key] = _env_percent(environment[variable], variable)
            from_environment[key] = variable
    try:
        return _validated(values)
    except ConfigError as error:
        # A value the file does not contain is blamed on the variable that supplied it.
        if error.key in from_environment:
            variable = from_environment[error.key]
            raise ConfigError(f"{error.reason} (set by {variable})", variable) from None
        raise


def _decode(source: Any) -> Any:
    if isinstance(source, Mapping | list):
        return source
    if isinstance(source, str) and not source.strip():
        raise ConfigError("the input is empty")
    # Only a path object names a file: text is always the gc.json itself, so a string pasted
    # into a form ("/etc/passwd") can never make a server read a file.
    if isinstance(source, os.PathLike):
        path = Path(source)
        try:
            source = path.read_bytes()
        except (OSError, ValueError) as error:  # ValueError: a NUL byte in the path
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise ConfigError(f"cannot read {str(path)!r}: {reason}") from None
    try:
        return json.loads(source)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        detail = (
            f"{error.msg} at line {error.lineno}, column {error.colno}"
            if isinstance(error, json.JSONDecodeError)
            else "not UTF-8 text"
        )
        raise ConfigError(f"not valid JSON: {detail}") from None
    except RecursionError:
        raise ConfigError("the JSON nests too deeply") from None
    except ValueError as error:  # an integer too long to convert (Python caps digits)
        raise ConfigError(f"not a usable JSON number: {error}") from None


def _flatten(data: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """Turn the ``{"plugin", "config"}`` shape into the flat one; the flat one passes through.

    Also returns the key that named the strategy, so an error about it names that key.
    """
    if "plugin" not in data and "config" not in data:
        return dict(data), "type"
    if "type" in data:
        raise ConfigError("give the strategy either as 'type' or as 'plugin', not both", "plugin")
    inner = data.get("config", {})
    if not isinstance(inner, Mapping):
        raise ConfigError("must be an object", "config")
    outer_extra = [k for k in data if k not in ("plugin", "config") and not k.startswith("_")]
    if outer_extra:
        raise ConfigError(
            "with 'plugin' and 'config', every setting belongs inside 'config'", outer_extra[0]
        )
    if "type" in inner or "plugin" in inner:
        raise ConfigError(
            "the strategy is named by the outer 'plugin' key",
            "config.type" if "type" in inner else "config.plugin",
        )
    return {"type": data.get("plugin", "truncate"), **inner}, "plugin"


def _strategy(value: Any, key: str) -> Strategy:
    if isinstance(value, str):
        name = value if value.startswith("gc_") else f"gc_{value}"
        for strategy in STRATEGIES:
            if name == strategy:
                return strategy
    allowed = ", ".join(s.removeprefix("gc_") for s in STRATEGIES)
    raise ConfigError(
        f"{value!r} is not a strategy ({allowed}, with or without the gc_ prefix)", key
    )


def _env_percent(raw: str, variable: str) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{raw!r} is not a number", variable) from None
    if not math.isfinite(value):
        raise ConfigError(f"{raw!r} is not a finite number", variable)
    # JAATO reads a non-positive pressure from the environment as "continuous mode".
    if variable == ENV_OVERRIDES["pressure_percent"] and value <= 0:
        return None
    return value


def _number(values: dict[str, Any], key: str, *, nullable: bool = False) -> float | None:
    value = values.get(key)
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(
            f"must be a number{' or null' if nullable else ''}, not {json.dumps(value)}", key
        )
    return float(value)


def _whole(values: dict[str, Any], key: str, *, minimum: int, nullable: bool = False) -> int | None:
    value = values.get(key)
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ConfigError(
            f"must be a whole number{' or null' if nullable else ''}, not {json.dumps(value)}", key
        )
    if value < minimum:
        raise ConfigError(f"must be at least {minimum}", key)
    return int(value)


def _flag(values: dict[str, Any], key: str) -> bool:
    value = values[key]
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false, not {json.dumps(value)}", key)
    return value


def _validated(values: dict[str, Any]) -> GCConfig:
    checked: dict[str, Any] = {"plugin": values["plugin"]}
    for key in ("threshold_percent", "target_percent"):
        if key in values:
            checked[key] = _number(values, key)
    if "pressure_percent" in values:
        pressure = _number(values, "pressure_percent", nullable=True)
        checked["pressure_percent"] = pressure or None
    if "continuous_mode" in values:
        continuous = _flag(values, "continuous_mode")
        if continuous and checked.get("pressure_percent"):
            raise ConfigError(
                "continuous mode means no pressure threshold; set pressure_percent to 0 or drop it",
                "continuous_mode",
            )
        if continuous:
            checked["pressure_percent"] = None
        elif "pressure_percent" in checked and checked["pressure_percent"] is None:
            raise ConfigError(
                "pressure_percent 0 or null means continuous mode; "
                "give a pressure above the target",
                "continuous_mode",
            )
    for key in ("auto_trigger", "check_before_send", "notify_on_gc"):
        if key in values:
            checked[key] = _flag(values, key)
    if "preserve_recent_turns" in values:
        checked["preserve_recent_turns"] = _whole(values, "preserve_recent_turns", minimum=0)
    # summarize_middle_turns 0 is meaningful: the hybrid strategy then only truncates.
    minimums = {"max_turns": 1, "summarize_middle_turns": 0, "max_summary_tokens": 1}
    for key, minimum in minimums.items():
        if key in values:
            checked[key] = _whole(values, key, minimum=minimum, nullable=True)
    if "pinned_turn_indices" in values:
        checked["pinned_turn_indices"] = _pins(values["pinned_turn_indices"])
    if "pinned_message_ids" in values:
        ids = values["pinned_message_ids"]
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise ConfigError("must be a list of message ids (strings)", "pinned_message_ids")
        checked["pinned_message_ids"] = list(dict.fromkeys(ids))
    for key in ("notification_template", "noop_notification_template", "agent_name"):
        if values.get(key) is not None:
            if not isinstance(values[key], str):
                raise ConfigError(f"must be a string, not {json.dumps(values[key])}", key)
            checked[key] = values[key]
    if "plugin_config" in values:
        if not isinstance(values["plugin_config"], Mapping):
            raise ConfigError("must be an object", "plugin_config")
        checked["plugin_config"] = dict(values["plugin_config"])
    config = GCConfig(**checked)
    _check_percentages(config)
    _check_templates(config)
    return config


def _pins(value: Any) -> list[int]:
    if not isinstance(value, list):
        raise ConfigError("must be a list of turn indices", "pinned_turn_indices")
    pins = []
    for position, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            raise ConfigError(
                f"item {position} must be a turn index (a whole number from 0), "
                f"not {json.dumps(item)}",
                "pinned_turn_indices",
            )
        pins.append(item)
    return sorted(set(pins))


def _check_percentages(config: GCConfig) -> None:
    for key in _PERCENT_FIELDS:
        value = getattr(config, key)
        if value is not None and not 0 <= value <= 100:
            raise ConfigError(f"must be between 0 and 100, not {value:g}", key)
    if config.threshold_percent <= 0:
        raise ConfigError("must be above 0: at 0 every turn would collect", "threshold_percent")
    if config.target_percent >= config.threshold_percent:
        raise ConfigError(
            f"must be below threshold_percent "
            f"({config.target_percent:g} >= {config.threshold_percent:g}): "
            "a collection has to land below the level that triggers it",
            "target_percent",
        )


def _check_templates(config: GCConfig) -> None:
    checks = (
        ("notification_template", config.notification_template, NOTIFICATION_FIELDS[config.plugin]),
        ("noop_notification_template", config.noop_notification_template, NOOP_NOTIFICATION_FIELDS),
    )
    for key, template, allowed in checks:
        if template is None:
            continue
        try:
            names = {
                name for _, name, _, _ in string.Formatter().parse(template) if name is not None
            }
        except ValueError as error:
            raise ConfigError(f"is not a valid template: {error}", key) from None
        # Only plain names: "{items.x}" or "{0}" would fail when the notice is rendered.
        unknown = sorted(n for n in names if n not in allowed)
        if unknown:
            raise ConfigError(
                f"uses {{{unknown[0]}}}, which {config.plugin} does not provide (it provides "
                f"{', '.join('{' + a + '}' for a in sorted(allowed))})",
                key,
            )


def dump_gc_config(config: GCConfig) -> dict[str, Any]:
    """JAATO's flat shape, loadable by JAATO's own loader and by ``load_gc_config``.

    ``pressure_percent`` is always written (0 for continuous mode), so JAATO, which reads a
    missing pressure as continuous mode, does what this policy says.
    """
    data: dict[str, Any] = {
        "type": config.strategy_name,
        "threshold_percent": config.threshold_percent,
        "target_percent": config.target_percent,
        "pressure_percent": config.pressure_percent if config.pressure_percent is not None else 0,
        "preserve_recent_turns": config.preserve_recent_turns,
        "notify_on_gc": config.notify_on_gc,
        "max_turns": config.max_turns,
        "auto_trigger": config.auto_trigger,
        "check_before_send": config.check_before_send,
        "pinned_turn_indices": list(config.pinned_turn_indices),
        "plugin_config": dict(config.plugin_config),
    }
    optional = {
        "pinned_message_ids": config.pinned_message_ids or None,
        "notification_template": config.notification_template,
        "noop_notification_template": config.noop_notification_template,
        "summarize_middle_turns": config.summarize_middle_turns,
        "max_summary_tokens": config.max_summary_tokens,
        "agent_name": config.agent_name,
    }
    data.update({key: value for key, value in optional.items() if value is not None})
    return data
