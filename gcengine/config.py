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

Notification templates are as lenient as JAATO's where that is harmless: every strategy
provides every variable JAATO's templates use (``NOTIFICATION_FIELD_MEANINGS``), and a template
that could not render is refused only when a notice will use it; otherwise it is a warning on
the policy (``GCConfig.warnings``). JAATO's own shipped files load as they are.

Keys starting with ``_`` (``_comment``, ``_docs``) are notes for people and are ignored.
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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

from gcengine._json import (
    UnreadableValue,
    describe_syntax_error,
    find_non_finite,
    loads_strict,
    storable_check,
)
from gcengine.errors import ConfigError, format_json_path

Strategy = Literal["gc_truncate", "gc_summarize", "gc_hybrid", "gc_budget", "gc_reachability"]


@dataclass(frozen=True)
class GCStrategyInfo:
    """A strategy as people choose it: its name, a short label and what it does in a line."""

    name: Strategy
    label: str
    description: str


GC_STRATEGIES: tuple[GCStrategyInfo, ...] = (
    GCStrategyInfo("gc_truncate", "truncate", "drop the oldest turns"),
    GCStrategyInfo("gc_summarize", "summarize", "replace old turns with a summary"),
    GCStrategyInfo("gc_hybrid", "hybrid", "drop ancient turns, summarize the middle"),
    GCStrategyInfo("gc_budget", "budget", "policy-aware, ephemeral content first"),
    GCStrategyInfo(
        "gc_reachability",
        "reachability",
        "stash what no later turn refers to, lowest score first",
    ),
)
STRATEGIES: tuple[Strategy, ...] = tuple(strategy.name for strategy in GC_STRATEGIES)

# What each variable of a notification template means, per strategy. Every strategy provides
# every variable any of JAATO's templates uses, so a JAATO gc.json written for one strategy
# (its shipped files pair the budget strategy with hybrid's template) renders under any.
NOTIFICATION_FIELD_MEANINGS: dict[str, dict[str, str]] = {
    "gc_truncate": {
        "removed": "conversation turns removed",
        "kept": "recent conversation turns kept",
        "truncated": "conversation turns removed (all of them are truncated)",
        "summarized": "0: truncation writes no summary",
        "items": "entries in the removal ledger (one a turn)",
        "freed": "tokens freed",
        "tokens_freed": "tokens freed",
    },
    "gc_summarize": {
        "removed": "conversation turns folded into the summary",
        "kept": "recent conversation turns kept",
        "truncated": "0: every turn that goes is summarized",
        "summarized": "conversation turns folded into the summary",
        "items": "entries in the removal ledger (one a turn)",
        "freed": "tokens freed, less the summary written",
        "tokens_freed": "tokens freed, less the summary written",
    },
    "gc_hybrid": {
        "removed": "conversation turns removed, truncated or summarized",
        "kept": "recent conversation turns kept",
        "truncated": "ancient conversation turns removed without a summary",
        "summarized": "middle conversation turns folded into the summary",
        "items": "entries in the removal ledger (one a turn)",
        "freed": "tokens freed, less the summary written",
        "tokens_freed": "tokens freed, less the summary written",
    },
    "gc_budget": {
        "removed": "conversation turns removed whole",
        "kept": "recent conversation turns kept whole",
        "truncated": "conversation turns removed whole",
        "summarized": "0: the budget strategy writes no summary",
        "items": "entries in the removal ledger (turns, tool exchanges, budget entries)",
        "freed": "tokens freed",
        "tokens_freed": "tokens freed",
    },
    "gc_reachability": {
        "removed": "conversation turns removed whole",
        "kept": "recent conversation turns kept whole",
        "truncated": "conversation turns removed whole",
        "summarized": "0: the reachability strategy writes no summary",
        "items": "segments removed (turns and tool exchanges)",
        "stashed": "segments put in the run's stash, which can be restored",
        "deleted": "segments deleted for good",
        "freed": "tokens freed",
        "tokens_freed": "tokens freed",
    },
}
# The placeholders each strategy's notification templates may use.
NOTIFICATION_FIELDS: dict[str, frozenset[str]] = {
    strategy: frozenset(meanings) for strategy, meanings in NOTIFICATION_FIELD_MEANINGS.items()
}
NOOP_NOTIFICATION_FIELDS = frozenset({"total", "preserve"})
# The strategies that say so when a collection was needed but could take nothing (JAATO's
# truncate, summarize and hybrid; its budget strategy stays silent).
NOOP_NOTICE_STRATEGIES = frozenset({"gc_truncate", "gc_summarize", "gc_hybrid"})

