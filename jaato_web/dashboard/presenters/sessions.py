"""A session's pages: its history (turns, messages and their parts, what pins them), where
its figures came from and how far the count here drifts from the agent's, and the agent's
own usage over its turns with the compactions it performed.

The history is flattened once, when a session is stored, so the history view is made from a
page of stored turn rows, never from the whole session.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gcengine
from jaato_web.dashboard import storage
from jaato_web.dashboard.presenters.layout import CHART_HEIGHT, CHART_WIDTH
from jaato_web.dashboard.presenters.words import counted, turn_ranges

# Parts a reader opens on demand; plain text and media descriptions are shown as they are.
FOLDED_PARTS = {
    "function_call": "Tool call",
    "function_response": "Tool result",
    "thought": "Reasoning",
    "opaque": "Other content",
}


@dataclass(frozen=True)
class PartView:
    kind: str
    heading: str
    text: str
    clipped: bool
    length: int
    folded: bool


@dataclass(frozen=True)
class MessageView:
    message_id: str
    role: str
    kind: str
    tokens: int
    policy: str
    pinned: bool
    removed: bool
    parts: list[PartView]
    preview: str = ""
    counted_by: str = ""

    @property
    def recorded(self) -> bool:
        """Whether the figure is the agent's own (else it was counted here)."""
        return self.counted_by in ("recorded", "")


@dataclass(frozen=True)
class TurnView:
    """A stored turn as the history and the diff draw it."""

    position: int
    turn_index: int | None
    kind: str
    tokens: int
    policy: str
    pinned: bool
    tool_calls: int
    preview: str
    messages: list[MessageView]
    state: str = "kept"
    summaries_before: list[Any] = field(default_factory=list)
    pinned_here: bool = False
    pinned_by_policy: bool = False

    @property
    def number(self) -> int | None:
        """The turn's number as JAATO's logs show it (from 1); None for an inserted summary."""
        return gcengine.turn_number(self.turn_index) if self.turn_index is not None else None

    @property
    def policy_mix(self) -> list[tuple[str, int]]:
        """Tokens by policy, most protective first, when the turn's messages differ: the turn
        goes whole only as its most protective policy allows, while its ephemeral tool
        exchanges may go on their own."""
        mix: dict[str, int] = {}
        for message in self.messages:
            mix[message.policy] = mix.get(message.policy, 0) + message.tokens
        if len(mix) < 2:
            return []
        return [(p.value, mix[p.value]) for p in gcengine.POLICY_ORDER if p.value in mix]

    @property
    def removed_count(self) -> int:
        return sum(1 for m in self.messages if m.removed)


def part_view(part: storage.StoredPart) -> PartView:
    kind = part["type"]
    title = part["title"]
    label = FOLDED_PARTS.get(kind, "")
    heading = f"{label}: {title}" if label and title and kind != "thought" else label
    return PartView(
        kind=kind,
        heading=heading,
        text=part["text"],
        clipped=part["clipped"],
        length=part["length"],
        folded=kind in FOLDED_PARTS,
    )


def message_views(
    messages: Iterable[storage.StoredMessage],
    pinned_ids: Iterable[str] = (),
    removed_ids: Iterable[str] = (),
) -> list[MessageView]:
    """Stored message rows (``SessionTurn.messages``) ready for the template."""
    pinned, removed = set(pinned_ids), set(removed_ids)
    views = []
    for m in messages:
        parts = [part_view(p) for p in m["parts"]]
        views.append(
            MessageView(
                message_id=m["id"],
                role=m["role"],
                kind=m["kind"],
                tokens=m["tokens"],
                policy=m["policy"],
                pinned=m["id"] in pinned,
                removed=m["id"] in removed,
                parts=parts,
                preview=_message_preview(parts),
                counted_by=m.get("counted_by", ""),
            )
        )
    return views


def _message_preview(parts: list[PartView]) -> str:
    """One line for the diff: the first text, else what the first folded part is."""
    for part in parts:
        if not part.folded and part.text:
            return storage.preview_of(part.text)
    return "; ".join(p.heading for p in parts if p.heading)


