"""The context planner on stored sessions (the Plan tab, the API): plans computed in this
process, never stored.

A plan is pure (the same items, caps and settings give the same plan), so plans are cached
by their inputs, and so are a session's planner items (``gcengine.plan_items`` over 27,000
messages at 10,000 turns). Unpacking the stored session goes
through ``services.engine_session_of``, which keeps the last few in memory.

Planning a session plans it as it stands: its last user message is the one being answered.
The step-through plans it as the agent lived it: at each user turn the items are the session
up to that turn, the plan is committed, and the TTLs its commit moved on carry into the next
turn. Each step costs what one plan of the items in play costs, so two things keep a page of
steps cheap on a 10,000-turn session:

* steps come a page at a time (``STEPS_PER_PAGE`` user turns); the pins start the page with
  the TTL chosen, as if they were set at its first turn;
* older turns that cannot be sent are left out of a step before it is planned: the history
  is sent as the most recent turns without a gap, and a turn whose newer turns alone cost
  more than the prompt budget is behind the cut whatever else happens. Their items still
  count as left out; ``tests/web/test_planning.py`` checks the series is the one planning
  every item gives.
"""

from __future__ import annotations

import json
import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import gcengine
from jaato_web.dashboard import services
from jaato_web.dashboard.memo import BoundedLRU, each_weighs_one
from jaato_web.dashboard.models import AgentSession
from jaato_web.dashboard.presenters import item_name

ITEMS_CACHE_SIZE = 4
PLAN_CACHE_SIZE = 16


# User turns planned and committed per page of the step-through.
STEPS_PER_PAGE = 50
Ttl = int | gcengine.TTLState | None


# --- What is asked for ---------------------------------------------------------------------


@dataclass(frozen=True)
class CapsChoice:
    """The model and the figures asked for; None keeps the session's own (or the table's)."""

    model: str | None = None
    context_length: int | None = None
    max_completion_tokens: int | None = None
    max_prompt_tokens: int | None = None
    request_max_tokens: int | None = None


@dataclass(frozen=True)
class PinChoice:
    """The priority and TTL every pin of the session is planned with."""

    priority: gcengine.Priority = gcengine.Priority.NORMAL
    ttl: Ttl = None


def session_caps(engine: gcengine.Session, choice: CapsChoice) -> gcengine.ModelCaps:
    """Caps for planning the session: the model asked for (else the session's) from the model
    table, the window the file states when no other model or window is asked for, and every
    figure typed in place of the table's."""
    caps = gcengine.session_caps(
        engine,
        model=choice.model,
        context_length=choice.context_length,
        request_max_tokens=choice.request_max_tokens,
    )
    typed = {
        "provider_max_completion_tokens": choice.max_completion_tokens,
        "max_prompt_tokens": choice.max_prompt_tokens,
    }
    if all(value is None for value in typed.values()):
        return caps
    kept = {key: value for key, value in typed.items() if value is not None}
    return gcengine.ModelCaps.model_validate({**caps.model_dump(), **kept})


# --- Pins ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TurnFacts:
    """What the engine accepts as a pin in a session: its turns (stable indices) and, for
    each message, whether it carries tool traffic (only ever sent with its partner); and each
    turn's name as pages say it (``turn 1`` for index 0), by its place in the session, which
    is what a planner item's ``turn`` holds."""

    turns: frozenset[int]
    tool_traffic: dict[str, bool]
    names: tuple[str, ...]


_turn_facts: BoundedLRU[tuple[int, str], _TurnFacts] = BoundedLRU(ITEMS_CACHE_SIZE, each_weighs_one)


def _facts(session: AgentSession, engine: gcengine.Session) -> _TurnFacts:
    key = (session.pk, session.sha256)
    facts = _turn_facts.get(key)
    if facts is None:
        turns = engine.turns()
        facts = _TurnFacts(
            turns=frozenset(t.index for t in turns if t.index is not None),
            tool_traffic={
                m.message_id: bool(m.function_calls or m.function_responses) for m in engine.history
            },
            names=tuple(gcengine.turn_label(t.index) for t in turns),
        )
        _turn_facts.put(key, facts)
    return facts


def turn_names(session: AgentSession) -> tuple[str, ...]:
    """Each turn's name as pages say it (``turn 1`` for stable index 0), by its place in the
    session, which is what a planner item's ``turn`` holds."""
    return _facts(session, services.engine_session_of(session)).names


@dataclass(frozen=True)
class SessionPins:
    """The session's pins as the planner takes them, and why any were left aside."""

    pins: tuple[gcengine.Pin, ...]
    notes: tuple[str, ...] = ()
    choice: PinChoice = PinChoice()

    @property
    def key(self) -> str:
        return json.dumps([p.model_dump(mode="json") for p in self.pins], sort_keys=True)

    @property
    def targets(self) -> tuple[tuple[int | None, str | None], ...]:
        """What is pinned, whatever the priority and TTL."""
        return tuple((p.turn, p.message_id) for p in self.pins)


