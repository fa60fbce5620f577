"""Engine values shaped into flat rows for storage and templates: no ORM, no requests.

The budget tree and the history are flattened once, when a session or a run is stored, so
pages page through rows instead of walking a 26,000-leaf tree per request.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gcengine
from jaato_web.dashboard import storage


@dataclass(frozen=True)
class LegendEntry:
    policy: str
    description: str


def policy_legend() -> list[LegendEntry]:
    """Every policy tier the tree can show, most protective first, with what it means."""
    return [LegendEntry(p.value, p.description) for p in gcengine.POLICY_ORDER]


def indicator(policy: str) -> str:
    try:
        return gcengine.GCPolicy(policy).indicator
    except ValueError:
        return "?"


@dataclass(frozen=True)
class TreeRow:
    """A node as the tree view draws it: its share of the session's tokens (None for what is
    not sent to the model: earlier reasoning), policy, whether it opens."""

    path: str
    depth: int
    label: str
    policy: str
    tokens: int
    share_percent: float | None
    child_count: int
    node_id: str = ""

    @property
    def sent(self) -> bool:
        return self.share_percent is not None


# Providers drop earlier turns' reasoning from the prompt, so it is not part of a session's
# tokens; the tree shows it apart, with no share of a total it is not in.
NOT_SENT = gcengine.InstructionSource.THINKING.value


def tree_rows(nodes: Sequence[Any], total_tokens: int) -> list[TreeRow]:
    """Tree nodes (``selectors.TreeNode``) ready for the template."""
    return [
        TreeRow(
            path=node.path,
            depth=node.depth,
            label=node.label,
            policy=node.policy,
            tokens=node.tokens,
            share_percent=None
            if node.path.split("/", 1)[0] == NOT_SENT
            else (node.tokens / total_tokens * 100 if total_tokens else 0.0),
            child_count=node.child_count,
            node_id=node.node_id,
        )
        for node in nodes
    ]


@dataclass(frozen=True)
class UsageBar:
    """A session's tokens against its context window, split by what GC may and may not touch.

    The bar is as long as the larger of the session and the window, so each part's width is
    its share of the session's tokens whatever the usage: at 800 % the parts keep their
    proportions, the window's edge is a mark at an eighth of the bar, and what lies beyond it
    is the overflow.
    """

    limit: int
    total: int
    locked: int
    preservable: int
    eligible: int
    other: int

    @property
    def percent(self) -> float:
        return self.total / self.limit * 100 if self.limit else 0.0

    @property
    def over_by(self) -> int:
        """Tokens over the window; 0 when the session fits."""
        return max(self.total - self.limit, 0)

    @property
    def _scale(self) -> int:
        return max(self.total, self.limit, 1)

    @property
    def limit_x(self) -> float:
        """Where the window ends, as a share of the bar's length."""
        return round(self.limit / self._scale * 100, 2)

    @property
    def placed(self) -> list[tuple[str, float, float]]:
        """The parts laid end to end as (name, x, width), shares of the bar's length."""
        placed, x = [], 0.0
        for name, tokens in (
            ("locked", self.locked),
            ("preservable", self.preservable),
            ("eligible", self.eligible),
            ("other", self.other),
        ):
            width = tokens / self._scale * 100
            placed.append((name, round(x, 2), round(width, 2)))
            x += width
        return placed

    def share(self, tokens: int) -> float:
        """A part's share of the session's tokens (never of the window)."""
        return tokens / self.total * 100 if self.total else 0.0

    @property
    def shares(self) -> dict[str, float]:
        return {
            "locked": self.share(self.locked),
            "preservable": self.share(self.preservable),
            "eligible": self.share(self.eligible),
        }


def usage_bar(*, limit: int, total: int, locked: int, preservable: int, eligible: int) -> UsageBar:
    return UsageBar(
        limit=limit,
        total=total,
        locked=locked,
        preservable=preservable,
        eligible=eligible,
        other=max(total - locked - preservable - eligible, 0),
    )


CHART_WIDTH = 900
CHART_HEIGHT = 260
# The policy pages draw their charts in a column about half as wide: drawn in a box of that
# size, the labels keep their size on screen instead of shrinking with the whole chart.
COMPACT_CHART_WIDTH = 440
COMPACT_CHART_HEIGHT = 190
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


