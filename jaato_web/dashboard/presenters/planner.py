"""A context plan shaped for the Plan tab and its step-through: the budget arithmetic in
words, the section bars, what is sent and what is left out folded into units, the settings of
a planner config as rows, and the step chart. Plain values in, plain values out: no ORM.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import gcengine
from jaato_web.dashboard.presenters.layout import CHART_HEIGHT, CHART_WIDTH
from jaato_web.dashboard.presenters.policies import FieldRow, shown

# --- The budget ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapsOrigin:
    """Where the shell took each of the caps' figures from, in words: what the user typed,
    what the session file states, or the model table's row."""

    context_length: str
    max_completion_tokens: str


def caps_origin(
    caps: gcengine.ModelCaps,
    *,
    typed_window: bool,
    typed_output: bool,
    file_window: bool,
) -> CapsOrigin:
    """``file_window``: the window is the one the session file states (no other asked for)."""
    limits = gcengine.model_limits(caps.model)
    table = f"the model table's row for {caps.model} ({_site(limits.source)})" if limits else ""
    if typed_window:
        window = "typed here"
    elif file_window:
        window = "stated in the session file"
    else:
        window = table
    if typed_output:
        output = "typed here"
    elif limits is not None and limits.max_completion_tokens is not None:
        output = table
    else:
        output = ""
    return CapsOrigin(context_length=window, max_completion_tokens=output)


def _site(url: str) -> str:
    return urlsplit(url).netloc or url


@dataclass(frozen=True)
class BudgetRow:
    """One figure of B = L - C - S, and where it came from."""

    symbol: str
    name: str
    tokens: int
    source: str


def budget_rows(
    plan: gcengine.ContextPlan, origin: CapsOrigin, settings: str = "the engine's defaults"
) -> list[BudgetRow]:
    """L, C, S and B, each with its source as the engine names it, said for people;
    ``settings`` names the planner config planned with."""
    sources = plan.budget_sources
    config = plan.config
    if sources.context_length == "model":
        window = f"the model's window: {origin.context_length or 'the caps given'}"
    else:
        model = plan.model or "the model"
        window = f"the default of {settings} ({model} has no known window)"
    completion = {
        "request": "the request's own max_tokens",
        "model": f"the model's output limit ({origin.max_completion_tokens or 'the caps given'})",
        "default": f"the default of {settings}",
        "quarter_window": "a quarter of the window",
    }[sources.max_completion_tokens]
    if sources.max_completion_tokens != "request":
        candidates = [f"the default {config.default_max_completion_tokens:,}"]
        if plan.caps.provider_max_completion_tokens:
            candidates.append(f"the output limit {plan.caps.provider_max_completion_tokens:,}")
        candidates.append(f"a quarter of the window {plan.model_context_len // 4:,}")
        completion += f" (the smallest of {', '.join(candidates[:-1])} and {candidates[-1]})"
    if sources.prompt_budget == "max_prompt_tokens":
        budget = f"the endpoint's prompt limit {plan.caps.max_prompt_tokens or 0:,} less S"
    else:
        budget = "L − C − S"
    return [
        BudgetRow("L", "Context window", plan.model_context_len, window),
        BudgetRow("C", "Completion reservation", plan.max_completion_tokens, completion),
        BudgetRow("S", "Safety buffer", plan.safety_buffer, f"the safety buffer of {settings}"),
        BudgetRow("B", "Prompt budget", plan.prompt_budget, budget),
    ]


# --- The sections ----------------------------------------------------------------------------

SECTION_LABELS = {
    gcengine.Section.SYSTEM_PINNED: "System and pins",
    gcengine.Section.CONVERSATION: "Conversation",
    gcengine.Section.RAG: "Retrieved parts (RAG)",
}


@dataclass(frozen=True)
class SectionBar:
    """A section's share of what was left of B after the required items, as a bar: the
    allocation, what it used within it, and what it took from what others left (spill-in).
    Widths are percent of the largest of B and the section's own figures."""

    name: str
    label: str
    share: int
    allocated: int
    used: int
    spill_in: int
    allocated_width: float
    own_width: float
    spill_x: float
    spill_width: float

    @property
    def idle(self) -> bool:
        """A section with a share but nothing allocated had no candidates."""
        return self.share > 0 and self.allocated == 0 and self.used == 0


