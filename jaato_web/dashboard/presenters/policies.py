"""A policy's pages: its gc.json as table rows (one config, several side by side, the keys a
refused save would overwrite), its key figures for the list, the name a page gives it, and
what a preview of it says beside its figures.

The reasons a collection stops above its target are a policy's rules in words, so they live
here too, and a run's story tells them with the same sentences as a preview's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gcengine
from jaato_web.dashboard.presenters.words import (
    counted,
    listed,
    percent_text,
    setting_text,
    turn_numbers,
    turn_ranges,
)

# The gc.json keys in the order people read a policy, with their labels: the engine's table.
LABELS = {field.key: field.label for field in gcengine.GC_JSON_FIELDS}
STRATEGY_LABELS: dict[str, str] = {s.name: s.label for s in gcengine.GC_STRATEGIES}


def strategy_spec_of(name: str) -> gcengine.StrategySpec | None:
    """The engine's spec of the strategy named ``x`` or ``gc_x``; None for a plugin
    of another package, which the engine knows nothing about."""
    try:
        return gcengine.strategy_spec(name)
    except KeyError:
        return None


def strategy_of(config: Mapping[str, Any]) -> str:
    """The plugin name a flat gc.json's strategy goes by (``gc_x`` for ``x``; stored
    configs use the short form), as the engine's table of strategies names it."""
    name = config.get("type") or config.get("plugin")
    if not name:
        return gcengine.GCConfig().plugin  # a gc.json that names no strategy: the default
    spec = strategy_spec_of(str(name))
    return spec.name if spec is not None else str(name)


def shown(key: str, value: Any) -> str:
    """A gc.json value as a person reads it in a table cell."""
    if key == "pressure_percent" and not value:
        return "0 (continuous mode)"
    if key == "type":
        return STRATEGY_LABELS.get(strategy_of({"type": value}), str(value))
    if value is None and key in ("pinned_turn_indices", "pinned_message_ids", "plugin_config"):
        return "none"  # stored configs leave empty lists out
    if value is None:
        return "—"
    if key == "pinned_turn_indices" and isinstance(value, list) and value:
        return ", ".join(str(n) for n in turn_numbers(sorted(value)))  # as the session page
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True) if value else "none"
    return str(value)


def same_value(key: str, a: Any, b: Any) -> bool:
    """Whether two values of a gc.json key mean the same (0 and null pressure, pin order)."""
    if key == "pressure_percent":
        return (a or None) == (b or None)  # 0, null and absent all mean continuous mode
    if key == "type":
        return strategy_of({"type": a}) == strategy_of({"type": b})
    if key in ("pinned_turn_indices", "pinned_message_ids"):
        return sorted(a or []) == sorted(b or [])
    if key == "plugin_config":
        return (a or {}) == (b or {})
    return bool(a == b)


@dataclass(frozen=True)
class FieldRow:
    """One gc.json key across several configs; ``differs`` compares the two named columns."""

    key: str
    label: str
    values: list[str]
    differs: bool


def _keys(configs: Iterable[Mapping[str, Any]]) -> list[str]:
    present = {k for c in configs for k in c if not k.startswith("_")}
    return [*LABELS, *sorted(present - set(LABELS))]


def config_table(
    configs: Sequence[Mapping[str, Any]], compare: tuple[int, int] = (0, 1)
) -> list[FieldRow]:
    """Field-by-field rows for side-by-side configs; rows where the pair differs are marked."""
    first, second = compare
    rows = []
    for key in _keys(configs):
        values = [c.get(key) for c in configs]
        rows.append(
            FieldRow(
                key=key,
                label=LABELS.get(key, key),
                values=[shown(key, v) for v in values],
                differs=len(configs) > max(first, second)
                and not same_value(key, values[first], values[second]),
            )
        )
    return rows


