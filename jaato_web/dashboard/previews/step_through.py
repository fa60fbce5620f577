"""The planner's step-through: a stored session planned as the agent lived it. At each user
turn the items are the session up to that turn, the plan is committed, and the TTLs its
commit moved on carry into the next turn. Each step costs what one plan of the items in play
costs, so two things keep a page of steps cheap on a 10,000-turn session:

* steps come a page at a time (``STEPS_PER_PAGE`` user turns); the pins start the page with
  the TTL chosen, as if they were set at its first turn;
* older turns that cannot be sent are left out of a step before it is planned: the history
  is sent as the most recent turns without a gap, and a turn whose newer turns alone cost
  more than the prompt budget is behind the cut whatever else happens. Their items still
  count as left out; ``tests/web/test_planner_previews.py`` checks the series is the one
  planning every item gives.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate

import gcengine
from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession
from jaato_web.dashboard.presenters import item_name
from jaato_web.dashboard.previews.planner import (
    SESSION_CAPS,
    SESSION_PINS,
    CapsChoice,
    PinChoice,
    SessionPins,
    session_caps,
    session_items,
    session_pins,
    turn_names,
)

# User turns planned and committed per page of the step-through.
STEPS_PER_PAGE = 50


@dataclass(frozen=True)
class TtlChange:
    """A pinned item whose TTL (or pending review) a step's commit changed."""

    label: str
    before: str
    after: str

    @property
    def text(self) -> str:
        """``Limited(2) → Limited(1)``; only the review when the TTL stayed as it was."""
        was, _, _ = self.before.partition(",")
        now, _, review = self.after.partition(",")
        if was == now and review:
            return f"{now}, review asked"
        return f"{self.before} → {self.after}"


@dataclass(frozen=True)
class Step:
    """One user turn: the plan made as it was asked, and what committing it changed."""

    turn: int
    label: str
    tokens: int
    prompt_budget: int
    included: int
    excluded: int
    pins_sent: int
    pins_left_out: int
    over_budget: bool
    review_requests: tuple[str, ...]
    # Pinned items whose TTL ran out and that this step left out for the first time.
    expired: tuple[str, ...]
    ttl_changes: tuple[TtlChange, ...]
    repinned: tuple[str, ...]


@dataclass(frozen=True)
class StepPage:
    """A page of consecutive user turns, planned and committed one after another."""

    steps: list[Step]
    start: int
    user_turns: int
    per_page: int
    window: int
    prompt_budget: int
    elapsed_ms: float
    repin: bool = False
    pins: SessionPins = field(default_factory=lambda: SessionPins(()))

    @property
    def shown_from(self) -> int:
        """The first user turn shown, counted from 1."""
        return self.start + 1

    @property
    def shown_to(self) -> int:
        return self.start + len(self.steps)

    @property
    def previous_start(self) -> int | None:
        return max(self.start - self.per_page, 0) if self.start > 0 else None

    @property
    def next_start(self) -> int | None:
        following = self.start + self.per_page
        return following if following < self.user_turns else None


class _Turns:
    """The session's items by turn, for planning a prefix of the session cheaply.

    Conversation and pinned items come in seq order with their turns non-decreasing, so the
    items of turns ``a`` to ``b`` are one slice. ``floor`` is each turn's cheapest cost: the
    tokens of its members no policy filter can take away (not pinned, no tool traffic), so a
    run of turns whose floor exceeds the budget cannot all be sent.
    """

    def __init__(self, items: Sequence[gcengine.PlannerItem]) -> None:
        self.system = [i for i in items if i.turn is None and i.source != "rag"]
        self.rag = [i for i in items if i.source == "rag"]
        self.turned = [i for i in items if i.turn is not None]
        turns = [i.turn or 0 for i in self.turned]
        self.count = (max(turns) + 1) if turns else 0
        self.starts = [bisect_left(turns, t) for t in range(self.count + 1)]
        floor = [0] * self.count
        for item in self.turned:
            if item.source == "conversation" and not (item.tool_calls or item.tool_call_ids):
                floor[item.turn or 0] += item.tokens
        self.cumulative = [0, *accumulate(floor)]
        self.users = sorted(
            {i.turn for i in self.turned if i.role == "user" and i.turn is not None}
        )
        ids = [i.id for i in items]
        # A repeated id is planned as a duplicate of its first copy; leaving an older turn out
        # could change which copy is first, so such sessions are planned whole.
        self.trimmable = len(set(ids)) == len(ids)

    def oldest_needed(self, turn: int, budget: int) -> int:
        """The oldest turn a plan at ``turn`` could send: older turns are behind the cut."""
        if not self.trimmable:
            return 0
        # Turns k..turn-1 cost at least cumulative[turn] - cumulative[k]; the oldest k for
        # which that still fits in the budget, and the one before it (the turn that stops
        # the section), are all a plan may try.
        target = self.cumulative[turn] - budget
        fits = bisect_left(self.cumulative, target, 0, turn + 1)
        return max(fits - 1, 0)

    def items_at(
        self, turn: int, budget: int, current: dict[int, gcengine.PlannerItem]
    ) -> tuple[list[gcengine.PlannerItem], int]:
        """The items in play at ``turn`` (with their current TTLs) and how many were left out
        as behind the cut."""
        oldest = self.oldest_needed(turn, budget)
        start, end = self.starts[oldest], self.starts[turn + 1]
        older_pins = [i for i in self.turned[:start] if i.source == "pinned"]
        chosen = [*self.system, *older_pins, *self.turned[start:end], *self.rag]
        return [current.get(i.seq, i) for i in chosen], start - len(older_pins)