ENV_OVERRIDES = {
    "threshold_percent": "JAATO_GC_THRESHOLD",
    "target_percent": "JAATO_GC_TARGET",
    "pressure_percent": "JAATO_GC_PRESSURE",
}


class ReachabilityRoots(BaseModel):
    """What a reachability collection keeps and follows references from (``roots``).

    Roots are never removed, and everything they reach through references is *reachable*:
    kept while anything unreachable is left to take.
    """

    model_config = ConfigDict(frozen=True)

    current_task: bool = True
    recent_turns: int = 3
    pinned: bool = True
    locked: bool = True
    active_file_turns: int = 3


class ScoreWeights(BaseModel):
    """How the reachability score weighs its four inputs (``weights``); scaled to sum to 1,
    so every score is between 0 and 1."""

    model_config = ConfigDict(frozen=True)

    recency: float = 0.4
    importance: float = 0.3
    refcount: float = 0.2
    generation: float = 0.1


StashAction = Literal["stash", "delete", "auto"]
STASH_ACTIONS: tuple[StashAction, ...] = ("stash", "delete", "auto")


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
        default_factory=list,
        description="stable turn indices of the session as uploaded, from 0 (turn 1 is 0)",
    )
    pinned_message_ids: list[str] = Field(default_factory=list)
    notify_on_gc: bool = False
    notification_template: str | None = None
    noop_notification_template: str | None = None
    summarize_middle_turns: int | None = None
    max_summary_tokens: int | None = None
    roots: ReachabilityRoots = Field(default_factory=ReachabilityRoots)
    weights: ScoreWeights = Field(default_factory=ScoreWeights)
    action: StashAction = "stash"
    incremental: bool = False
    batch_size: int = 10
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


GCJsonFieldKind = Literal[
    "choice", "percent", "whole_number", "number", "flag", "text", "turn_list", "id_list", "object"
]
_ALL: tuple[Strategy, ...] = STRATEGIES
_SUMMARIZING: tuple[Strategy, ...] = ("gc_summarize", "gc_hybrid")
_REACHABILITY: tuple[Strategy, ...] = ("gc_reachability",)
# A batch of the seed's size: small enough to run after every turn.
BATCH_SIZE_RANGE = (5, 20)


@dataclass(frozen=True)
class GCJsonField:
    """One ``gc.json`` key, for whatever shows or edits a policy.

    ``strategies`` are the strategies whose collections or replays the key can change: every
    one for most keys, none for a key kept only for JAATO. ``kind`` is the kind of value (a
    control to edit it with): ``choice`` (one of ``choices``), ``percent`` (0-100),
    ``whole_number``, ``number``, ``flag`` (true or false), ``text``, ``turn_list`` (stable
    turn indices), ``id_list`` (message ids) or ``object`` (a JSON object, whose own keys
    ``GC_JSON_SUBFIELDS`` lists).
    """

    key: str
    label: str
    help: str
    strategies: tuple[Strategy, ...]
    kind: GCJsonFieldKind
    choices: tuple[str, ...] = ()

    @property
    def attribute(self) -> str:
        """The ``GCConfig`` attribute that holds the key's value (``plugin`` for ``type``)."""
        return "plugin" if self.key == "type" else self.key

    @property
    def default(self) -> Any:
        """The value a ``gc.json`` without the key gets: ``GCConfig``'s (a new list or dict
        each time)."""
        return GCConfig.model_fields[self.attribute].get_default(call_default_factory=True)


