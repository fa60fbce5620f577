"""GC policies: ``gc.json`` read strictly, written back in the shape JAATO loads.

Two shapes are read:

* JAATO's flat object: ``{"type": "budget", "threshold_percent": 80, ...}``; ``type`` names a
  strategy with or without the ``gc_`` prefix;
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

Notification templates are as lenient as JAATO's where that is harmless: every strategy
provides every variable JAATO's templates use (``NOTIFICATION_FIELD_MEANINGS``), and a template
that could not render is refused only when a notice will use it; otherwise it is a warning on
the policy (``GCConfig.warnings``). JAATO's own shipped files load as they are.

Keys starting with ``_`` (``_comment``, ``_docs``) are notes for people and are ignored.

Every key is declared once, where the strategies that read it are (``gcengine.strategies``):
``GCConfig`` is composed of those declarations, and the tables below, the loader's checks and
the dump are read from them.
"""

from __future__ import annotations

import json
import math
import os
import string
from collections.abc import Mapping
from copy import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, get_args

from pydantic import BaseModel, computed_field, field_validator
from pydantic.fields import FieldInfo

from gcengine._json import (
    UnreadableValue,
    describe_syntax_error,
    find_non_finite,
    loads_strict,
    storable_check,
)
from gcengine.errors import ConfigError, format_json_path
from gcengine.gc.strategy import NOOP_NOTIFICATION_FIELDS
from gcengine.strategies import (
    DEFAULT_STRATEGY,
    ENGINE_PLUGIN_NAMES,
    ENGINE_STRATEGIES,
    STRATEGY_SPECS,
    strategy_spec,
)
from gcengine.strategies.common import CommonKeys, TrailingKeys
from gcengine.strategies.hybrid import HybridKeys
from gcengine.strategies.keys import UNSET, KeyKind, KeySpec, checked, declared_keys, options_model
from gcengine.strategies.reachability import ReachabilityKeys
from gcengine.strategies.spec import StrategySpec
from gcengine.strategies.summarize import SummarizeKeys

GCStrategyInfo = StrategySpec
"""A strategy as people choose it (``name``, ``label``, ``description``): its spec."""
GC_STRATEGIES: tuple[StrategySpec, ...] = STRATEGY_SPECS

# What each variable of a notification template means, per strategy.
NOTIFICATION_FIELD_MEANINGS: dict[str, dict[str, str]] = {
    spec.name: dict(spec.placeholders) for spec in STRATEGY_SPECS
}
# The placeholders each strategy's notification templates may use.
NOTIFICATION_FIELDS: dict[str, frozenset[str]] = {
    strategy: frozenset(meanings) for strategy, meanings in NOTIFICATION_FIELD_MEANINGS.items()
}


class _StrategyKey(BaseModel):
    """The key naming the strategy, declared where the registry of strategies is known."""

    plugin: Annotated[
        str,
        KeySpec(
            "Strategy",
            "Which strategy collects: "
            + "; ".join(f"{s.label}, {s.description}" for s in STRATEGY_SPECS)
            + ".",
            "choice",
            choices=tuple(ENGINE_STRATEGIES),
        ),
    ] = DEFAULT_STRATEGY.name

    @field_validator("plugin")
    @classmethod
    def _a_strategy_of_the_engine(cls, value: str) -> str:
        if value not in ENGINE_STRATEGIES:
            raise ValueError(f"{value!r} is not a strategy (known: {', '.join(ENGINE_STRATEGIES)})")
        return value


# One typed model of every key: the strategy, the common keys, each strategy's own, the
# trailing two. pydantic orders fields from the last base to the first, so the bases are
# listed in reverse; that order is the one people read a policy in and a dump writes. A
# strategy with keys of its own adds its model here, or ``config.<key>`` is unknown to mypy
# and tests/engine/test_strategy_specs.py fails naming the model.
class GCConfig(
    TrailingKeys,
    ReachabilityKeys,
    SummarizeKeys,
    HybridKeys,
    CommonKeys,
    _StrategyKey,
):
    """A validated policy: which strategy runs, when, and what it must keep."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def continuous_mode(self) -> bool:
        return not self.pressure_percent

    @property
    def notifies(self) -> bool:
        """Whether collections leave a notice: ``notify_on_gc``, unless ``plugin_config``
        (handed to the strategy over it, as JAATO does) says otherwise."""
        return bool(self.plugin_config.get("notify_on_gc", self.notify_on_gc))

    @property
    def warnings(self) -> list[str]:
        """What in the policy will not work as written but does no harm as it stands: a
        notification template that could not render, while no notice uses it."""
        return [
            f"{key}: {problem}; it is never used while "
            + (
                "notify_on_gc is off"
                if not self.notifies
                else f"{self.plugin} writes no such notice"
            )
            for key, problem, used in template_checks(self)
            if not used
        ]

    @property
    def strategy_name(self) -> str:
        """The strategy without its ``gc_`` prefix, as JAATO's UI shows it."""
        return self.plugin.removeprefix("gc_")