def section_bars(plan: gcengine.ContextPlan) -> list[SectionBar]:
    usages = [getattr(plan.sections, section.value) for section in gcengine.Section]
    scale: int = max(
        plan.prompt_budget - plan.required_tokens,
        *(max(u.allocated, u.used) for u in usages),
        1,
    )

    def width(tokens: int) -> float:
        return round(tokens / scale * 100, 2)

    bars = []
    for section, usage in zip(gcengine.Section, usages, strict=True):
        own = usage.used - usage.spill_in
        bars.append(
            SectionBar(
                name=section.value,
                label=SECTION_LABELS[section],
                share=usage.share,
                allocated=usage.allocated,
                used=usage.used,
                spill_in=usage.spill_in,
                allocated_width=width(usage.allocated),
                own_width=width(own),
                spill_x=width(own),
                spill_width=width(usage.spill_in),
            )
        )
    return bars


# --- What is sent and what is left out --------------------------------------------------------


@dataclass(frozen=True)
class Member:
    id: str
    label: str
    role: str
    source: str
    tokens: int
    ttl: str


# A run of turns with the same decision lists this many of them and counts the rest.
TURNS_SHOWN = 20


Decision = gcengine.PlannedItem | gcengine.ExcludedItem


def item_name(item: Any, names: Sequence[str] = ()) -> str:
    """An item, or a decision on one, as pages name it: ``turn 4 user`` in the session's own
    numbering (``names``: each turn's name by its place in the session, which is what an
    item's ``turn`` holds), else its label."""
    if item.turn is not None and item.turn < len(names):
        return f"{names[item.turn]} {item.role.value}"
    return str(item.label or item.id)


@dataclass(frozen=True)
class Unit:
    """Items decided together, shown as one row: one item, a turn's members (``members``),
    or a run of consecutive turns with the same decision (``turns`` of them, the first
    ``TURNS_SHOWN`` in ``parts``). Its codes are the decisions its items share (the current
    turn mixes two)."""

    name: str
    codes: tuple[str, ...]
    explanation: str
    tokens: int
    count: int
    is_turn: bool
    decisions: Sequence[Decision] = field(default=(), repr=False)
    parts: tuple[Unit, ...] = ()
    turns: int = 1
    names: Sequence[str] = field(default=(), repr=False)

    @property
    def members(self) -> list[Member]:
        """The unit's items, made for the rows a page shows only (a long session has tens of
        thousands)."""
        return [_member(d, self.names) for d in self.decisions]

    @property
    def hidden_parts(self) -> int:
        return self.turns - len(self.parts)

    @property
    def pinned(self) -> Member | None:
        """The pinned item a one-item unit is, if it is one."""
        if self.count == 1 and self.decisions and self.decisions[0].source == "pinned":
            return _member(self.decisions[0], self.names)
        return None


def _member(decision: Decision, names: Sequence[str]) -> Member:
    return Member(
        id=decision.id,
        label=item_name(decision, names),
        role=decision.role.value,
        source=decision.source.value,
        tokens=decision.tokens,
        ttl=gcengine.ttl_label(decision.ttl),
    )


def _turn_name(first: Decision, names: Sequence[str]) -> str:
    """The name of the turn a turn's unit is, in the session's numbering when known."""
    if first.turn is not None and first.turn < len(names):
        return names[first.turn]
    return first.label.rsplit(" ", 1)[0]


def _unit(group: Sequence[Decision], names: Sequence[str]) -> Unit:
    first = group[0]
    is_turn = first.atom_id.startswith("turn_") and (first.turn is not None or bool(first.label))
    # One decision per distinct reason: codes and sentences are made once per unit, not per
    # item.
    distinct = list({(d.reason, d.detail): d for d in reversed(group)}.values())[::-1]
    return Unit(
        name=_turn_name(first, names) if is_turn else item_name(first, names),
        codes=tuple(d.code for d in distinct),
        explanation=" ".join(dict.fromkeys(d.explanation for d in distinct)),
        tokens=sum(d.tokens for d in group),
        count=len(group),
        is_turn=is_turn,
        decisions=group,
        names=names,
    )