# In the order people read a policy: what runs, when, what it keeps, what it says.
GC_JSON_FIELDS: tuple[GCJsonField, ...] = (
    GCJsonField(
        "type",
        "Strategy",
        "Which strategy collects: "
        + "; ".join(f"{s.label}, {s.description}" for s in GC_STRATEGIES)
        + ".",
        _ALL,
        "choice",
        STRATEGIES,
    ),
    GCJsonField(
        "threshold_percent",
        "Threshold %",
        "Usage of the context window, in percent, at which a collection starts.",
        _ALL,
        "percent",
    ),
    GCJsonField(
        "target_percent",
        "Target %",
        "Usage, in percent, a collection brings the context down to; below the threshold. "
        "In continuous mode, any usage above it starts a collection.",
        _ALL,
        "percent",
    ),
    GCJsonField(
        "pressure_percent",
        "Pressure %",
        "Usage, in percent, at or above which preservable content may go too (budget only); "
        "0 means continuous mode: collect whenever usage passes the target, never taking "
        "preservable content.",
        _ALL,
        "percent",
    ),
    GCJsonField(
        "preserve_recent_turns",
        "Preserve recent turns",
        "How many of the latest conversation turns a collection never touches.",
        _ALL,
        "whole_number",
    ),
    GCJsonField(
        "max_turns",
        "Max turns",
        "A collection also starts once the session has this many turns; empty means no limit.",
        _ALL,
        "whole_number",
    ),
    GCJsonField(
        "auto_trigger",
        "Auto trigger",
        "Whether usage and the turn limit start collections by themselves; "
        "off, GC runs only when asked.",
        _ALL,
        "flag",
    ),
    GCJsonField(
        "check_before_send",
        "Check before send",
        "Whether usage is also checked before each message is sent, not only after each turn.",
        _ALL,
        "flag",
    ),
    GCJsonField(
        "pinned_turn_indices",
        "Pinned turns",
        "Turns a collection never touches, by position in the session as uploaded, counted "
        "from 0 as JAATO counts them: 0 is the turn JAATO labels turn_1.",
        _ALL,
        "turn_list",
    ),
    GCJsonField(
        "pinned_message_ids",
        "Pinned messages",
        "Messages whose turns a collection never touches, by message id.",
        _ALL,
        "id_list",
    ),
    GCJsonField(
        "notify_on_gc",
        "Notify on GC",
        "Whether a collection leaves a notice in the conversation saying what it removed.",
        _ALL,
        "flag",
    ),
    GCJsonField(
        "notification_template",
        "Notification template",
        "The notice's text, with the placeholders the strategy provides in braces; "
        "empty means the strategy's own wording.",
        _ALL,
        "text",
    ),
    GCJsonField(
        "noop_notification_template",
        "No-op notification template",
        "The notice's text when a collection was needed but every turn left is protected, "
        "with {total} and {preserve}; empty means JAATO's wording.",
        ("gc_truncate", "gc_summarize", "gc_hybrid"),
        "text",
    ),
    GCJsonField(
        "summarize_middle_turns",
        "Summarize middle turns",
        "How many turns before the preserved recent ones are summarized rather than dropped; "
        "0 only drops, empty means 10.",
        ("gc_hybrid",),
        "whole_number",
    ),
    GCJsonField(
        "max_summary_tokens",
        "Max summary tokens",
        "The most tokens a summary may take; empty means 600.",
        _SUMMARIZING,
        "whole_number",
    ),
    GCJsonField(
        "roots",
        "Roots",
        "What a reachability collection never removes and follows references from: the "
        "current task, the most recent turns, pinned turns, locked content and the latest "
        "reads of the files recent turns work on; an object whose keys are all optional.",
        _REACHABILITY,
        "object",
    ),
    GCJsonField(
        "weights",
        "Score weights",
        "How the reachability score weighs recency (in turns), kind, references and "
        "generation; an object of numbers from 0, scaled so every score is between 0 and 1.",
        _REACHABILITY,
        "object",
    ),
    GCJsonField(
        "action",
        "Action",
        "What a reachability collection does with what it removes: stash it (it can be "
        "restored), delete it, or auto (delete only unreachable segments scoring below "
        "0.2, stash the rest).",
        _REACHABILITY,
        "choice",
        STASH_ACTIONS,
    ),
    GCJsonField(
        "incremental",
        "Incremental",
        "Whether a reachability policy also collects a small batch after each turn once usage "
        "passes the target, besides the full collection at the threshold.",
        _REACHABILITY,
        "flag",
    ),
    GCJsonField(
        "batch_size",
        "Batch size",
        f"The most segments an incremental collection removes, from {BATCH_SIZE_RANGE[0]} to "
        f"{BATCH_SIZE_RANGE[1]}.",
        _REACHABILITY,
        "whole_number",
    ),
    GCJsonField(
        "agent_name",
        "Agent name",
        "The agent this policy is for, as JAATO names it; kept for JAATO, it changes nothing "
        "a strategy here collects.",
        (),
        "text",
    ),
    GCJsonField(
        "plugin_config",
        "Plugin options",
        "Further options handed to the strategy as they are, over the ones above "
        "(such as the summarizer).",
        _ALL,
        "object",
    ),
)