def removed_message_views(
    messages: Iterable[storage.StoredMessage], ids: Iterable[str]
) -> list[MessageView]:
    """The messages of a turn that a ledger item took away."""
    wanted = set(ids)
    return message_views((m for m in messages if m["id"] in wanted), removed_ids=wanted)


Pins = tuple[Collection[int], Collection[str]]
"""Pinned turns (stable indices) and message ids."""


@dataclass(frozen=True)
class PinSummary:
    """What a set of pins holds, in words for a page."""

    turns: list[int]
    message_ids: list[str]

    def __bool__(self) -> bool:
        return bool(self.turns or self.message_ids)

    @property
    def text(self) -> str:
        """In JAATO's numbering (turn 1 first), as every page names turns."""
        parts = []
        if self.turns:
            noun = "turn" if len(self.turns) == 1 else "turns"
            numbers = [gcengine.turn_number(index) for index in self.turns]
            parts.append(f"{noun} {turn_ranges(numbers)}")
        if self.message_ids:
            count = len(self.message_ids)
            parts.append(f"{count:,} message{'' if count == 1 else 's'}")
        return " and ".join(parts)


def pin_summary(turns: Collection[int], message_ids: Collection[str]) -> PinSummary:
    return PinSummary(sorted(turns), sorted(message_ids))


def turn_views(
    turns: Iterable[Any], *, session_pins: Pins = ((), ()), policy_pins: Pins = ((), ())
) -> list[TurnView]:
    """Stored turns (anything with the ``SessionTurn`` fields), marked with what pins them:
    this session's own pins, and the pins of the project's default policy, which apply to
    every session it runs on."""
    here_turns, here_ids = set(session_pins[0]), set(session_pins[1])
    policy_turns, policy_ids = set(policy_pins[0]), set(policy_pins[1])
    views = []
    for turn in turns:
        messages = message_views(turn.messages, here_ids | policy_ids)
        views.append(
            TurnView(
                position=turn.position,
                turn_index=turn.turn_index,
                kind=turn.kind,
                tokens=turn.tokens,
                policy=turn.policy,
                pinned=turn.turn_index in here_turns | policy_turns
                or any(m.pinned for m in messages),
                tool_calls=turn.tool_calls,
                preview=turn.preview,
                messages=messages,
                pinned_here=turn.turn_index in here_turns,
                pinned_by_policy=turn.turn_index in policy_turns
                or any(m.message_id in policy_ids for m in messages),
            )
        )
    return views


@dataclass(frozen=True)
class DriftLine:
    label: str
    message_id: str
    recorded: int
    counted: int
    difference: int


@dataclass(frozen=True)
class DriftView:
    """The stored drift summary, with the differences worked out for the page."""

    counter: str
    has_figures: bool
    compared_messages: int
    recorded_total: int
    counted_total: int
    difference: int
    difference_percent: float | None
    provider_prompt_tokens: int | None
    counted_context_tokens: int
    provider_difference: int | None
    largest: list[DriftLine]
    figures: FigureSources
    window_source: str = ""
    """Why the window is what it is, in words (empty for a session stored without it)."""
    local_estimate: dict[str, Any] | None = None
    """A scaled session's history counted locally beside its scaled figure (``drift_record``)."""


@dataclass(frozen=True)
class FigureSources:
    """Where a session's figures came from: recorded by the agent or counted here. Stored
    before this was recorded, a session says nothing (``known`` is False)."""

    known: bool = False
    snapshot: bool = False
    recorded_messages: int = 0
    recorded_tokens: int = 0
    counted_messages: int = 0
    counted_tokens: int = 0
    recorded_other: int = 0
    counted_other: int = 0
    exact: bool = True
    notes: list[str] = field(default_factory=list)
    accounting_turns: int = 0
    accounting_prompt: int = 0
    accounting_output: int = 0
    recorded_calls: int = 0


