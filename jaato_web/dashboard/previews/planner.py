"""The context planner on stored sessions (the Plan tab, the API): plans computed in this
process, never stored.

A plan is pure (the same items, caps and settings give the same plan), so plans are cached
by their inputs, and so are a session's planner items (``gcengine.plan_items`` over 27,000
messages at 10,000 turns). Unpacking the stored session goes
through ``services.engine_session_of``, which keeps the last few in memory.

Planning a session plans it as it stands: its last user message is the one being answered
(``step_through`` plans it as the agent lived it, turn by turn).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gcengine
from jaato_web import caches
from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession

ITEMS_CACHE_SIZE = 4
PLAN_CACHE_SIZE = 16

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


# Nothing asked for: the session's own model and figures, its pins at normal priority, no TTL.
SESSION_CAPS = CapsChoice()
SESSION_PINS = PinChoice()


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


_turn_facts: caches.BoundedLRU[tuple[int, str], _TurnFacts] = caches.bounded(
    "turn facts of sessions planned", ITEMS_CACHE_SIZE, caches.each_weighs_one, "sessions"
)


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


def turn_names(session: AgentSession, engine: gcengine.Session | None = None) -> tuple[str, ...]:
    """Each turn's name as pages say it (``turn 1`` for stable index 0), by its place in the
    session, which is what a planner item's ``turn`` holds (``engine``: the session already
    opened, when the caller has it)."""
    opened = engine if engine is not None else services.engine_session_of(session)
    return _facts(session, opened).names


@dataclass(frozen=True)
class SessionPins:
    """The session's pins as the planner takes them, and why any were left aside."""

    pins: tuple[gcengine.Pin, ...]
    notes: tuple[str, ...] = ()
    choice: PinChoice = SESSION_PINS

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

_items: caches.BoundedLRU[tuple[Any, ...], tuple[gcengine.PlannerItem, ...]] = caches.bounded(
    "planner items of sessions", ITEMS_CACHE_SIZE, caches.each_weighs_one, "sessions"
)
_plans: caches.BoundedLRU[tuple[Any, ...], gcengine.ContextPlan] = caches.bounded(
    "plans made", PLAN_CACHE_SIZE, caches.each_weighs_one, "plans"
)


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
    if pins.choice == SESSION_PINS:
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
    caps: CapsChoice = SESSION_CAPS,
    config: gcengine.PlannerConfig | None = None,
    pins: PinChoice = SESSION_PINS,
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