def _fold_key(group: Sequence[Decision]) -> tuple[object, ...] | None:
    """What a turn's decision is, for folding runs of turns decided alike (None: not a turn,
    or one whose items were decided differently). Equal keys give equal codes and
    explanations."""
    first = group[0]
    if not first.atom_id.startswith("turn_"):
        return None
    reason, detail = first.reason, first.detail
    if any(d.reason is not reason or d.detail is not detail for d in group):
        return None
    if isinstance(first, gcengine.PlannedItem):
        return (True, reason, detail, first.pass_)
    return (False, reason, detail, first.section, first.tokens_left)


def _folded(groups: Iterable[Sequence[Decision]], names: Sequence[str]) -> list[Unit]:
    """One row per unit, consecutive turns decided alike folded into one: a long session
    leaves out thousands of turns for the same reason and sends hundreds as ``recent``. Only
    the rows' first turns become units of their own, so the cost is a pass over the items."""
    runs: list[list[Sequence[Decision]]] = []
    keys: list[tuple[object, ...] | None] = []
    for group in groups:
        key = _fold_key(group)
        if key is not None and keys and keys[-1] == key:
            runs[-1].append(group)
        else:
            runs.append([group])
            keys.append(key)
    rows = []
    for run in runs:
        first = _unit(run[0], names)
        if len(run) == 1:
            rows.append(first)
            continue
        last = _turn_name(run[-1][0], names)
        rows.append(
            Unit(
                name=f"{first.name} … {last}",
                codes=first.codes,
                explanation=first.explanation,
                tokens=sum(d.tokens for group in run for d in group),
                count=sum(len(group) for group in run),
                is_turn=True,
                parts=(first, *(_unit(group, names) for group in run[1:TURNS_SHOWN])),
                turns=len(run),
            )
        )
    return rows


def included_units(plan: gcengine.ContextPlan, names: Sequence[str] = ()) -> list[Unit]:
    """What is sent, in prompt order: consecutive members of one unit on one row, and runs of
    turns sent for the same reason folded. ``names`` names the turns (``item_name``)."""
    groups: list[list[gcengine.PlannedItem]] = []
    for decision in plan.included:
        if groups and groups[-1][0].atom_id == decision.atom_id:
            groups[-1].append(decision)
        else:
            groups.append([decision])
    return _folded(groups, names)


def excluded_units(plan: gcengine.ContextPlan, names: Sequence[str] = ()) -> list[Unit]:
    """What is left out, by unit and reason, newest first (as ``plan_report`` lists it), runs
    of turns left out for the same reason folded."""
    groups: dict[tuple[str, str, str | None], list[gcengine.ExcludedItem]] = {}
    for decision in plan.excluded:
        key = (decision.atom_id, decision.reason, decision.detail)
        groups.setdefault(key, []).append(decision)
    return _folded(sorted(groups.values(), key=lambda unit: -unit[-1].seq), names)


@dataclass(frozen=True)
class CodeCount:
    code: str
    items: int


def code_counts(counts: Mapping[str, int]) -> list[CodeCount]:
    """A plan's items by decision code, most first."""
    return [CodeCount(code, n) for code, n in sorted(counts.items(), key=lambda c: (-c[1], c[0]))]


# --- Planner configs as rows -----------------------------------------------------------------

PLANNER_LABELS = {
    "default_context_length": "Default context window",
    "default_max_completion_tokens": "Default completion reservation",
    "safety_buffer": "Safety buffer",
    "shares.system_pinned": "Share: system and pins",
    "shares.conversation": "Share: conversation",
    "shares.rag": "Share: retrieved parts",
    "ttl_policy": "When a TTL runs out",
    "spillover": "Spillover",
    "default_pin_ttl": "TTL of a re-pin",
}