def session_pins(session: AgentSession, engine: gcengine.Session, choice: PinChoice) -> SessionPins:
    """The turns and messages pinned in the session, each with the priority and TTL chosen.

    A pin the planner would refuse is left aside with a note instead: a message that is a tool
    call or result (its turn's pin keeps the words, the tool traffic goes with the turn), or
    a turn or message the engine's reading of the file does not have.
    """
    turns, ids = services.session_pins(session=session)
    facts = _facts(session, engine)
    pins: list[gcengine.Pin] = []
    notes: list[str] = []
    for turn in sorted(turns):
        if turn in facts.turns:
            pins.append(gcengine.Pin(turn=turn, priority=choice.priority, ttl=choice.ttl))
        else:
            notes.append(
                f"{gcengine.turn_label(turn).capitalize()} is pinned but not in the session; "
                "it is left aside."
            )
    for message_id in sorted(ids):
        traffic = facts.tool_traffic.get(message_id)
        if traffic is None:
            notes.append(f"Message {message_id} is pinned but not in the session; left aside.")
        elif traffic:
            notes.append(
                f"Message {message_id} is a tool call or result, only ever sent with its "
                "partner: pin its turn to keep it. Its pin is left aside here."
            )
        else:
            pins.append(
                gcengine.Pin(message_id=message_id, priority=choice.priority, ttl=choice.ttl)
            )
    return SessionPins(tuple(pins), tuple(notes), choice)


# --- One plan ------------------------------------------------------------------------------

_items: BoundedLRU[tuple[Any, ...], tuple[gcengine.PlannerItem, ...]] = BoundedLRU(
    ITEMS_CACHE_SIZE, each_weighs_one
)
_plans: BoundedLRU[tuple[Any, ...], gcengine.ContextPlan] = BoundedLRU(
    PLAN_CACHE_SIZE, each_weighs_one
)


def clear_caches() -> None:
    _turn_facts.clear()
    _items.clear()
    _plans.clear()


def session_items(
    session: AgentSession, engine: gcengine.Session, pins: SessionPins
) -> tuple[gcengine.PlannerItem, ...]:
    """The session's planner items with these pins, read once per session and what is pinned.

    Reading a stored session's items counts its messages again (1.7 s at 10,000 turns: the
    budget's index of its conversation is not stored with it), so the items are kept per set
    of pinned turns and messages, and another priority or TTL is stamped on the pinned items,
    as ``plan_items`` would set it from the pins.
    """
    key = (session.pk, session.sha256, pins.targets)
    items = _items.get(key)
    if items is None:
        plain = [gcengine.Pin(turn=t, message_id=m) for t, m in pins.targets]
        items = gcengine.plan_items(engine, pins=plain)
        _items.put(key, items)
    if pins.choice == PinChoice():
        return items
    stamp = {"priority": pins.choice.priority, "ttl": pins.choice.ttl}
    return tuple(
        gcengine.PlannerItem.model_validate({**item.model_dump(), **stamp})
        if item.source == "pinned"
        else item
        for item in items
    )


def _config_key(caps: gcengine.ModelCaps, config: gcengine.PlannerConfig) -> str:
    return caps.model_dump_json() + config.model_dump_json()


@dataclass(frozen=True)
class SessionPlan:
    """A plan of a stored session, with what it was made from."""

    session: AgentSession
    plan: gcengine.ContextPlan
    items: tuple[gcengine.PlannerItem, ...]
    caps: gcengine.ModelCaps
    config: gcengine.PlannerConfig
    pins: SessionPins
    caps_choice: CapsChoice
    elapsed_ms: float
    computed: bool = True

    @property
    def limits(self) -> gcengine.ModelLimits | None:
        """The model table's row the caps came from, if any."""
        return gcengine.model_limits(self.caps.model)


def plan_session(
    session: AgentSession,
    *,
    caps: CapsChoice = CapsChoice(),
    config: gcengine.PlannerConfig | None = None,
    pins: PinChoice = PinChoice(),
) -> SessionPlan:
    """Plan the session's next request as it stands, for the model and settings asked for,
    with the session's own pins."""
    started = time.perf_counter()
    engine = services.engine_session_of(session)
    settings = config or gcengine.PlannerConfig()
    model_caps = session_caps(engine, caps)
    chosen = session_pins(session, engine, pins)
    items = session_items(session, engine, chosen)
    key = (session.pk, session.sha256, chosen.key, _config_key(model_caps, settings))
    plan = _plans.get(key)
    computed = plan is None
    if plan is None:
        plan = gcengine.plan_context(items, model_caps, settings)
        _plans.put(key, plan)
    return SessionPlan(
        session=session,
        plan=plan,
        items=items,
        caps=model_caps,
        config=settings,
        pins=chosen,
        caps_choice=caps,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
        computed=computed,
    )


def inline_caps(model: str | None, caps: gcengine.ModelCaps | None) -> gcengine.ModelCaps:
    """Caps for items sent inline: the model table's row for ``model`` (or the caps' own
    model), each figure the caps give in place of the table's."""
    given = caps or gcengine.ModelCaps()
    return gcengine.model_caps(
        model or given.model,
        context_length=given.context_length,
        max_completion_tokens=given.provider_max_completion_tokens,
        max_prompt_tokens=given.max_prompt_tokens,
        request_max_tokens=given.request_max_tokens,
    )


def plan_inline(
    items: Sequence[gcengine.PlannerItem],
    caps: gcengine.ModelCaps,
    config: gcengine.PlannerConfig | None = None,
    *,
    plan_id: str | None = None,
    request_id: str | None = None,
) -> gcengine.ContextPlan:
    """Plan items a caller sends as they are (an agent planning its own next request)."""
    settings = config or gcengine.PlannerConfig()
    return gcengine.plan_context(items, caps, settings, plan_id=plan_id, request_id=request_id)


# --- Step through the turns ----------------------------------------------------------------


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
    caps: CapsChoice = CapsChoice(),
    config: gcengine.PlannerConfig | None = None,
    pins: PinChoice = PinChoice(),
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
    names = _facts(session, engine).names
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
                label=names[turn] if turn < len(names) else f"turn {turn + 1}",
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