@dataclass(frozen=True)
class GCJsonField:
    """One ``gc.json`` key, for whatever shows or edits a policy.

    ``strategies`` are the strategies whose collections or replays the key can change: every
    one for most keys, none for a key kept only for JAATO. ``kind`` is the kind of value (a
    control to edit it with): ``choice`` (one of ``choices``), ``percent`` (0-100),
    ``whole_number``, ``number``, ``flag`` (true or false), ``text``, ``turn_list`` (stable
    turn indices), ``id_list`` (message ids) or ``object`` (a JSON object, whose own keys
    ``GC_JSON_SUBFIELDS`` lists). ``minimum`` and ``maximum`` bound a number the loader
    accepts (None: no bound), ``unit`` is the word a message about the maximum uses.
    """

    key: str
    label: str
    help: str
    strategies: tuple[str, ...]
    kind: KeyKind
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    unit: str = ""

    @property
    def attribute(self) -> str:
        """The ``GCConfig`` attribute that holds the key's value (``plugin`` for ``type``)."""
        return "plugin" if self.key == "type" else self.key

    @property
    def default(self) -> Any:
        """The value a ``gc.json`` without the key gets: ``GCConfig``'s (a new list or dict
        each time)."""
        return GCConfig.model_fields[self.attribute].get_default(call_default_factory=True)

    @property
    def nullable(self) -> bool:
        """Whether the key may be null: an editor left empty writes null when the default is
        something else (no recent exchange count keeps recent turns whole, as JAATO does)."""
        return type(None) in get_args(GCConfig.model_fields[self.attribute].annotation)


def _readers(key: str) -> tuple[str, ...]:
    """The strategies that read ``key``."""
    return tuple(spec.name for spec in STRATEGY_SPECS if key in spec.reads)


def _row(key: str, spec: KeySpec, strategies: tuple[str, ...]) -> GCJsonField:
    return GCJsonField(
        key,
        spec.label,
        spec.help,
        strategies,
        spec.kind,
        spec.choices,
        spec.minimum,
        spec.maximum,
        spec.unit,
    )


# Every key GCConfig holds, by its gc.json name, with its field and declaration, in order.
_KEYS: dict[str, tuple[FieldInfo, KeySpec]] = {
    "type" if name == "plugin" else name: (field, spec)
    for name, field, spec in declared_keys(GCConfig)
}

# In the order people read a policy: what runs, when, what it keeps, what it says.
GC_JSON_FIELDS: tuple[GCJsonField, ...] = tuple(
    _row(key, spec, _readers(key)) for key, (_, spec) in _KEYS.items()
)

# Options inside ``plugin_config`` that the engine's own strategies read.
PLUGIN_CONFIG_FIELDS: tuple[GCJsonField, ...] = tuple(
    _row(option, spec, _readers(f"plugin_config.{option}"))
    for strategy in STRATEGY_SPECS
    for option, spec in strategy.options.items()
)

# The keys of the ``object`` keys the engine reads, each with its own label, help and kind.
GC_JSON_SUBFIELDS: dict[str, tuple[GCJsonField, ...]] = {
    key: tuple(_row(name, spec, _readers(key)) for name, _, spec in declared_keys(model))
    for key, (field, _) in _KEYS.items()
    if (model := options_model(field)) is not None
}

GC_JSON_ALIASES: dict[str, str] = {
    "plugin": "type",
    "config.type": "type",
    "config.plugin": "type",
    "continuous_mode": "pressure_percent",
    **{f"{key}.{field.key}": key for key, fields in GC_JSON_SUBFIELDS.items() for field in fields},
}
"""Other names a key goes by, with the ``GC_JSON_FIELDS`` key each stands for: ``plugin`` names
the strategy in the ``{"plugin", "config"}`` shape, ``continuous_mode: true`` means pressure 0,
a ``ConfigError`` about a strategy named inside ``config`` names ``config.type`` or
``config.plugin``, and one about an option of an object names it as ``roots.recent_turns``."""