def planner_flat(config: Mapping[str, Any]) -> dict[str, Any]:
    """A stored planner config with its shares as ``shares.<section>`` keys."""
    flat = {k: v for k, v in config.items() if k != "shares"}
    for section, share in (config.get("shares") or {}).items():
        flat[f"shares.{section}"] = share
    return flat


def planner_config_table(
    configs: Sequence[Mapping[str, Any]], compare: tuple[int, int] = (0, 1)
) -> list[FieldRow]:
    """Setting-by-setting rows for side-by-side planner configs (the versions' compare page)."""
    flat = [planner_flat(c) for c in configs]
    keys = [*PLANNER_LABELS, *sorted({k for c in flat for k in c} - set(PLANNER_LABELS))]
    first, second = compare
    rows = []
    for key in keys:
        values = [c.get(key) for c in flat]
        rows.append(
            FieldRow(
                key=key,
                label=PLANNER_LABELS.get(key, key),
                values=[shown(key, v) for v in values],
                differs=len(flat) > max(first, second) and values[first] != values[second],
            )
        )
    return rows


@dataclass(frozen=True)
class PlannerSummary:
    """A planner config's figures for its list page."""

    window: int
    completion: int
    safety_buffer: int
    shares: str
    ttl_policy: str
    spillover: bool
    default_pin_ttl: int


def planner_summary(config: Mapping[str, Any]) -> PlannerSummary:
    settings = gcengine.PlannerConfig.model_validate(config)
    shares = settings.shares
    return PlannerSummary(
        window=settings.default_context_length,
        completion=settings.default_max_completion_tokens,
        safety_buffer=settings.safety_buffer,
        shares=f"{shares.system_pinned} / {shares.conversation} / {shares.rag}",
        ttl_policy=settings.ttl_policy.value,
        spillover=settings.spillover,
        default_pin_ttl=settings.default_pin_ttl,
    )


# --- The step chart --------------------------------------------------------------------------


@dataclass(frozen=True)
class StepChart:
    """Tokens sent at each user turn against the prompt budget, drawn server-side, with
    marks where a review was asked (Ask) and where a pin's TTL ran out."""

    width: int
    height: int
    points: str
    budget_y: float
    reviews: list[tuple[float, float]]
    expiries: list[tuple[float, float]]
    y_ticks: list[tuple[float, int]]
    x_ticks: list[tuple[float, str]]
    steps: int
    peak_tokens: int
    peak_label: str
    budget: int
    over_budget: int
    review_steps: int
    expiry_steps: int


def step_chart(steps: Sequence[Any], budget: int) -> StepChart:
    """``steps`` are ``previews.Step`` values (anything with ``tokens``, ``label``,
    ``review_requests`` and ``expired``)."""
    peak = max((s.tokens for s in steps), default=0)
    top = max(budget, peak, 1) * 1.05

    def y(tokens: float) -> float:
        return round(CHART_HEIGHT - tokens / top * CHART_HEIGHT, 1)

    last = max(len(steps) - 1, 1)

    def x(index: int) -> float:
        return round(index / last * CHART_WIDTH, 1)

    points = " ".join(f"{x(i)},{y(s.tokens)}" for i, s in enumerate(steps))
    ticks = [0, round(top / 1.05 / 2), round(top / 1.05)]
    peak_step = max(steps, key=lambda s: s.tokens, default=None)
    return StepChart(
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        points=points,
        budget_y=y(budget),
        reviews=[(x(i), y(s.tokens)) for i, s in enumerate(steps) if s.review_requests],
        expiries=[(x(i), y(s.tokens)) for i, s in enumerate(steps) if s.expired],
        y_ticks=[(y(t), t) for t in ticks],
        x_ticks=[
            (x(i), steps[i].label)
            for i in sorted({round(q * (len(steps) - 1) / 4) for q in range(5)})
        ]
        if steps
        else [],
        steps=len(steps),
        peak_tokens=peak,
        peak_label=peak_step.label if peak_step is not None else "",
        budget=budget,
        over_budget=sum(1 for s in steps if s.over_budget),
        review_steps=sum(1 for s in steps if s.review_requests),
        expiry_steps=sum(1 for s in steps if s.expired),
    )