def figure_sources(stored: dict[str, Any] | None) -> FigureSources:
    if not stored:
        return FigureSources()
    accounting = stored.get("turn_accounting") or {}
    return FigureSources(
        known=True,
        snapshot=bool(stored.get("snapshot")),
        recorded_messages=int(stored.get("recorded_messages") or 0),
        recorded_tokens=int(stored.get("recorded_tokens") or 0),
        counted_messages=int(stored.get("counted_messages") or 0),
        counted_tokens=int(stored.get("counted_tokens") or 0),
        recorded_other=int(stored.get("recorded_other") or 0),
        counted_other=int(stored.get("counted_other") or 0),
        exact=bool(stored.get("exact", True)),
        notes=[str(n) for n in stored.get("notes") or []],
        accounting_turns=int(accounting.get("turns") or 0),
        accounting_prompt=int(accounting.get("prompt") or 0),
        accounting_output=int(accounting.get("output") or 0),
        recorded_calls=int(stored.get("recorded_calls") or 0),
    )


def drift_view(drift: dict[str, Any], counter: str) -> DriftView:
    compared = int(drift.get("compared_messages") or 0)
    provider = drift.get("provider_prompt_tokens")
    counted_context = int(drift.get("counted_context_tokens") or 0)
    return DriftView(
        figures=figure_sources(drift.get("figures")),
        counter=str(drift.get("counter") or counter),
        has_figures=bool(compared or provider is not None),
        compared_messages=compared,
        recorded_total=int(drift.get("recorded_total") or 0),
        counted_total=int(drift.get("counted_total") or 0),
        difference=int(drift.get("difference") or 0),
        difference_percent=drift.get("difference_percent"),
        provider_prompt_tokens=provider,
        counted_context_tokens=counted_context,
        provider_difference=None if provider is None else counted_context - int(provider),
        largest=[
            DriftLine(
                label=str(m.get("label") or ""),
                message_id=str(m.get("message_id") or ""),
                recorded=int(m["recorded"]),
                counted=int(m["counted"]),
                difference=int(m["counted"]) - int(m["recorded"]),
            )
            for m in drift.get("largest") or []
        ],
        window_source=str(drift.get("window_source") or ""),
        local_estimate=drift.get("local_estimate") or None,
    )


@dataclass(frozen=True)
class CallRow:
    """One model call in the session page's table of calls (``storage.recorded_calls``), and
    the compaction just before it, if the agent compacted there."""

    number: int
    turn: int | None
    input: int
    uncached: int | None
    cache_read: int | None
    cache_write: int | None
    output: int | None
    compaction_before: dict[str, Any] | None = None


def call_rows(
    rows: Iterable[Sequence[int | None]], compactions: Iterable[dict[str, Any]]
) -> list[CallRow]:
    """The table's rows for stored calls, each after a compaction carrying it."""
    before_call = {
        int(c["after_call"]) + 1: c for c in compactions if c.get("after_call") is not None
    }
    return [
        CallRow(
            number=int(row[0] or 0),
            turn=row[1],
            input=int(row[2] or 0),
            uncached=row[3],
            cache_read=row[4],
            cache_write=row[5],
            output=row[6],
            compaction_before=before_call.get(int(row[0] or 0)),
        )
        for row in rows
    ]


@dataclass(frozen=True)
class CompactionMark:
    """A compaction drawn on the usage chart: the drop from its size before to its size
    after, where it fell ("call 139", "turn 12"), and its sizes written beside the drop on the
    side with room for them."""

    x: float
    y_before: float
    y_after: float
    where: str
    sizes: str
    label_x: float
    label_anchor: str


@dataclass(frozen=True)
class UsageChart:
    """The context size the agent's model calls reported, call by call (turn by turn for a
    session stored before its calls were), with the compactions the agent performed marked on
    it and their sizes before and after, and (when a policy was replayed on the same history)
    the size that policy would have kept: server-drawn geometry and the facts in words."""

    width: int
    height: int
    agent_points: str
    policy_points: str
    limit_y: float | None
    compactions: list[CompactionMark]
    y_ticks: list[tuple[float, str]]
    x_ticks: list[tuple[float, str]]
    sentences: list[str]
    per_call: bool = False