def config_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The keys whose values differ, with both raw values (what the API answers)."""
    return [
        {"key": key, "a": a.get(key), "b": b.get(key)}
        for key in _keys([a, b])
        if not same_value(key, a.get(key), b.get(key))
    ]


@dataclass(frozen=True)
class ConflictRow:
    """One key of a refused save: as loaded, as stored now, as edited; who changed it."""

    key: str
    label: str
    loaded: str
    stored: str
    yours: str
    theirs: bool
    mine: bool


def conflict_rows(
    loaded: Mapping[str, Any],
    stored: Mapping[str, Any],
    yours: Mapping[str, Any],
    labels: Mapping[str, str] = LABELS,
) -> list[ConflictRow]:
    """The keys someone else changed since ``loaded``, or the user did, or both (``labels``
    names them: the gc.json's by default)."""
    rows = []
    for key in _keys([loaded, stored, yours]):
        theirs = not same_value(key, loaded.get(key), stored.get(key))
        mine = not same_value(key, loaded.get(key), yours.get(key))
        if theirs or mine:
            rows.append(
                ConflictRow(
                    key=key,
                    label=labels.get(key, key),
                    loaded=shown(key, loaded.get(key)),
                    stored=shown(key, stored.get(key)),
                    yours=shown(key, yours.get(key)),
                    theirs=theirs,
                    mine=mine,
                )
            )
    return rows


@dataclass(frozen=True)
class PolicySummary:
    """A policy's key figures for the list page."""

    strategy: str
    threshold: str
    target: str
    pressure: str
    continuous: bool
    preserve_recent_turns: Any
    pins: int


def policy_summary(config: Mapping[str, Any]) -> PolicySummary:
    pressure = config.get("pressure_percent")
    return PolicySummary(
        strategy=shown("type", config.get("type")),
        threshold=shown("threshold_percent", config.get("threshold_percent")),
        target=shown("target_percent", config.get("target_percent")),
        pressure=shown("pressure_percent", pressure) if pressure else "continuous",
        continuous=not pressure,
        preserve_recent_turns=config.get("preserve_recent_turns"),
        pins=len(config.get("pinned_turn_indices") or [])
        + len(config.get("pinned_message_ids") or []),
    )


PASTED_GC_JSON = "a pasted gc.json"


def policy_name(version: Any | None, label: str = "") -> str:
    """How a page names the policy a run or a replay used: ``Budget 80/60 v3``; the name it
    had when its version has been deleted since; or a pasted gc.json."""
    if version is not None:
        return f"{version.policy.name} v{version.number}"
    if label:
        return f"{label} (deleted since)"
    return PASTED_GC_JSON


def is_continuous(config: Mapping[str, Any]) -> bool:
    """Continuous mode: pressure 0, null or absent (the engine's ``GCConfig.continuous_mode``)."""
    return not config.get("pressure_percent")


# --- What a collection left, and why -----------------------------------------------------------
#
# Every sentence about a collection is made from the figures it describes, so a collection
# that stopped above its target says what it could not take, and by which of its rules.


@dataclass(frozen=True)
class Left:
    """What a collection left in context, by what may remove it."""

    locked: int
    preservable: int
    eligible: int


def _kept_by_rule(strategy: str, config: Mapping[str, Any], without_pressure: bool) -> list[str]:
    """What a strategy keeps whatever the usage, by its gc.json, in words."""
    kept = []
    recent = int(config.get("preserve_recent_turns") or 0)
    if recent:
        kept.append("the most recent turn" if recent == 1 else f"the {recent:,} most recent turns")
    turns = config.get("pinned_turn_indices") or []
    if turns:
        numbers = turn_ranges(turn_numbers(turns))
        kept.append(f"pinned turn{'' if len(turns) == 1 else 's'} {numbers}")
    ids = config.get("pinned_message_ids") or []
    if ids:
        kept.append(counted(len(ids), "pinned message"))
    if without_pressure:
        kept.append("every turn that holds preservable content")
    spec = strategy_spec_of(strategy)
    if spec is not None and spec.keeps:
        kept.append(spec.keeps)
    if spec is not None and spec.conversation_only:
        kept.append("everything outside the conversation")
    return kept


def kept_reason(
    strategy: str, config: Mapping[str, Any], details: Mapping[str, Any], left: Left | None
) -> str:
    """Why a collection stopped above its target: a strategy takes content until it reaches the
    target or runs out of what it may take, so what is left is what it may not take; told with
    the figures when they are known, and the rules of ``strategy`` that keep it.

    ``details`` are the engine's ``GCResult.details``: a strategy that takes preservable
    content (and turns holding some) only under pressure says there whether it was."""
    without_pressure = details.get("pressure_applied") is False
    preservable_note = ""
    if without_pressure and is_continuous(config):
        preservable_note = ", which it takes only under pressure, and continuous mode has none"
    elif without_pressure:
        pressure = setting_text(config["pressure_percent"])
        preservable_note = f", which it takes only at its {pressure} pressure threshold"
    kept = _kept_by_rule(strategy, config, without_pressure)
    rules = f": it keeps {listed(kept)}" if kept else ""
    if left is None:
        return f"What is left is what this policy may not remove{rules}."
    parts = []
    if left.locked:
        parts.append(f"{counted(left.locked, 'locked token')}, which no policy removes")
    if left.preservable:
        parts.append(f"{counted(left.preservable, 'preservable token')}{preservable_note}")
    if left.eligible:
        parts.append(f"{counted(left.eligible, 'eligible token')} it keeps by its rules{rules}")
    if not parts:
        return "What is left is what this policy may not remove."
    return f"What is left is what this policy may not remove: {'; '.join(parts)}."


@dataclass(frozen=True)
class OverLimit:
    """A collection that ends with the session still larger than its context window."""

    tokens_over: int
    percent: float
    limit: int
    reason: str
    after: str = "after this run"

    @property
    def sentence(self) -> str:
        return (
            f"Still over the window by {counted(self.tokens_over, 'token')} {self.after} "
            f"({percent_text(self.percent)} of {self.limit:,})."
        )


def over_limit(
    *, tokens_after: int | None, limit: int | None, reason: str, after: str = "after this run"
) -> OverLimit | None:
    if tokens_after is None or not limit or tokens_after <= limit:
        return None
    return OverLimit(tokens_after - limit, tokens_after / limit * 100, limit, reason, after)


@dataclass(frozen=True)
class PreviewStory:
    """What a preview says beside its figures: why nothing would go, why it would stop above
    the target, and whether the session would still be over its window."""

    nothing: str
    short_of_target: str
    over_limit: OverLimit | None


def preview_story(
    *,
    strategy: str,
    tokens_before: int,
    tokens_after: int,
    limit: int,
    items: int,
    config: Mapping[str, Any],
    details: Mapping[str, Any],
    left: Left | None,
) -> PreviewStory:
    def percent(tokens: int) -> float:
        return tokens / limit * 100 if limit else 0.0

    target = float(config.get("target_percent") or 0)
    before, after = percent(tokens_before), percent(tokens_after)
    reason = kept_reason(strategy, config, details, left)
    over = over_limit(
        tokens_after=tokens_after, limit=limit, reason=reason, after="after this collection"
    )
    told = "" if over is not None else f" {reason}"
    nothing = short = ""
    if items == 0 and before <= target:
        nothing = (
            f"Nothing to remove: usage is already at or below the policy's {setting_text(target)} "
            f"target ({percent_text(before)} of the window)."
        )
    elif items == 0:
        nothing = (
            f"Nothing to remove: usage is {percent_text(before)} of the window, above the "
            f"{setting_text(target)} target, and all of it is what this policy may not "
            f"remove.{told}"
        )
    elif after > target:
        short = (
            f"It would stop at {percent_text(after)} of the window, above the "
            f"{setting_text(target)} target.{told}"
        )
    return PreviewStory(nothing=nothing, short_of_target=short, over_limit=over)