ENV_OVERRIDES: dict[str, str] = {key: spec.env for key, (_, spec) in _KEYS.items() if spec.env}
"""The environment variables that fill in keys a ``gc.json`` does not set."""
PLUGIN_OPTION_KEYS: tuple[str, ...] = tuple(
    key for key, (_, spec) in _KEYS.items() if spec.plugin_option
)
"""The keys a plugin is started with (when they hold a value), as JAATO's loader hands them."""

_KNOWN_KEYS = frozenset({*(field.key for field in GC_JSON_FIELDS), "continuous_mode"})
_CONTINUOUS_MODE = KeySpec(
    "Continuous mode", "Whether the policy runs in continuous mode (pressure 0).", "flag"
)


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
    values: dict[str, Any] = {
        "plugin": _strategy(flat.pop("type", DEFAULT_STRATEGY.short_name), strategy_key)
    }
    for key, raw in flat.items():
        if key.startswith("_"):
            continue
        if key not in _KNOWN_KEYS:
            raise ConfigError(f"unknown key (known keys: {', '.join(sorted(_KNOWN_KEYS))})", key)
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
        found = find_non_finite(source)
        if found is not None:
            raise ConfigError(found[0], format_json_path(found[1]))
        try:
            storable_check(source)
        except UnreadableValue as error:
            raise ConfigError(error.reason, format_json_path(error.path)) from None
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
        return loads_strict(source)
    except json.JSONDecodeError as error:
        raise ConfigError(describe_syntax_error(error)) from None
    except UnicodeDecodeError:
        raise ConfigError("not valid JSON: not UTF-8 text") from None
    except UnreadableValue as error:
        raise ConfigError(error.reason, format_json_path(error.path)) from None


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
    return {"type": data.get("plugin", DEFAULT_STRATEGY.short_name), **inner}, "plugin"


def load_jaato_gc_config(
    source: str | bytes | os.PathLike[str] | Mapping[str, Any] | list[Any],
    *,
    env: Mapping[str, str] | None = None,
) -> tuple[GCConfig, bool]:
    """A ``gc.json`` that came from JAATO, read as JAATO means it, and whether that made it
    JAATO's rules (for the caller to say so).

    A file naming one of JAATO's own plugins (``truncate``, ``gc_budget``; or none, which is
    JAATO's truncate) runs JAATO's plugin in JAATO, so unless it sets ``rules`` (or
    ``plugin_config.rules``) it is read with ``rules: "jaato"``. A file naming the engine's
    plugin for JAATO (``gcengine_budget``) or the reachability strategy (JAATO has none) is
    read as ``load_gc_config`` reads it. Policies written in the engine or the dashboard are
    read with ``load_gc_config``: their JAATO names mean the engine's rules.

    A flat file leaving out ``pressure_percent`` or ``notify_on_gc`` means what JAATO's loader
    makes of it: continuous mode (no pressure) and notices on (``JAATO_LOADER_DEFAULTS``); the
    design-document shape is not JAATO's, so it is read as ``load_gc_config`` reads it."""
    load_gc_config(source, env=env)  # every refusal as the engine words it
    flat, shape = _flatten(_decode(source))
    if shape != "plugin":
        absent = {key: value for key, value in JAATO_LOADER_DEFAULTS.items() if key not in flat}
        if "continuous_mode" in flat:
            absent.pop("pressure_percent", None)
        flat = {**absent, **flat}
    jaatos = implies_jaatos_rules(flat)
    return load_gc_config({**flat, "rules": "jaato"} if jaatos else flat, env=env), jaatos


# What JAATO's gc.json loader gives a key a flat file leaves out, where it differs from the
# engine's default: no ``pressure_percent`` is continuous mode (0 and null are too), and
# notices are on (its plugins' own default is off; the loader's wins).
JAATO_LOADER_DEFAULTS: dict[str, Any] = {"pressure_percent": None, "notify_on_gc": True}


def implies_jaatos_rules(data: Mapping[str, Any]) -> bool:
    """Whether a ``gc.json`` from JAATO (either shape, valid or not) means JAATO's rules: it
    names one of JAATO's own plugins, or none (JAATO's truncate), and sets no ``rules``
    (``load_jaato_gc_config``)."""
    flat = flatten_gc_json(data)
    named = flat.get("type", DEFAULT_STRATEGY.short_name)
    options = flat.get("plugin_config")
    try:
        strategy = strategy_spec(_strategy(named, "type"))
    except ConfigError:
        return False
    return not (
        named in ENGINE_PLUGIN_NAMES
        or "rules" not in strategy.reads
        or "rules" in flat
        or (isinstance(options, Mapping) and "rules" in options)
    )


