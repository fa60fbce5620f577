"""A replay's pages: the usage-over-turns chart drawn server-side, its collections listed,
its figures, its title, and what it shows in sentences checked against its series: a replay
that never collected never reads as a sawtooth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gcengine
from jaato_web.dashboard import storage
from jaato_web.dashboard.presenters.layout import CHART_HEIGHT, CHART_WIDTH
from jaato_web.dashboard.presenters.policies import is_continuous, policy_name
from jaato_web.dashboard.presenters.quality import CLASS_LABELS
from jaato_web.dashboard.presenters.words import counted, percent_text, setting_text

# More points than pixels only slows the browser; peaks and troughs survive the thinning.
CHART_MAX_POINTS = 1800


@dataclass(frozen=True)
class ReplayChart:
    """Server-drawn SVG geometry for the usage-over-turns chart, plus its figures in words."""

    width: int
    height: int
    points: str
    threshold_y: float | None
    target_y: float | None
    pressure_y: float | None
    limit_y: float
    events: list[tuple[float, float]]
    y_ticks: list[tuple[float, int]]
    x_ticks: list[tuple[float, str]]
    mode: str
    collections: int
    peak_percent: float
    final_percent: float
    steps: int
    plugin: str = ""
    threshold_percent: float | None = None
    target_percent: float | None = None
    pressure_percent: float | None = None


# The axis names at most this many turns, spread from the first check point to the last.
TURN_TICKS = 5


def _turn_ticks(steps: Sequence[Sequence[Any]], width: int) -> list[tuple[float, str]]:
    """Where the axis names turns, at the check points the event marks use: up to
    ``TURN_TICKS`` evenly spread, each turn once (a replay of one turn has one tick)."""
    at = [i for i, step in enumerate(steps) if step[0] is not None]
    total = max(len(steps) - 1, 1)
    ticks: list[tuple[float, str]] = []
    named: set[int] = set()
    for q in range(TURN_TICKS):
        step = at[round(q * (len(at) - 1) / (TURN_TICKS - 1))] if at else None
        if step is None or steps[step][0] in named:
            continue
        named.add(steps[step][0])
        ticks.append((round(step / total * width, 1), str(gcengine.turn_number(steps[step][0]))))
    return ticks


def replay_chart(
    series: dict[str, Any], *, width: int = CHART_WIDTH, height: int = CHART_HEIGHT
) -> ReplayChart:
    """Usage after each check point, as a polyline: before and after a collection both show,
    so threshold mode draws a sawtooth and continuous mode a ripple."""
    limit = int(series["context_limit"]) or 1
    steps = series["steps"]
    values: list[float] = []
    for _, _, before, after, *_ in steps:
        values.append(before / limit * 100)
        if after != before:
            values.append(after / limit * 100)
    # The figures beside the chart are the series' own, not the drawn points': thinning a long
    # series keeps each stretch's highest point, which need not be where it ended.
    peak, final = max(values, default=0.0), values[-1] if values else 0.0
    values = _thinned(values, CHART_MAX_POINTS)
    top = max([100.0, *values])

    def y(percent: float) -> float:
        return round(height - percent / top * height, 1)

    count = max(len(values) - 1, 1)

    def x(index: int) -> float:
        return round(index / count * width, 1)

    points = " ".join(f"{x(i)},{y(v)}" for i, v in enumerate(values))
    event_marks: list[tuple[float, float]] = []
    total_steps = max(len(steps) - 1, 1)
    step_of_turn = {step[0]: i for i, step in enumerate(steps)}
    # A collection before a recorded call is marked at that call, not at its turn's end.
    step_of_call = {step[4]: i for i, step in enumerate(steps) if len(step) > 4 and step[4]}
    for event in series["events"]:
        step = step_of_call.get(event.get("call")) or step_of_turn.get(event["turn_index"], 0)
        event_marks.append(
            (round(step / total_steps * width, 1), y(event["tokens_after"] / limit * 100))
        )
    pressure = series.get("pressure_percent")
    return ReplayChart(
        width=width,
        height=height,
        points=points,
        threshold_y=None if series["continuous_mode"] else y(series["threshold_percent"]),
        target_y=y(series["target_percent"]),
        pressure_y=y(pressure) if pressure else None,
        limit_y=y(100.0),
        events=event_marks,
        y_ticks=[(y(p), p) for p in (0, 25, 50, 75, 100)],
        x_ticks=_turn_ticks(steps, width),
        mode="continuous" if series["continuous_mode"] else "threshold",
        collections=sum(1 for e in series["events"] if e["success"]),
        peak_percent=round(peak, 1),
        final_percent=round(final, 1),
        steps=len(steps),
        plugin=str(series.get("plugin") or ""),
        threshold_percent=None if series["continuous_mode"] else series["threshold_percent"],
        target_percent=series["target_percent"],
        pressure_percent=pressure or None,
    )


def _thinned(values: list[float], limit: int) -> list[float]:
    """Keep each bucket's minimum and maximum, in order, so no spike or dip disappears, and
    the last value, so the line ends where usage did."""
    if len(values) <= limit:
        return values
    bucket = -(-len(values) // (limit // 2))
    kept: list[float] = []
    for start in range(0, len(values), bucket):
        chunk = values[start : start + bucket]
        low, high = chunk.index(min(chunk)), chunk.index(max(chunk))
        last = len(chunk) - 1 if start + bucket >= len(values) else high
        kept.extend(chunk[i] for i in sorted({low, high, last}))
    return kept


@dataclass(frozen=True)
class ReplayEvent:
    turn_index: int | None
    point: str
    reason: str
    success: bool
    items: int
    tokens_before: int
    tokens_after: int
    error: str
    retention: gcengine.AnchorRetention | None = None
    gate_failures: tuple[str, ...] = ()


# A long replay collects hundreds of times; the page lists the first ones and counts the rest.
REPLAY_EVENTS_SHOWN = 200


def replay_events(
    series: dict[str, Any],
    gates: Mapping[gcengine.AnchorClass, float],
    limit: int = REPLAY_EVENTS_SHOWN,
) -> list[ReplayEvent]:
    """The first events of a replay, each with its anchor retention and the classes it leaves
    under the project's gates (a series stored before scoring has none)."""
    events = []
    for e in series["events"][:limit]:
        retention = storage.retention_read(e.get("retention"))
        failures = gcengine.gate_failures(retention, gates) if retention else []
        events.append(
            ReplayEvent(
                turn_index=e["turn_index"],
                point=f"before call {e['call']:,}"
                if e.get("call")
                else str(e["point"]).replace("_", " "),
                reason=str(e["reason"]).replace("_", " "),
                success=bool(e["success"]),
                items=int(e["items"]),
                tokens_before=int(e["tokens_before"]),
                tokens_after=int(e["tokens_after"]),
                error=str(e.get("error") or ""),
                retention=retention,
                gate_failures=tuple(CLASS_LABELS[f.anchor_class] for f in failures),
            )
        )
    return events


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