def plan_steps(
    session: AgentSession,
    *,
    caps: CapsChoice = SESSION_CAPS,
    config: gcengine.PlannerConfig | None = None,
    pins: PinChoice = SESSION_PINS,
    start: int | None = None,
    repin: bool = False,
    per_page: int = STEPS_PER_PAGE,
) -> StepPage:
    """Plan and commit the session at ``per_page`` user turns from the ``start``-th (default:
    the last page), as if each were the one being answered. With ``repin``, every pin whose
    TTL ran out under the Ask policy is re-pinned when the review is asked for."""
    started = time.perf_counter()
    engine = services.engine_session_of(session)
    settings = config or gcengine.PlannerConfig()
    model_caps = session_caps(engine, caps)
    chosen = session_pins(session, engine, pins)
    turns = _Turns(session_items(session, engine, chosen))
    names = turn_names(session, engine)
    budget = gcengine.prompt_budget(model_caps, settings)
    users = turns.users
    if start is None:
        start = max(len(users) - per_page, 0)
    start = min(max(start, 0), max(len(users) - 1, 0))
    current: dict[int, gcengine.PlannerItem] = {}
    gone: set[int] = set()
    steps = []
    for turn in users[start : start + per_page]:
        items, behind = turns.items_at(turn, budget.prompt_budget, current)
        plan = gcengine.plan_context(items, model_caps, settings, plan_id=f"step-{turn}")
        asked = plan.review_requests
        committed = gcengine.commit_plan(items, plan, repin=asked if repin else ())
        changes = []
        for before, after in zip(items, committed, strict=True):
            if after is not before:
                current[after.seq] = after
                changes.append(
                    TtlChange(item_name(after, names), _ttl_text(before), _ttl_text(after))
                )
        labels = {i.id: item_name(i, names) for i in items}
        expired = [
            d
            for d in plan.excluded
            if d.source == "pinned" and d.code.startswith("policy/ttl") and d.seq not in gone
        ]
        gone.update(d.seq for d in expired)
        pins_sent = sum(1 for d in plan.included if d.source == "pinned")
        steps.append(
            Step(
                turn=turn,
                label=names[turn] if turn < len(names) else gcengine.turn_label(turn),
                tokens=plan.estimated_tokens_total,
                prompt_budget=plan.prompt_budget,
                included=len(plan.included),
                excluded=len(plan.excluded) + behind,
                pins_sent=pins_sent,
                pins_left_out=sum(1 for d in plan.excluded if d.source == "pinned"),
                over_budget=plan.over_budget,
                review_requests=tuple(labels.get(i, i) for i in asked),
                expired=tuple(item_name(d, names) for d in expired),
                ttl_changes=tuple(changes),
                repinned=tuple(labels.get(i, i) for i in asked) if repin else (),
            )
        )
    return StepPage(
        steps=steps,
        start=start,
        user_turns=len(users),
        per_page=per_page,
        window=budget.model_context_len,
        prompt_budget=budget.prompt_budget,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
        repin=repin,
        pins=chosen,
    )


def _ttl_text(item: gcengine.PlannerItem) -> str:
    text = gcengine.ttl_label(item.ttl)
    return f"{text}, review asked" if item.review_pending else text