# Options inside ``plugin_config`` that the engine's own strategies read.
PLUGIN_CONFIG_FIELDS: tuple[GCJsonField, ...] = (
    GCJsonField(
        "summarizer",
        "Summarizer",
        "What writes summaries: extractive (the default: offline and deterministic) or llm "
        "(an OpenAI-compatible endpoint set where the engine runs).",
        _SUMMARIZING,
        "choice",
        ("extractive", "llm"),
    ),
)

# The keys of the ``object`` keys the engine reads, each with its own label, help and kind.
GC_JSON_SUBFIELDS: dict[str, tuple[GCJsonField, ...]] = {
    "roots": (
        GCJsonField(
            "current_task",
            "Current task",
            "Whether the latest user message and the original request are roots.",
            _REACHABILITY,
            "flag",
        ),
        GCJsonField(
            "recent_turns",
            "Recent turns",
            "How many of the latest turns are roots, whole.",
            _REACHABILITY,
            "whole_number",
        ),
        GCJsonField(
            "pinned",
            "Pinned",
            "Whether pinned turns and messages are roots (they are never removed either way).",
            _REACHABILITY,
            "flag",
        ),
        GCJsonField(
            "locked",
            "Locked",
            "Whether locked content is a root (it is never removed either way).",
            _REACHABILITY,
            "flag",
        ),
        GCJsonField(
            "active_file_turns",
            "Active file turns",
            "Files these many latest turns read, edit or name are active: the latest read of "
            "each part of them is a root; 0 means none.",
            _REACHABILITY,
            "whole_number",
        ),
    ),
    "weights": (
        GCJsonField(
            "recency",
            "Recency",
            "Weight of how few turns ago a segment was last referred to.",
            _REACHABILITY,
            "number",
        ),
        GCJsonField(
            "importance",
            "Kind",
            "Weight of the segment's kind: decisions first, logs last.",
            _REACHABILITY,
            "number",
        ),
        GCJsonField(
            "refcount",
            "References",
            "Weight of how many later segments refer to it (five or more count fully).",
            _REACHABILITY,
            "number",
        ),
        GCJsonField(
            "generation",
            "Generation",
            "Weight of being young: newer than 20 turns and not yet kept by a collection.",
            _REACHABILITY,
            "number",
        ),
    ),
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

_KNOWN_KEYS = frozenset({*(field.key for field in GC_JSON_FIELDS), "continuous_mode"})
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


def _number(
    values: dict[str, Any], name: str, *, nullable: bool = False, key: str | None = None
) -> float | None:
    """``values[name]`` as a number; an error names ``key`` (``name`` by default)."""
    value = values.get(name)
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(
            f"must be a number{' or null' if nullable else ''}, not {json.dumps(value)}",
            key or name,
        )
    return float(value)


def _whole(
    values: dict[str, Any],
    name: str,
    *,
    minimum: int,
    nullable: bool = False,
    key: str | None = None,
) -> int | None:
    value = values.get(name)
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ConfigError(
            f"must be a whole number{' or null' if nullable else ''}, not {json.dumps(value)}",
            key or name,
        )
    if value < minimum:
        raise ConfigError(f"must be at least {minimum}", key or name)
    return int(value)


def _flag(values: dict[str, Any], name: str, *, key: str | None = None) -> bool:
    value = values[name]
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false, not {json.dumps(value)}", key or name)
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
    checked.update(_reachability_options(values))
    config = GCConfig(**checked)
    _check_percentages(config)
    _check_templates(config)
    return config


def _reachability_options(values: dict[str, Any]) -> dict[str, Any]:
    """The reachability strategy's keys, each checked as strictly as the others: an unknown
    option of ``roots`` or ``weights`` is an error naming it (``roots.recent_turns``)."""
    checked: dict[str, Any] = {}
    if "roots" in values:
        roots = _options(values, "roots")
        for name in list(roots):
            key = f"roots.{name}"
            if name in ("recent_turns", "active_file_turns"):
                roots[name] = _whole(roots, name, minimum=0, key=key)
            else:
                roots[name] = _flag(roots, name, key=key)
        checked["roots"] = ReachabilityRoots(**roots)
    if "weights" in values:
        weights = _options(values, "weights")
        for name in weights:
            key = f"weights.{name}"
            weight = _number(weights, name, key=key)
            if weight is not None and weight < 0:
                raise ConfigError(f"must be a number from 0, not {weight:g}", key)
            weights[name] = weight
        checked["weights"] = ScoreWeights(**weights)
        if sum(checked["weights"].model_dump().values()) <= 0:
            raise ConfigError("at least one weight must be above 0", "weights")
    if "action" in values:
        action = values["action"]
        if action not in STASH_ACTIONS:
            raise ConfigError(f"must be stash, delete or auto, not {json.dumps(action)}", "action")
        checked["action"] = action
    if "incremental" in values:
        checked["incremental"] = _flag(values, "incremental")
    if "batch_size" in values:
        low, high = BATCH_SIZE_RANGE
        size = _whole(values, "batch_size", minimum=low)
        if size is not None and size > high:
            raise ConfigError(f"must be at most {high} segments", "batch_size")
        checked["batch_size"] = size
    return checked


def _options(values: dict[str, Any], key: str) -> dict[str, Any]:
    """An object key's options, without notes for people (``_comment``), refusing any the
    engine does not know."""
    value = values[key]
    if not isinstance(value, Mapping):
        raise ConfigError("must be an object", key)
    known = [field.key for field in GC_JSON_SUBFIELDS[key]]
    options = {}
    for name, option in value.items():
        if not isinstance(name, str) or name.startswith("_"):
            continue
        if name not in known:
            raise ConfigError(f"unknown option (known: {', '.join(known)})", f"{key}.{name}")
        options[name] = option
    return options


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
    checks = (
        (
            "notification_template",
            config.notification_template,
            NOTIFICATION_FIELDS[config.plugin],
            config.notifies,
        ),
        (
            "noop_notification_template",
            config.noop_notification_template,
            NOOP_NOTIFICATION_FIELDS,
            config.notifies and config.plugin in NOOP_NOTICE_STRATEGIES,
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


# The reachability strategy's keys, left out of a dump while they hold their defaults: JAATO
# does not read them, and a policy of another strategy never needs them.
_OMITTED_WHEN_DEFAULT = frozenset({"roots", "weights", "action", "incremental", "batch_size"})
# Keys JAATO's loader does not read, left out of a dump while they hold nothing.
_OMITTED_WHEN_EMPTY = frozenset(
    {
        "pinned_message_ids",
        "notification_template",
        "noop_notification_template",
        "summarize_middle_turns",
        "max_summary_tokens",
        "agent_name",
    }
)


def dump_gc_config(config: GCConfig) -> dict[str, Any]:
    """JAATO's flat shape, loadable by JAATO's own loader and by ``load_gc_config``, with the
    keys in the order of ``GC_JSON_FIELDS``.

    ``pressure_percent`` is always written (0 for continuous mode), so JAATO, which reads a
    missing pressure as continuous mode, does what this policy says.
    """
    data: dict[str, Any] = {}
    for field in GC_JSON_FIELDS:
        value = getattr(config, field.attribute)
        if field.key in _OMITTED_WHEN_EMPTY and value in (None, []):
            continue  # 0 and "" say something: summarize nothing, an empty notice
        if field.key in _OMITTED_WHEN_DEFAULT and value == field.default:
            continue
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