# Where the usage chart's axis names turns or calls, as shares of the way from first to last.
X_TICKS = (0, 0.5, 1)
# Points of the agent's curve drawn at most: each bucket keeps its lowest and highest call, so
# no drop or peak is lost.
USAGE_POINTS = 2000


def _thinned_points(points: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if len(points) <= USAGE_POINTS:
        return points
    bucket = -(-len(points) // (USAGE_POINTS // 2))
    kept: list[tuple[int, int]] = []
    for start in range(0, len(points), bucket):
        chunk = points[start : start + bucket]
        low = min(range(len(chunk)), key=lambda i: chunk[i][1])
        high = max(range(len(chunk)), key=lambda i: chunk[i][1])
        kept.extend(chunk[i] for i in sorted({low, high}))
    return kept


def _sizes(mark: dict[str, Any]) -> str:
    before, after = mark.get("tokens_before"), mark.get("tokens_after")
    return f"{before:,} → {after:,}" if before is not None and after is not None else ""


def _compaction_sentence(mark: dict[str, Any], per_call: bool) -> str:
    before, after = mark.get("tokens_before"), mark.get("tokens_after")
    if before is not None and after is not None:
        figures = f" from {before:,} to {after:,} tokens"
        if mark.get("tokens_after_source") == "first call after":
            figures += f" (the size after it is the input of call {mark['after_call'] + 1:,})"
    else:
        figures = " (the file records no sizes for it)"
    trigger = f" ({mark['trigger']})" if mark.get("trigger") else ""
    where = f", after call {mark['after_call']:,}," if per_call else ""
    return f"The agent compacted before turn {mark['before_turn']}{trigger}{where}{figures}."


def usage_chart(
    state: dict[str, Any],
    limit: int,
    *,
    series: dict[str, Any] | None = None,
    policy_label: str = "",
    compaction_id: str = "",
) -> UsageChart | None:
    """The chart of a session's ``agent_state``: per model call when it holds the calls
    (``storage.recorded_calls``; x is the call, y the input the provider recorded), else per
    turn from the older ``usage`` points ([turn number, prompt tokens] per call). ``series`` is
    a replay (``storage.replay_series``) drawn over the same calls or turns, and
    ``compaction_id`` the compaction it was replayed before: the chart ends there."""
    compactions = list(state.get("compactions") or [])
    chosen = next((c for c in compactions if c["id"] == compaction_id), None)
    per_call = "calls" in state and all(c.get("after_call") is not None for c in compactions)
    if per_call:
        last = chosen["after_call"] if chosen else None
        calls = [
            (int(row[0]), int(row[2])) for row in state["calls"] if last is None or row[0] <= last
        ]
        marks = [c for c in compactions if last is None or c["after_call"] <= last]
        positions = [(float(c["after_call"]) + 0.5, c) for c in marks]
        steps = _steps_by_call(series)
        where = "call"
    else:
        up_to_turn = chosen.get("before_turn") if chosen else None
        calls = [
            (int(t), int(tokens))
            for t, tokens in state.get("usage") or []
            if up_to_turn is None or t <= up_to_turn
        ]
        marks = [
            c
            for c in compactions
            if c.get("before_turn") is not None
            and (up_to_turn is None or c["before_turn"] <= up_to_turn + 1)
        ]
        positions = [(float(c["before_turn"]), c) for c in marks]
        steps = _steps_by_turn(series)
        where = "turn"
    chart = _drawn(
        _thinned_points(calls),
        steps,
        positions,
        limit,
        where=where,
        per_call=per_call,
        series=series,
        policy_label=policy_label,
    )
    if chart is not None and per_call and series is not None and calls:
        chart.sentences.append(_at_last_call(calls[-1], series, policy_label))
    return chart


def _at_last_call(agent: tuple[int, int], series: dict[str, Any], policy_label: str) -> str:
    """The agent's recorded input at the last call drawn beside the policy's context there
    (after any collection the policy made before it)."""
    number, tokens = agent
    policy = next(
        (step[3] for step in series["steps"] if len(step) > 4 and step[4] == number), None
    )
    said = f"At call {number:,} the agent sent {tokens:,} tokens (as the provider counted)"
    if policy is None:
        return f"{said}; the replay made no check at that call."
    return (
        f"{said}; under {policy_label or 'this policy'} the context there would have held "
        f"{policy:,} tokens (counted here)."
    )


def _steps_by_turn(series: dict[str, Any] | None) -> list[tuple[float, int]]:
    steps: list[tuple[float, int]] = []
    for turn, _, before, after, *_ in series["steps"] if series else []:
        if turn is not None:
            steps.append((gcengine.turn_number(turn), before))
            steps.append((gcengine.turn_number(turn), after))
    return steps


def _steps_by_call(series: dict[str, Any] | None) -> list[tuple[float, int]]:
    """A replay's checks placed on the calls: one before a call at that call, one at a turn's
    start or end at the call before it (at the first call, before any was made)."""
    steps: list[tuple[float, int]] = []
    rows = series["steps"] if series else []
    made = float(next((row[4] for row in rows if len(row) > 4 and row[4] is not None), 0))
    for _, _, before, after, *rest in rows:
        call = rest[0] if rest else None
        if call is not None:
            made = float(call)
        steps.append((made, before))
        steps.append((made, after))
    return steps


def _drawn(
    calls: list[tuple[int, int]],
    steps: list[tuple[float, int]],
    marks: list[tuple[float, dict[str, Any]]],
    limit: int,
    *,
    where: str,
    per_call: bool,
    series: dict[str, Any] | None,
    policy_label: str,
) -> UsageChart | None:
    if not calls and not steps:
        return None
    xs = [float(t) for t, _ in calls] + [t for t, _ in steps] + [x for x, _ in marks]
    first, last = min(xs), max(xs)
    span = max(last - first, 1)
    top = max(
        [limit, *(tokens for _, tokens in calls), *(tokens for _, tokens in steps)]
        + [int(c.get("tokens_before") or 0) for _, c in marks]
    )
    top = int(max(top, 1))
    width, height = CHART_WIDTH, CHART_HEIGHT

    def x(at: float) -> float:
        return round((at - first) / span * width, 1)

    def y(tokens: float) -> float:
        return round(height - tokens / top * height, 1)

    sentences = [_compaction_sentence(c, per_call) for _, c in marks]
    if steps:
        low = min(tokens for _, tokens in steps)
        high = max(tokens for _, tokens in steps)
        collections = sum(1 for e in series["events"] if e["success"]) if series else 0
        sentences.append(
            f"Under {policy_label or 'this policy'}, the same {where}s would have kept the "
            f"context between {low:,} and {high:,} tokens, with "
            f"{counted(collections, 'collection')}."
        )
    ticks = sorted({round(first + (last - first) * s) for s in X_TICKS})
    return UsageChart(
        width=width,
        height=height,
        agent_points=" ".join(f"{x(t)},{y(tokens)}" for t, tokens in calls),
        policy_points=" ".join(f"{x(t)},{y(tokens)}" for t, tokens in steps),
        limit_y=y(limit) if limit else None,
        compactions=[
            CompactionMark(
                x=x(at),
                y_before=y(c.get("tokens_before") or 0),
                y_after=y(c.get("tokens_after") or 0),
                where=f"call {c['after_call'] + 1:,}" if per_call else f"turn {c['before_turn']}",
                sizes=_sizes(c),
                label_x=x(at) + (6 if x(at) < width / 2 else -6),
                label_anchor="start" if x(at) < width / 2 else "end",
            )
            for at, c in marks
        ],
        y_ticks=[(y(top * share), f"{round(top * share):,}") for share in (0, 0.25, 0.5, 0.75, 1)],
        # The first, middle and last, each once: a chart of one turn names it once.
        x_ticks=[(x(t), f"{where} {t:,}") for t in ticks],
        sentences=sentences,
        per_call=per_call,
    )
