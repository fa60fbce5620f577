"""Policies shaped for pages and the API: field tables, differences, ledgers. No ORM.

A stored policy is the flat gc.json ``gcengine.dump_gc_config`` writes, so every function here
takes plain mappings and works the same on a stored version, an import and a form's config.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gcengine.gc import GCRemovalItem

# The gc.json keys in the order people read a policy: what runs, when, what it keeps.
FIELDS: list[tuple[str, str]] = [
    ("type", "Strategy"),
    ("threshold_percent", "Threshold %"),
    ("target_percent", "Target %"),
    ("pressure_percent", "Pressure %"),
    ("preserve_recent_turns", "Preserve recent turns"),
    ("max_turns", "Max turns"),
    ("auto_trigger", "Auto trigger"),
    ("check_before_send", "Check before send"),
    ("pinned_turn_indices", "Pinned turns"),
    ("pinned_message_ids", "Pinned messages"),
    ("notify_on_gc", "Notify on GC"),
    ("notification_template", "Notification template"),
    ("noop_notification_template", "No-op notification template"),
    ("summarize_middle_turns", "Summarize middle turns"),
    ("max_summary_tokens", "Max summary tokens"),
    ("agent_name", "Agent name"),
    ("plugin_config", "Plugin options"),
]
LABELS = dict(FIELDS)

STRATEGY_LABELS = {
    "gc_truncate": "truncate",
    "gc_summarize": "summarize",
    "gc_hybrid": "hybrid",
    "gc_budget": "budget",
}


def strategy_of(config: Mapping[str, Any]) -> str:
    """``gc_budget`` for ``budget`` or ``gc_budget``: stored configs use the short form."""
    name = str(config.get("type") or config.get("plugin") or "truncate")
    return name if name.startswith("gc_") else f"gc_{name}"


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
    return [k for k, _ in FIELDS] + sorted(present - set(LABELS))


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
    loaded: Mapping[str, Any], stored: Mapping[str, Any], yours: Mapping[str, Any]
) -> list[ConflictRow]:
    """The keys someone else changed since ``loaded``, or the user did, or both."""
    rows = []
    for key in _keys([loaded, stored, yours]):
        theirs = not same_value(key, loaded.get(key), stored.get(key))
        mine = not same_value(key, loaded.get(key), yours.get(key))
        if theirs or mine:
            rows.append(
                ConflictRow(
                    key=key,
                    label=LABELS.get(key, key),
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


# Message ids are long; a row shows the first few and says how many more there are.
IDS_SHOWN = 3


@dataclass(frozen=True)
class LedgerRow:
    seq: int
    reason: str
    source: str
    child_key: str
    turn_index: int | None
    tokens_freed: int
    message_ids: list[str]
    more_ids: int


def ledger_rows(items: Sequence[GCRemovalItem], limit: int) -> list[LedgerRow]:
    """The first ``limit`` items of a removal list, ready for a table."""
    return [
        LedgerRow(
            seq=seq,
            reason=str(item.reason),
            source=item.source.value,
            child_key=item.child_key or "",
            turn_index=item.turn_index,
            tokens_freed=item.tokens_freed,
            message_ids=list(item.message_ids[:IDS_SHOWN]),
            more_ids=max(len(item.message_ids) - IDS_SHOWN, 0),
        )
        for seq, item in enumerate(items[:limit])
    ]


def ledger_record(item: GCRemovalItem) -> dict[str, Any]:
    """One removal item as the API answers it."""
    return {
        "reason": str(item.reason),
        "source": item.source.value,
        "child_key": item.child_key,
        "turn_index": item.turn_index,
        "tokens_freed": item.tokens_freed,
        "message_ids": list(item.message_ids),
    }


@dataclass(frozen=True)
class ReplayFigures:
    """What a replay did, in numbers: the GC events a chart marks."""

    checks: int
    events: int
    collections: int
    failures: int
    items: int
    tokens_freed: int
    peak_percent: float


def replay_figures(series: Mapping[str, Any]) -> ReplayFigures:
    events = series["events"]
    limit = series["context_limit"] or 1
    return ReplayFigures(
        checks=len(series["steps"]),
        events=len(events),
        collections=sum(1 for e in events if e["success"]),
        failures=sum(1 for e in events if not e["success"]),
        items=sum(e["items"] for e in events if e["success"]),
        tokens_freed=sum(
            max(e["tokens_before"] - e["tokens_after"], 0) for e in events if e["success"]
        ),
        peak_percent=round(max((s[2] / limit * 100 for s in series["steps"]), default=0.0), 1),
    )