def replay_chart(
    series: dict[str, Any], *, width: int = CHART_WIDTH, height: int = CHART_HEIGHT
) -> ReplayChart:
    """Usage after each check point, as a polyline: before and after a collection both show,
    so threshold mode draws a sawtooth and continuous mode a ripple."""
    limit = int(series["context_limit"]) or 1
    steps = series["steps"]
    values: list[float] = []
    for _, _, before, after in steps:
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
    step_of_turn = {turn: i for i, (turn, _, _, _) in enumerate(steps)}
    for event in series["events"]:
        step = step_of_turn.get(event["turn_index"], 0)
        event_marks.append(
            (round(step / total_steps * width, 1), y(event["tokens_after"] / limit * 100))
        )
    pressure = series.get("pressure_percent")
    turns = [t for t, _, _, _ in steps if t is not None]
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
        x_ticks=[
            (
                round(i / 4 * width, 1),
                str(gcengine.turn_number(turns[min(len(turns) - 1, i * len(turns) // 4)])),
            )
            for i in range(5)
        ]
        if turns
        else [],
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


LEDGER_COLUMNS = [
    "seq",
    "reason",
    "source",
    "child_key",
    "turn_index",
    "tokens_freed",
    "message_ids",
    # A reachability run's: whether anything kept refers to the item, its score, why it went,
    # and whether it was stashed or deleted (empty for other strategies).
    "reachable",
    "score",
    "explanation",
    "action",
]


def ledger_records(removals: Iterable[Any]) -> list[dict[str, Any]]:
    """The removal ledger as plain records (stored ``Removal`` rows in, JSON-ready dicts out)."""
    return [
        {
            "seq": r.seq,
            "reason": r.reason,
            "source": r.source,
            "child_key": r.child_key,
            "turn_index": r.turn_index,
            "tokens_freed": r.tokens_freed,
            "message_ids": list(r.message_ids),
            "reachable": r.reachable,
            "score": r.score,
            "explanation": r.explanation,
            "action": r.action,
        }
        for r in removals
    ]


def ledger_csv(records: list[dict[str, Any]]) -> str:
    """CSV for spreadsheets: message ids joined with spaces in one column."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(LEDGER_COLUMNS)
    for record in records:
        writer.writerow(
            [" ".join(record[c]) if c == "message_ids" else record[c] for c in LEDGER_COLUMNS]
        )
    return buffer.getvalue()


# --- Pages: the history, the diff, the summary chain -----------------------------------------

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


def diff_views(rows: Iterable[Any]) -> list[TurnView]:
    """``selectors.DiffRow``s: each turn before the run, with what went and what came in."""
    views = []
    for row in rows:
        turn = row.turn
        views.append(
            TurnView(
                position=turn.position,
                turn_index=turn.turn_index,
                kind=turn.kind,
                tokens=turn.tokens,
                policy=turn.policy,
                pinned=False,
                tool_calls=turn.tool_calls,
                preview=turn.preview,
                messages=message_views(turn.messages, removed_ids=row.removed_ids),
                state=row.state,
                summaries_before=summary_views(row.summaries_before),
            )
        )
    return views


def turn_ranges(indices: Iterable[int]) -> str:
    """``[1, 2, 3, 7, 9, 10]`` as ``1–3, 7, 9–10``."""
    spans: list[list[int]] = []
    for index in sorted(set(indices)):
        if spans and index == spans[-1][1] + 1:
            spans[-1][1] = index
        else:
            spans.append([index, index])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)


@dataclass(frozen=True)
class SummaryView:
    number: int | None
    message_id: str
    covers: str
    covers_count: int
    covers_summary: str
    summarizer: str
    tokens: int
    text: str
    written_by_run: bool


def summary_views(summaries: Iterable[Any]) -> list[SummaryView]:
    """Stored ``Summary`` rows: which turns and which earlier summary each one stands for."""
    views = []
    for s in summaries:
        earlier = s.covers_summary
        if isinstance(earlier, int):
            earlier_text = f"summary {earlier}"
        elif earlier:
            earlier_text = f"summary message {earlier}"
        else:
            earlier_text = ""
        views.append(
            SummaryView(
                number=s.number,
                message_id=s.message_id,
                # Stable turn indices, named in JAATO's numbering as every page names turns.
                covers=turn_ranges(
                    gcengine.turn_number(i) for i in s.covers_turns if i is not None
                ),
                covers_count=len(s.covers_turns),
                covers_summary=earlier_text,
                summarizer=s.summarizer,
                tokens=s.tokens,
                text=s.text,
                written_by_run=s.written_by_run,
            )
        )
    return views


# --- Pages: a run's figures and a replay's events ---------------------------------------------


@dataclass(frozen=True)
class FigureRow:
    label: str
    before: str
    after: str


def _number(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} %"


def run_figures(run: Any, session: Any) -> list[FigureRow]:
    """A stored run next to its session: tokens, share of the limit, turns, before and after."""
    return [
        FigureRow("Tokens", _number(run.tokens_before), _number(run.tokens_after)),
        FigureRow(
            "Share of the context limit",
            _percent(run.percent(run.tokens_before)),
            _percent(run.percent(run.tokens_after)),
        ),
        FigureRow("Turns", _number(session.turn_count), _number(run.turns_after)),
    ]


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
                point=str(e["point"]).replace("_", " "),
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
class Pager:
    """A page of a list and the query changes that reach its neighbours.

    ``previous`` and ``next`` are mappings for ``{% querystring request.GET pager.next %}``,
    which keeps the rest of the query (search, sort, other lists' pages); page 1 drops the
    parameter.
    """

    page: Any
    param: str
    previous: dict[str, int | None] | None
    next: dict[str, int | None] | None


def pager(page: Any, param: str) -> Pager:
    previous = next_ = None
    if page.has_previous():
        number = page.previous_page_number()
        previous = {param: number if number > 1 else None}
    if page.has_next():
        next_ = {param: page.next_page_number()}
    return Pager(page=page, param=param, previous=previous, next=next_)


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
    )


# --- Policies: field tables, differences, ledgers, replay figures ------------------------------

# The gc.json keys in the order people read a policy, with their labels: the engine's table.
LABELS = {field.key: field.label for field in gcengine.GC_JSON_FIELDS}
STRATEGY_LABELS: dict[str, str] = {s.name: s.label for s in gcengine.GC_STRATEGIES}


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
    verdict: gcengine.RemovalVerdict | None = None


def ledger_rows(items: Sequence[gcengine.GCRemovalItem], limit: int) -> list[LedgerRow]:
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
            verdict=item.verdict,
        )
        for seq, item in enumerate(items[:limit])
    ]


def ledger_record(item: gcengine.GCRemovalItem) -> dict[str, Any]:
    """One removal item as the API answers it."""
    return {
        "reason": str(item.reason),
        "source": item.source.value,
        "child_key": item.child_key,
        "turn_index": item.turn_index,
        "tokens_freed": item.tokens_freed,
        "message_ids": list(item.message_ids),
        "reachable": item.verdict.reachable if item.verdict else None,
        "score": item.verdict.score if item.verdict else None,
        "explanation": item.verdict.sentence if item.verdict else "",
        "action": item.verdict.action if item.verdict else "",
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


# --- Sentences: what a run, a preview and a replay did, in words true for their figures ------
#
# Every sentence a page writes about a collection is made here from the figures it describes,
# so a run that removed nothing never reads as one that removed content, and a replay that
# never collected never reads as a sawtooth.

PASTED_GC_JSON = "a pasted gc.json"


def counted(count: int, noun: str, plural: str = "") -> str:
    """``1 turn``, ``1,234 turns``: a count with its separators and the noun it agrees with."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def _pct(value: float) -> str:
    return f"{value:.1f} %"


def _setting(value: Any) -> str:
    """A percentage from a gc.json as its author wrote it: 60, 62.5."""
    return f"{float(value):g} %"


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
class Left:
    """What a collection left in context, by what may remove it."""

    locked: int
    preservable: int
    eligible: int


def run_left(run: Any) -> Left | None:
    """A stored run's ``Left``; None for runs stored before these figures were kept."""
    if run.locked_after is None:
        return None
    return Left(run.locked_after, run.preservable_after or 0, run.eligible_after or 0)


# Strategies that take only from the conversation (whole turns, or tool exchanges too): what
# lies outside it stays.
TURN_STRATEGIES = frozenset({"gc_truncate", "gc_summarize", "gc_hybrid", "gc_reachability"})


def _kept_by_rule(strategy: str, config: Mapping[str, Any], without_pressure: bool) -> list[str]:
    """What a strategy keeps whatever the usage, by its gc.json, in words."""
    kept = []
    recent = int(config.get("preserve_recent_turns") or 0)
    if recent:
        kept.append("the most recent turn" if recent == 1 else f"the {recent:,} most recent turns")
    turns = config.get("pinned_turn_indices") or []
    if turns:
        kept.append(f"pinned turn{'' if len(turns) == 1 else 's'} {turn_ranges(turns)}")
    ids = config.get("pinned_message_ids") or []
    if ids:
        kept.append(counted(len(ids), "pinned message"))
    if without_pressure:
        kept.append("every turn that holds preservable content")
    if strategy == "gc_reachability":
        kept.append("its roots (the current task, the latest turns, the files being worked on)")
    if strategy in TURN_STRATEGIES:
        kept.append("everything outside the conversation")
    return kept


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def kept_reason(
    strategy: str, config: Mapping[str, Any], details: Mapping[str, Any], left: Left | None
) -> str:
    """Why a collection stopped above its target: a strategy takes content until it reaches the
    target or runs out of what it may take, so what is left is what it may not take; told with
    the figures when they are known, and the rules of ``strategy`` that keep it.

    ``details`` are the engine's ``GCResult.details``: gc_budget says there whether it was
    under pressure (it takes preservable content, and turns holding some, only then)."""
    without_pressure = details.get("pressure_applied") is False
    preservable_note = ""
    if without_pressure and is_continuous(config):
        preservable_note = ", which it takes only under pressure, and continuous mode has none"
    elif without_pressure:
        pressure = _setting(config["pressure_percent"])
        preservable_note = f", which it takes only at its {pressure} pressure threshold"
    kept = _kept_by_rule(strategy_of({"type": strategy}), config, without_pressure)
    rules = f": it keeps {_and(kept)}" if kept else ""
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
            f"({_pct(self.percent)} of {self.limit:,})."
        )


def over_limit(
    *, tokens_after: int | None, limit: int | None, reason: str, after: str = "after this run"
) -> OverLimit | None:
    if tokens_after is None or not limit or tokens_after <= limit:
        return None
    return OverLimit(tokens_after - limit, tokens_after / limit * 100, limit, reason, after)


@dataclass(frozen=True)
class RunStory:
    """What a finished run did, in sentences for its page."""

    outcome: str
    nothing: str
    summaries_none: str
    over_limit: OverLimit | None


def run_story(run: Any, summaries: Sequence[SummaryView]) -> RunStory:
    """``summaries``: the run's summary chain (the one it wrote, if any, is told)."""
    limit = run.context_limit or 0
    tokens_before, tokens_after = run.tokens_before or 0, run.tokens_after or 0
    items = run.items_collected or 0

    def percent(tokens: int) -> float:
        return tokens / limit * 100 if limit else 0.0

    target = float(run.config.get("target_percent") or 0)
    before, after = percent(tokens_before), percent(tokens_after)
    details = (run.result or {}).get("details") or {}
    reason = kept_reason(run.plugin, run.config, details, run_left(run))
    over = over_limit(tokens_after=tokens_after, limit=limit, reason=reason)
    told = "" if over is not None else f" {reason}"
    if items == 0:
        if before <= target:
            nothing = (
                "This run removed nothing: usage was already at or below the policy's "
                f"{_setting(target)} target ({_pct(before)} of the window)."
            )
        else:
            nothing = (
                f"This run removed nothing: usage was {_pct(before)} of the window, above the "
                f"{_setting(target)} target, and all of it is what this policy may not "
                f"remove.{told}"
            )
        engine_said = str(details.get("message") or "")
        if engine_said:
            nothing += f" The strategy said: {engine_said.rstrip('.')}."
        return RunStory(
            outcome=nothing,
            nothing=nothing,
            summaries_none="No summaries: this run removed nothing, and the session held none.",
            over_limit=over,
        )
    freed = tokens_before - tokens_after
    change = (
        f"freed {counted(freed, 'token')}" if freed >= 0 else f"added {counted(-freed, 'token')}"
    )
    outcome = (
        f"This run removed {counted(items, 'item')} and {change}: usage went from "
        f"{_pct(before)} to {_pct(after)} of the window, "
    )
    if after <= target:
        outcome += f"at or below the policy's {_setting(target)} target."
    else:
        outcome += f"still above the policy's {_setting(target)} target.{told}"
    written = next((s for s in summaries if s.written_by_run), None)
    if written is not None:
        outcome += (
            f" It summarized {counted(written.covers_count, 'turn')} into summary "
            f"{written.number} ({counted(written.tokens, 'token')})."
        )
    skipped = str(details.get("summary_skipped") or "")
    if skipped:
        # The engine writes no summary that would not be smaller than what it replaces.
        outcome += f" It wrote no summary ({skipped.rstrip('.')}), so those turns were dropped."
    return RunStory(
        outcome=outcome,
        nothing="",
        summaries_none=(
            "No summaries: this run removed content without summarizing it, "
            "and the session held none."
        ),
        over_limit=over,
    )


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
            f"Nothing to remove: usage is already at or below the policy's {_setting(target)} "
            f"target ({_pct(before)} of the window)."
        )
    elif items == 0:
        nothing = (
            f"Nothing to remove: usage is {_pct(before)} of the window, above the "
            f"{_setting(target)} target, and all of it is what this policy may not remove.{told}"
        )
    elif after > target:
        short = (
            f"It would stop at {_pct(after)} of the window, above the {_setting(target)} "
            f"target.{told}"
        )
    return PreviewStory(nothing=nothing, short_of_target=short, over_limit=over)


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
        f"Usage peaked at {_pct(peak)} of the context limit and ended at {_pct(final)}.",
    ]
    shape = _replay_shape(series, config, collections, failures)
    if shape:
        sentences.append(shape)
    over = [s for s in steps if s[3] > limit]
    over_text = ""
    if over:
        over_text = (
            f"Usage stays over the limit at {len(over):,} of {counted(len(steps), 'check')}; "
            f"peak {_pct(peak)}."
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
        f"Once usage passed the {_setting(target)} target, GC took a small batch after a turn "
        f"{_times(len(batches))} ({counted(items, 'segment')} in all)"
    )
    if full:
        at = f"at the {_setting(threshold)} threshold"
        return f"{sentence}, and collected in full {_times(full)} {at}."
    if series["continuous_mode"]:
        return f"{sentence}."
    return f"{sentence}; usage never reached the {_setting(threshold)} threshold."


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
            return f"Usage never rose above the {_setting(target)} target."
        return f"Usage never reached the {_setting(threshold)} threshold."
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
                f"GC collected whenever usage rose above the {_setting(target)} target, "
                f"keeping it in a ripple just under it.{turn_note}"
            )
        return (
            f"GC collected whenever usage rose above the {_setting(target)} target; "
            f"{len(short):,} of {counted(len(collections), 'collection')} could not bring it "
            f"back under the target.{turn_note}"
        )
    again = [e for e in collections if e["tokens_after"] >= threshold / 100 * limit]
    if by_usage >= 2 and not again:
        towards = "down to" if not short else "down towards"
        return (
            f"Each time usage reached the {_setting(threshold)} threshold, GC brought it "
            f"{towards} the {_setting(target)} target: the sawtooth.{turn_note}"
        )
    if len(collections) == 1:
        only = collections[0]
        why = (
            "at the turn limit (max_turns)"
            if only["reason"] == "turn_limit"
            else f"when usage reached the {_setting(threshold)} threshold"
        )
        down_to = _pct(only["tokens_after"] / limit * 100)
        return f"GC collected once, {why}, bringing usage down to {down_to}."
    if again:
        return (
            f"{len(again):,} of {counted(len(collections), 'collection')} left usage at or "
            f"above the {_setting(threshold)} threshold, so GC collected again at the next "
            f"check.{turn_note}"
        )
    return turn_note.strip()


# --- The agent's own usage, and its compactions ------------------------------------------------


@dataclass(frozen=True)
class UsageChart:
    """The context size the agent's model calls reported, turn by turn, with the compactions
    the agent performed marked on it, and (when a policy was replayed on the same turns) the
    size that policy would have kept: server-drawn geometry and the facts in words."""

    width: int
    height: int
    agent_points: str
    policy_points: str
    limit_y: float | None
    compactions: list[tuple[float, float, float, str]]
    y_ticks: list[tuple[float, str]]
    x_ticks: list[tuple[float, int]]
    sentences: list[str]


def usage_chart(
    usage: Sequence[Sequence[int]],
    compactions: Sequence[dict[str, Any]],
    limit: int,
    *,
    series: dict[str, Any] | None = None,
    policy_label: str = "",
    up_to_turn: int | None = None,
) -> UsageChart | None:
    """``usage`` is ``[turn number, prompt tokens]`` per call (``storage.recorded_usage_curve``)
    and ``compactions`` the stored ones; ``series`` a replay (``storage.replay_series``) drawn
    over the same turns, and ``up_to_turn`` the last turn to show (a compaction's)."""
    calls = [(t, tokens) for t, tokens in usage if up_to_turn is None or t <= up_to_turn]
    marks = [
        c
        for c in compactions
        if c.get("before_turn") is not None
        and (up_to_turn is None or c["before_turn"] <= up_to_turn + 1)
    ]
    steps = []
    if series is not None:
        for turn, _, before, after in series["steps"]:
            if turn is not None:
                steps.append((gcengine.turn_number(turn), before))
                steps.append((gcengine.turn_number(turn), after))
    if not calls and not steps:
        return None
    turns = [t for t, _ in calls] + [t for t, _ in steps] + [int(c["before_turn"]) for c in marks]
    first, last = min(turns), max(turns)
    span = max(last - first, 1)
    top = max(
        [limit, *(tokens for _, tokens in calls), *(tokens for _, tokens in steps)]
        + [int(c.get("tokens_before") or 0) for c in marks]
    )
    top = int(max(top, 1))
    width, height = CHART_WIDTH, CHART_HEIGHT

    def x(turn: float) -> float:
        return round((turn - first) / span * width, 1)

    def y(tokens: float) -> float:
        return round(height - tokens / top * height, 1)

    sentences = []
    for c in marks:
        before, after = c.get("tokens_before"), c.get("tokens_after")
        figures = (
            f" from {before:,} to {after:,} tokens"
            if before is not None and after is not None
            else " (the file records no sizes for it)"
        )
        trigger = f" ({c['trigger']})" if c.get("trigger") else ""
        sentences.append(f"The agent compacted before turn {c['before_turn']}{trigger}{figures}.")
    if steps:
        low = min(tokens for _, tokens in steps)
        high = max(tokens for _, tokens in steps)
        collections = sum(1 for e in series["events"] if e["success"]) if series else 0
        sentences.append(
            f"Under {policy_label or 'this policy'}, the same turns would have kept the context "
            f"between {low:,} and {high:,} tokens, with {counted(collections, 'collection')}."
        )
    return UsageChart(
        width=width,
        height=height,
        agent_points=" ".join(f"{x(t)},{y(tokens)}" for t, tokens in calls),
        policy_points=" ".join(f"{x(t)},{y(tokens)}" for t, tokens in steps),
        limit_y=y(limit) if limit else None,
        compactions=[
            (
                x(c["before_turn"]),
                y(c.get("tokens_before") or 0),
                y(c.get("tokens_after") or 0),
                f"turn {c['before_turn']}",
            )
            for c in marks
        ],
        y_ticks=[(y(top * share), f"{round(top * share):,}") for share in (0, 0.25, 0.5, 0.75, 1)],
        x_ticks=[(x(first + span * share), round(first + span * share)) for share in (0, 0.5, 1)],
        sentences=sentences,
    )


# --- Reachability: the reference graph around a turn ------------------------------------------

# What a side of the picture shows at most; the text beneath lists them all.
GRAPH_SIDE_MAX = 10
_BOX_WIDTH, _BOX_HEIGHT, _ROW, _TOP = 220, 26, 34, 30
_COLUMNS = (10, 270, 530)
_LABEL_CHARS = 32


@dataclass(frozen=True)
class GraphBox:
    """A segment drawn as a box: its corner, its label (shortened to fit; ``title`` is the
    whole), and what it is."""

    x: int
    y: int
    label: str
    title: str
    kind: str
    reachable: bool
    root: bool

    @property
    def text_x(self) -> int:
        return self.x + 8

    @property
    def text_y(self) -> int:
        return self.y + _BOX_HEIGHT // 2


@dataclass(frozen=True)
class GraphLine:
    x1: int
    y1: int
    x2: int
    y2: int
    title: str


@dataclass(frozen=True)
class GraphRow:
    """One reference, in words: ``source`` names ``how``, which ``target`` holds."""

    source: str
    target: str
    how: str


@dataclass(frozen=True)
class ReferencePicture:
    """The reference graph around a turn, drawn: what it refers to on the left, its segments
    in the middle, what refers to it on the right; and the same facts as rows of text."""

    turn_number: int
    width: int
    height: int
    box_width: int
    box_height: int
    columns: tuple[int, int, int]
    boxes: list[GraphBox]
    lines: list[GraphLine]
    outgoing: list[GraphRow]
    incoming: list[GraphRow]
    more_outgoing: int
    more_incoming: int


def _shortened(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def _how(how: str) -> str:
    """How a reference goes, in words: an anchor as written, or the explicit kinds."""
    return {
        "reply": "its reply reports the tool output",
        "summary": "its summary covers the turn",
    }.get(how, f"names {how}")


def reference_picture(graph: gcengine.TurnReferences) -> ReferencePicture:
    """Boxes and lines for ``graph`` (at most ``GRAPH_SIDE_MAX`` boxes a side), every
    reference listed in words."""
    left, middle, right = _COLUMNS
    boxes: list[GraphBox] = []
    centre: dict[str, int] = {}
    for row, segment in enumerate(graph.segments):
        y = _TOP + row * _ROW
        centre[segment.segment_id] = y
        boxes.append(
            GraphBox(
                middle,
                y,
                _shortened(segment.label),
                f"{segment.label}: {segment.kind.value}, {segment.tokens:,} tokens",
                segment.kind.value,
                segment.reachable,
                segment.root,
            )
        )
    lines: list[GraphLine] = []

    def side(references: list[gcengine.Reference], outgoing: bool) -> int:
        placed: dict[str, int] = {}
        for reference in references:
            other_id = reference.target_id if outgoing else reference.source_id
            other_label = reference.target_label if outgoing else reference.source_label
            if other_id not in placed:
                if len(placed) == GRAPH_SIDE_MAX:
                    continue
                placed[other_id] = _TOP + len(placed) * _ROW
                boxes.append(
                    GraphBox(
                        left if outgoing else right,
                        placed[other_id],
                        _shortened(other_label),
                        other_label,
                        "other",
                        False,
                        False,
                    )
                )
            own_y = centre[reference.source_id if outgoing else reference.target_id]
            other_y = placed[other_id]
            middle_y = _BOX_HEIGHT // 2
            sentence = f"{reference.source_label} {_how(reference.how)} ({reference.target_label})"
            if outgoing:
                lines.append(
                    GraphLine(
                        middle, own_y + middle_y, left + _BOX_WIDTH, other_y + middle_y, sentence
                    )
                )
            else:
                lines.append(
                    GraphLine(
                        right, other_y + middle_y, middle + _BOX_WIDTH, own_y + middle_y, sentence
                    )
                )
        unique = {r.target_id if outgoing else r.source_id for r in references}
        return len(unique) - len(placed)

    more_outgoing = side(graph.outgoing, outgoing=True)
    more_incoming = side(graph.incoming, outgoing=False)
    rows = max(
        len(graph.segments),
        min(GRAPH_SIDE_MAX, len({r.target_id for r in graph.outgoing})),
        min(GRAPH_SIDE_MAX, len({r.source_id for r in graph.incoming})),
        1,
    )
    return ReferencePicture(
        turn_number=graph.turn_number,
        width=right + _BOX_WIDTH + 10,
        height=_TOP + rows * _ROW,
        box_width=_BOX_WIDTH,
        box_height=_BOX_HEIGHT,
        columns=_COLUMNS,
        boxes=boxes,
        lines=lines,
        outgoing=[GraphRow(r.source_label, r.target_label, _how(r.how)) for r in graph.outgoing],
        incoming=[GraphRow(r.source_label, r.target_label, _how(r.how)) for r in graph.incoming],
        more_outgoing=more_outgoing,
        more_incoming=more_incoming,
    )


# --- Compaction quality: anchor retention and prompt-cache cost ---------------------------------
#
# A score is "anchor retention", never what the agent remembers: each sentence says what was
# counted (anchors still in view), and the pages link to the limits in docs/engine.md.

CLASS_LABELS = {info.anchor_class: info.label for info in gcengine.ANCHOR_CLASSES}


def share(value: float | None) -> str:
    """A recall or a rate as a percentage with one decimal: ``0.949`` -> ``94.9 %``."""
    return MISSING_SHARE if value is None else f"{value * 100:.1f} %"


MISSING_SHARE = "n/a"


@dataclass(frozen=True)
class RetentionRow:
    anchor_class: str
    label: str
    weight: int
    anchors: int
    retained: int
    recall: float | None
    minimum: float | None
    under_gate: bool
    lost: list[str]


@dataclass(frozen=True)
class RetentionView:
    """A score as a page shows it: one sentence for the score, a row per class with its gate,
    and sentences for invented anchors, compression and recency."""

    score: float | None
    sentence: str
    rows: list[RetentionRow]
    gate_failures: list[str]
    invented: str
    compression: str
    recency: str
    unscorable: bool

    @property
    def under_gate(self) -> bool:
        return bool(self.gate_failures)


def gates_in_words(gates: Mapping[gcengine.AnchorClass, float]) -> str:
    """``decisions and constraints at 95.0 % and open work at 95.0 %``; ``no class`` when
    there is no gate."""
    parts = [f"{CLASS_LABELS[cls]} at {share(minimum)}" for cls, minimum in gates.items()]
    return _and(parts) if parts else "no class"


def _gate_failure(failure: gcengine.GateFailure) -> str:
    return (
        f"{CLASS_LABELS[failure.anchor_class]} {share(failure.recall)}, "
        f"under the gate of {share(failure.minimum)}"
    )


def retention_view(
    retention: gcengine.AnchorRetention | None,
    gates: Mapping[gcengine.AnchorClass, float],
    *,
    what: str = "it",
) -> RetentionView | None:
    """``what`` names what took content out of view ("the run", "these collections")."""
    if retention is None:
        return None
    failures = gcengine.gate_failures(retention, gates)
    rows = [
        RetentionRow(
            anchor_class=part.anchor_class.value,
            label=CLASS_LABELS[part.anchor_class],
            weight=part.weight,
            anchors=part.anchors,
            retained=part.retained,
            recall=part.recall,
            minimum=gates.get(part.anchor_class),
            under_gate=any(f.anchor_class is part.anchor_class for f in failures),
            lost=part.lost,
        )
        for part in retention.classes
    ]
    went = counted(retention.removed_messages, "message")
    if retention.unscorable is not None:
        sentence = f"No anchor retention for {what}: {retention.unscorable}."
    elif not retention.anchors:
        sentence = (
            f"The {went} {what} took out of view held no anchors, so there is nothing to score."
            if retention.removed_messages
            else f"{what.capitalize()} took nothing out of view, so there is nothing to score."
        )
    else:
        kept = sum(part.retained for part in retention.classes)
        sentence = (
            f"Anchor retention {share(retention.score)}: {kept:,} of "
            f"{counted(retention.anchors, 'anchor')} in the {went} {what} took out of view "
            "are still in view, weighted by class."
        )
    return RetentionView(
        score=retention.score,
        sentence=sentence,
        rows=rows,
        gate_failures=[_gate_failure(f) for f in failures],
        invented=_invented_sentence(retention.invented),
        compression=_compression_sentence(retention),
        recency=_recency_sentence(retention.recency),
        unscorable=retention.unscorable is not None,
    )


def _invented_sentence(invented: gcengine.InventedAnchors) -> str:
    if not invented.checked:
        return "No summary came in with anchors to check against the session."
    verb = "appears" if invented.invented == 1 else "appear"
    return (
        f"{invented.invented:,} of the {counted(invented.checked, 'literal anchor')} in the "
        f"summaries that came in {verb} nowhere in the session ({share(invented.rate)})"
        + (f": {', '.join(invented.examples[:5])}." if invented.examples else ".")
    )


def _compression_sentence(retention: gcengine.AnchorRetention) -> str:
    """Messages only: beside a run's figures, which count what else it freed (tool schemas,
    plugin instructions), the sentence says what it is about."""
    if not retention.removed_tokens:
        return ""
    out = (
        f"the {counted(retention.removed_messages, 'message')} "
        f"({counted(retention.removed_tokens, 'token')}) that went"
    )
    if not retention.replacement_tokens:
        return f"Nothing came in for {out}."
    return (
        f"{counted(retention.replacement_tokens, 'token')} came in for {out} "
        f"(a ratio of {retention.compression_ratio:.3f})."
    )


def _recency_sentence(recency: gcengine.RecencyRetention) -> str:
    if recency.oldest is None and recency.newest is None:
        return ""
    return (
        f"Anchors last mentioned in the oldest third of what went: {share(recency.oldest)} "
        f"still in view; in the newest third: {share(recency.newest)}."
    )


def run_retention(run: Any, gates: Mapping[gcengine.AnchorClass, float]) -> RetentionView | None:
    """A finished run's score (None for a run stored before runs were scored)."""
    return retention_view(storage.retention_read(run.retention), gates, what="the run")


def replay_retention(series: Mapping[str, Any]) -> gcengine.AnchorRetention | None:
    """Every collection of a replay pooled, each anchor counted once; None for a series
    stored before collections were scored."""
    scored = [e["retention"] for e in series["events"] if e.get("retention")]
    if not any("retention" in e for e in series["events"]):
        return None
    return gcengine.pooled_retention(
        gcengine.AnchorRetention.model_validate(record) for record in scored
    )


def replay_gate_failures(
    series: Mapping[str, Any], gates: Mapping[gcengine.AnchorClass, float]
) -> int:
    """How many of a replay's collections leave some class under the project's gate."""
    return sum(
        1
        for e in series["events"]
        if e.get("retention")
        and gcengine.gate_failures(gcengine.AnchorRetention.model_validate(e["retention"]), gates)
    )


@dataclass(frozen=True)
class CostRow:
    label: str
    policy: str
    without_gc: str


@dataclass(frozen=True)
class CostView:
    """A replay's prompt-cache figures beside the same replay without GC, priced when the
    project's table has the session's model."""

    model: str
    price: gcengine.ModelPrice | None
    terms: str
    policy: gcengine.PromptCacheUsage
    without_gc: gcengine.PromptCacheUsage
    dollars: float | None
    dollars_without_gc: float | None
    rows: list[CostRow]
    sentences: list[str]


def dollars(value: float) -> str:
    """Dollars with cents, or four decimals under a dollar: ``$21.22``, ``$0.0063``."""
    return f"${value:,.2f}" if value >= 0.995 else f"${value:.4f}"


def _against(value: float, baseline: float, more: str, less: str) -> str:
    """How ``value`` compares with what it would be without GC: ``42.2 % more than``,
    ``59.1 % fewer than``, ``the same as``."""
    if value == baseline or not baseline:
        return "the same as" if value == baseline else f"{more} than"
    difference = abs(value - baseline) / baseline * 100
    return f"{difference:.1f} % {more if value > baseline else less} than"


def per_million(value: float) -> str:
    """A price per million tokens as a price list writes it: ``$3``, ``$3.75``, ``$0.125``."""
    return f"${value:,.4f}".rstrip("0").rstrip(".")


def price_terms(price: gcengine.ModelPrice) -> str:
    """``$3 a million input tokens, $3.75 to write to the cache and $0.3 to read from it``."""
    terms = (
        f"{per_million(price.input_per_mtok)} a million input tokens, "
        f"{per_million(price.cache_write_per_mtok)} to write to the cache and "
        f"{per_million(price.cache_read_per_mtok)} to read from it"
    )
    if price.min_cacheable_tokens:
        terms += f", nothing cached under {counted(price.min_cacheable_tokens, 'token')}"
    return terms


def cost_view(
    series: Mapping[str, Any], prices: Sequence[gcengine.ModelPrice], model: str
) -> CostView | None:
    """None for a series stored before replays recorded their requests."""
    if "requests" not in series:
        return None
    price = gcengine.price_for_model(model, prices)
    minimum = price.min_cacheable_tokens if price is not None else 0
    requests = storage.requests_read(series["requests"])
    baseline = storage.requests_read(series["requests_without_gc"])
    policy = gcengine.prompt_cache_usage(requests, minimum)
    without = gcengine.prompt_cache_usage(baseline, minimum)
    cost = gcengine.cache_cost(requests, price).dollars if price else None
    base_cost = gcengine.cache_cost(baseline, price).dollars if price else None
    sent = _against(policy.tokens_sent, without.tokens_sent, "more", "fewer")
    sentences = [
        f"Over the replay the agent sends {counted(policy.requests, 'request')} of "
        f"{counted(policy.tokens_sent, 'token')} in all, {sent} without GC "
        f"({without.tokens_sent:,})."
    ]
    if price is None or cost is None or base_cost is None:
        sentences.append(
            f"No entry of the project's price table matches the model "
            f"{model or '(unknown)'}, so the cost is not worked out."
        )
    else:
        sentences.append(
            f"Priced as {price.label or price.model}, with prompt caching it costs "
            f"{dollars(cost)}, {_against(cost, base_cost, 'more', 'less')} without GC "
            f"({dollars(base_cost)})."
        )
        if policy.cache_write_tokens > without.cache_write_tokens:
            sentences.append(
                f"Its collections rewrite the prompt, so {policy.cache_write_tokens:,} tokens "
                f"are written to the cache again, against {without.cache_write_tokens:,} "
                "without GC."
            )
    rows = [
        CostRow("Requests", f"{policy.requests:,}", f"{without.requests:,}"),
        CostRow("Tokens sent", f"{policy.tokens_sent:,}", f"{without.tokens_sent:,}"),
        CostRow(
            "Read from the cache", f"{policy.cache_read_tokens:,}", f"{without.cache_read_tokens:,}"
        ),
        CostRow(
            "Written to the cache",
            f"{policy.cache_write_tokens:,}",
            f"{without.cache_write_tokens:,}",
        ),
        CostRow("Uncached", f"{policy.uncached_tokens:,}", f"{without.uncached_tokens:,}"),
    ]
    if cost is not None and base_cost is not None:
        rows.append(CostRow("Input cost", dollars(cost), dollars(base_cost)))
    return CostView(
        model=model,
        price=price,
        terms=price_terms(price) if price is not None else "",
        policy=policy,
        without_gc=without,
        dollars=cost,
        dollars_without_gc=base_cost,
        rows=rows,
        sentences=sentences,
    )


@dataclass(frozen=True)
class RankRow:
    """One ranked policy as the compare page shows it."""

    rank: int
    version: Any
    over_window: str
    collections: str
    under_gate: int
    retention: str
    recalls: list[str]
    tokens_sent: str
    cost: str


def ranking_rows(ranking: Any) -> tuple[list[str], list[RankRow]]:
    """The ranking's table: the anchor classes any policy took anchors of (their labels, for
    the header), and a row per policy in rank order."""
    pooled = [r.retention for r in ranking.ranks]
    classes = [c.anchor_class for c in gcengine.pooled_retention(pooled).classes if c.anchors]
    rows = []
    for rank, retention in zip(ranking.ranks, pooled, strict=True):
        fewer = _against(rank.tokens_sent, rank.tokens_without_gc, "more", "fewer")
        sent = f"{rank.tokens_sent:,} ({fewer} without GC)"
        cost = MISSING_SHARE
        if rank.cost is not None and rank.cost_without_gc is not None:
            versus = _against(rank.cost, rank.cost_without_gc, "more", "less")
            cost = f"{dollars(rank.cost)} ({versus} without GC)"
        rows.append(
            RankRow(
                rank=rank.rank,
                version=rank.version,
                over_window=(
                    f"at {counted(rank.over_window_checks, 'check')}"
                    if rank.over_window_checks
                    else "never"
                ),
                collections=f"{rank.collections:,}",
                under_gate=rank.collections_under_gate,
                retention=share(retention.score),
                recalls=[share(retention.of_class(c).recall) for c in classes],
                tokens_sent=sent,
                cost=cost,
            )
        )
    return [CLASS_LABELS[c] for c in classes], rows