def flatten_gc_json(data: Mapping[str, Any]) -> dict[str, Any]:
    """The flat shape of either ``gc.json`` shape, as far as it can be read, without checking
    it: ``{"plugin": p, "config": {...}}`` is ``{"type": p, ...}``."""
    if "plugin" not in data and "config" not in data:
        return dict(data)
    inner = data.get("config")
    return {"type": data.get("plugin"), **(inner if isinstance(inner, Mapping) else {})}


def _strategy(value: Any, key: str) -> str:
    """The strategy a gc.json's ``type`` names: JAATO's names (``budget``, ``gc_budget``) or
    the name the engine registers it under for JAATO (``gcengine_budget``,
    ``gc_gcengine_budget``); all name the engine's strategy."""
    if isinstance(value, str):
        if value in ENGINE_PLUGIN_NAMES:
            return ENGINE_PLUGIN_NAMES[value].name
        name = value if value.startswith("gc_") else f"gc_{value}"
        if name in ENGINE_STRATEGIES:
            return name
    allowed = ", ".join(spec.short_name for spec in STRATEGY_SPECS)
    raise ConfigError(
        f"{value!r} is not a strategy ({allowed}, with or without the gc_ prefix, or "
        "gcengine_<strategy>)",
        key,
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


def _validated(values: dict[str, Any]) -> GCConfig:
    """Each key checked as its declaration says, in the table's order, then what holds
    between keys: percentages, the target below the threshold, templates that will render."""
    found: dict[str, Any] = {"plugin": values["plugin"]}
    for key, (field, spec) in _KEYS.items():
        if key in values and key != "type":
            value = checked(key, values[key], spec, field)
            if value is not UNSET:
                found[key] = value
        if key == "pressure_percent":
            _continuous_mode(values, found)
    if "plugin_config" in found:
        found["plugin_config"] = _plugin_config_checked(found["plugin_config"], found["plugin"])
        if "rules" in found["plugin_config"]:
            # Over the key, as JAATO's plugins read their options; held by the key alone, so
            # a policy says its rules in one place (``export_gc_json`` writes them back).
            found["rules"] = found["plugin_config"].pop("rules")
    config = GCConfig(**found)
    _check_percentages(config)
    _check_templates(config)
    return config


# The plugin_config options that mean something declared: a gc.json key (handed to the
# strategy over the key itself, as JAATO's loader does), and each strategy's own options.
_KEYS_AS_OPTIONS: dict[str, tuple[FieldInfo | None, KeySpec]] = {
    key: known for key, known in _KEYS.items() if key != "type"
}
_STRATEGY_OPTIONS: dict[str, dict[str, tuple[FieldInfo | None, KeySpec]]] = {
    reader: {
        option: (None, spec)
        for strategy in STRATEGY_SPECS
        for option, spec in strategy.options.items()
        if reader in _readers(f"plugin_config.{option}")
    }
    for reader in ENGINE_STRATEGIES
}


_JSON_VALUES = (str, int, float, bool, list, dict, type(None))


def _plugin_config_checked(options: dict[str, Any], plugin: str) -> dict[str, Any]:
    """``plugin_config`` with every option that names a key, or an option of the strategy
    ``plugin``, checked as that key is (``plugin_config.preserve_recent_turns`` must be a
    whole number from 0), bounds included; other options are handed to the strategy as
    they are."""
    declared = {**_KEYS_AS_OPTIONS, **_STRATEGY_OPTIONS.get(plugin, {})}
    checked_options = dict(options)
    for name, value in options.items():
        if name not in declared or not isinstance(value, _JSON_VALUES):
            continue  # an object no gc.json holds is passed in code (a summarizer object)
        key = f"plugin_config.{name}"
        field, spec = declared[name]
        value = checked(key, value, spec, field)
        _check_bounds(key, value, spec)
        if spec.kind in ("percent", "number", "whole_number"):
            checked_options[name] = value  # as the key holds it: 5.0 turns is 5
    return checked_options


def _continuous_mode(values: dict[str, Any], found: dict[str, Any]) -> None:
    """``pressure_percent`` 0 or null and ``continuous_mode: true`` say the same; a policy
    saying one and the opposite of the other is refused."""
    if "pressure_percent" in found:
        found["pressure_percent"] = found["pressure_percent"] or None
    if "continuous_mode" not in values:
        return
    continuous = checked("continuous_mode", values["continuous_mode"], _CONTINUOUS_MODE)
    if continuous and found.get("pressure_percent"):
        raise ConfigError(
            "continuous mode means no pressure threshold; set pressure_percent to 0 or drop it",
            "continuous_mode",
        )
    if continuous:
        found["pressure_percent"] = None
    elif "pressure_percent" in found and found["pressure_percent"] is None:
        raise ConfigError(
            "pressure_percent 0 or null means continuous mode; give a pressure above the target",
            "continuous_mode",
        )


def _check_bounds(key: str, value: Any, spec: KeySpec) -> None:
    """A percentage's bounds (checked once a policy is read, the environment's values too)."""
    low, high = spec.minimum, spec.maximum
    if spec.kind != "percent" or value is None or low is None or high is None:
        return
    if not low <= value <= high:
        raise ConfigError(f"must be between {low:g} and {high:g}, not {value:g}", key)


def _check_percentages(config: GCConfig) -> None:
    for key, (_, spec) in _KEYS.items():
        if spec.kind == "percent":
            _check_bounds(key, getattr(config, key), spec)
    if config.threshold_percent <= 0:
        raise ConfigError("must be above 0: at 0 every turn would collect", "threshold_percent")
    if config.target_percent >= config.threshold_percent:
        raise ConfigError(
            f"must be below threshold_percent "
            f"({config.target_percent:g} >= {config.threshold_percent:g}): "
            "a collection has to land below the level that triggers it",
            "target_percent",
        )


def _template_problem(template: str, allowed: frozenset[str], plugin: str) -> str | None:
    """What would stop ``template`` from rendering, or None."""
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as error:
        return f"is not a valid template: {error}"
    # Only plain names: "{items.x}" or "{0}" would fail when the notice is rendered.
    unknown = sorted(n for n in names if n not in allowed)
    if unknown:
        return (
            f"uses {{{unknown[0]}}}, which {plugin} does not provide (it provides "
            f"{', '.join('{' + a + '}' for a in sorted(allowed))})"
        )
    return None


def template_checks(config: GCConfig) -> list[tuple[str, str, bool]]:
    """Each notification template's problem: ``(key, problem, used)``, ``used`` saying whether
    the policy will ever render it (notices on, and a strategy that writes that notice)."""
    spec = strategy_spec(config.plugin)
    checks = (
        (
            "notification_template",
            config.notification_template,
            frozenset(spec.placeholders),
            config.notifies,
        ),
        (
            "noop_notification_template",
            config.noop_notification_template,
            NOOP_NOTIFICATION_FIELDS,
            config.notifies and spec.noop_notice,
        ),
    )
    found = []
    for key, template, allowed, used in checks:
        if template is None:
            continue
        problem = _template_problem(template, allowed, config.plugin)
        if problem is not None:
            found.append((key, problem, used))
    return found


def _check_templates(config: GCConfig) -> None:
    """A template is refused only when it will be used; otherwise it is a warning on the
    policy (``GCConfig.warnings``), as JAATO loads it."""
    for key, problem, used in template_checks(config):
        if used:
            raise ConfigError(problem, key)


def export_gc_json(config: GCConfig) -> dict[str, Any]:
    """The ``gc.json`` that makes JAATO run this policy as the engine runs it: ``type`` names
    the engine's plugin for JAATO (``gcengine_budget``; JAATO's own name would run JAATO's own
    plugin), and ``plugin_config.rules`` its rules (the plugin's options, which JAATO's loader
    hands it; it drops a top-level ``rules``), always written, since the plugin follows
    JAATO's rules when it is not told. JAATO needs the engine installed to load it; the
    engine and the dashboard read the file back as the same policy."""
    data = dump_gc_config(config)
    spec = strategy_spec(config.plugin)
    data["type"] = spec.jaato_plugin.removeprefix("gc_")
    data.pop("rules", None)
    if "rules" in spec.reads:
        data["plugin_config"] = {**data.get("plugin_config", {}), "rules": config.rules}
    return data


def dump_gc_config(config: GCConfig) -> dict[str, Any]:
    """JAATO's flat shape, loadable by JAATO's own loader and by ``load_gc_config``, with the
    keys in the order of ``GC_JSON_FIELDS``; a key JAATO's loader does not read is left out
    while it holds its default.

    ``pressure_percent`` is always written (0 for continuous mode), so JAATO, which reads a
    missing pressure as continuous mode, does what this policy says.
    """
    data: dict[str, Any] = {}
    for field in GC_JSON_FIELDS:
        value = getattr(config, field.attribute)
        if not _KEYS[field.key][1].written_when_default and value == field.default:
            continue  # 0 and "" say something: summarize nothing, an empty notice
        if isinstance(value, BaseModel):
            value = value.model_dump()
        elif field.key == "type":
            value = config.strategy_name
        elif field.key == "pressure_percent" and value is None:
            value = 0
        elif isinstance(value, list | dict):
            value = copy(value)
        data[field.key] = value
    return data