def chart_title(policy: str, config: Mapping[str, Any]) -> str:
    """What a chart says drew it: ``Budget 80/60 v3, threshold mode``."""
    return f"{policy}, {'continuous' if is_continuous(config) else 'threshold'} mode"


def replay_title(replay: Any) -> str:
    """The title of a stored replay's chart (select ``policy_version__policy`` with it)."""
    return chart_title(policy_name(replay.policy_version, replay.policy_label), replay.config)


def no_turns(session: Any) -> str:
    """What a replay of a session without turns says instead of a chart."""
    if session.source_format == gcengine.SourceFormat.JAATO_BUDGET_SNAPSHOT:
        return "This session is a budget snapshot: it has no turns to replay."
    return "This session has no turns to replay."


@dataclass(frozen=True)
class ReplayStory:
    """What a replay shows, in sentences checked against its series."""

    sentences: list[str]
    over_limit: str


def replay_story(series: Mapping[str, Any], config: Mapping[str, Any]) -> ReplayStory:
    """Sentences for a replay's chart: how often GC ran, the peak and the end, the shape the
    chart draws (a sawtooth or a ripple only when the collections drew one), and how long
    usage stays over the window. ``config`` is the gc.json replayed."""
    steps, events = series["steps"], series["events"]
    if not steps:
        return ReplayStory([], "")
    limit = int(series["context_limit"]) or 1

    def percent(tokens: int) -> float:
        return tokens / limit * 100

    collections = [e for e in events if e["success"]]
    failures = [e for e in events if not e["success"]]
    peak = max(percent(s[2]) for s in steps)
    final = percent(steps[-1][3])
    checks = counted(len(steps), "check")
    if collections:
        ran = f"GC collected {_times(len(collections))} over {checks}"
        if failures:
            ran += f" and failed {_times(len(failures))}"
    elif failures:
        ran = f"GC failed {_times(len(failures))} over {checks} and never collected"
    else:
        ran = f"GC never ran over {checks}"
    sentences = [
        f"{ran}.",
        f"Usage peaked at {percent_text(peak)} of the context limit and ended at "
        f"{percent_text(final)}.",
    ]
    shape = _replay_shape(series, config, collections, failures)
    if shape:
        sentences.append(shape)
    over = [s for s in steps if s[3] > limit]
    over_text = ""
    if over:
        over_text = (
            f"Usage stays over the limit at {len(over):,} of {counted(len(steps), 'check')}; "
            f"peak {percent_text(peak)}."
        )
        stuck = [e for e in collections if e["tokens_after"] > limit]
        if stuck:
            over_text += (
                f" {counted(len(stuck), 'collection')} ended above the window: what was left "
                "is what this policy may not remove."
            )
        elif failures:
            over_text += " Collections that fail leave usage where it was."
    return ReplayStory(sentences, over_text)


def _times(count: int) -> str:
    return "once" if count == 1 else counted(count, "time")


def _incremental_shape(
    series: Mapping[str, Any],
    collections: Sequence[Mapping[str, Any]],
    batches: Sequence[Mapping[str, Any]],
) -> str:
    """A reachability policy in incremental mode: small batches after turns once usage passes
    the target, and (in threshold mode) a full collection whenever usage reaches the
    threshold."""
    target, threshold = series["target_percent"], series["threshold_percent"]
    full = len(collections) - len(batches)
    items = sum(int(e["items"]) for e in batches)
    sentence = (
        f"Once usage passed the {setting_text(target)} target, GC took a small batch after a turn "
        f"{_times(len(batches))} ({counted(items, 'segment')} in all)"
    )
    if full:
        at = f"at the {setting_text(threshold)} threshold"
        return f"{sentence}, and collected in full {_times(full)} {at}."
    if series["continuous_mode"]:
        return f"{sentence}."
    return f"{sentence}; usage never reached the {setting_text(threshold)} threshold."


def _replay_shape(
    series: Mapping[str, Any],
    config: Mapping[str, Any],
    collections: Sequence[Mapping[str, Any]],
    failures: Sequence[Mapping[str, Any]],
) -> str:
    limit = int(series["context_limit"]) or 1
    threshold = float(series["threshold_percent"])
    target = float(series["target_percent"])
    if not collections:
        if failures:
            return f"Every collection failed: {failures[0].get('error') or 'no reason given'}."
        if config.get("auto_trigger") is False:
            return "This policy never collects on its own (auto_trigger is off)."
        if series["continuous_mode"]:
            return f"Usage never rose above the {setting_text(target)} target."
        return f"Usage never reached the {setting_text(threshold)} threshold."
    batches = [e for e in collections if e["reason"] == "incremental"]
    if batches:
        return _incremental_shape(series, collections, batches)
    at_turn_limit = sum(1 for e in collections if e["reason"] == "turn_limit")
    by_usage = len(collections) - at_turn_limit
    turn_note = ""
    if at_turn_limit:
        turn_note = f" {counted(at_turn_limit, 'collection')} came at the turn limit (max_turns)."
    short = [e for e in collections if e["tokens_after"] > target / 100 * limit]
    if series["continuous_mode"]:
        if not short:
            return (
                f"GC collected whenever usage rose above the {setting_text(target)} target, "
                f"keeping it in a ripple just under it.{turn_note}"
            )
        return (
            f"GC collected whenever usage rose above the {setting_text(target)} target; "
            f"{len(short):,} of {counted(len(collections), 'collection')} could not bring it "
            f"back under the target.{turn_note}"
        )
    again = [e for e in collections if e["tokens_after"] >= threshold / 100 * limit]
    if by_usage >= 2 and not again:
        towards = "down to" if not short else "down towards"
        return (
            f"Each time usage reached the {setting_text(threshold)} threshold, GC brought it "
            f"{towards} the {setting_text(target)} target: the sawtooth.{turn_note}"
        )
    if len(collections) == 1:
        only = collections[0]
        why = (
            "at the turn limit (max_turns)"
            if only["reason"] == "turn_limit"
            else f"when usage reached the {setting_text(threshold)} threshold"
        )
        down_to = percent_text(only["tokens_after"] / limit * 100)
        return f"GC collected once, {why}, bringing usage down to {down_to}."
    if again:
        return (
            f"{len(again):,} of {counted(len(collections), 'collection')} left usage at or "
            f"above the {setting_text(threshold)} threshold, so GC collected again at the next "
            f"check.{turn_note}"
        )
    return turn_note.strip()
