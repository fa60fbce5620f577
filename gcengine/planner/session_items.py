"""Planner inputs from a loaded session, whatever format it was uploaded in.

* System items: each child of the budget's system source (system and developer prompts) and
  of its plugin source (tool definitions and plugin instructions), with the budget's figures.
* Conversation items: one per history message, with the figure the budget holds for it
  (recorded counts preferred, as the budget builder does; nothing the budget holds is counted
  again), its turn, and its tool calls and results. Collector summaries and notices are
  ``note`` items.
* Pins: turns (stable turn index) or messages (id), each with a priority and a TTL; a pinned
  message becomes a ``pinned`` item that still belongs to its turn. A pinned turn pins its
  messages that carry no tool traffic: a call or result is only ever sent with its partner.
* RAG items: each child of the enrichment source, scored by ``rag_scores`` or the entry's
  ``metadata["score"]`` (0 when neither gives one; ties go by id).

A budget snapshot has figures but no messages: its conversation leaves become the items, with
their roles read from the leaves (our own ``metadata["role"]``, else JAATO's labels such as
``output (model)``), a turn starting at each user leaf; tool pairs cannot be told apart there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import Field, field_validator

from gcengine._fast import construct
from gcengine.budget import InstructionBudget, InstructionSource, SourceEntry
from gcengine.context_limits import model_limits
from gcengine.conversation import budget_index
from gcengine.errors import PlannerError
from gcengine.messages import MessageKind, PartType, Role, tool_traffic, turn_label
from gcengine.planner.model import (
    TTL,
    ItemRole,
    ModelCaps,
    PlannerItem,
    Priority,
    Source,
    Value,
    normalize_ttl,
)
from gcengine.session import (
    ContextLimitOrigin,
    Session,
    index_conversation,
    recorded_message_figures,
)
from gcengine.tokens import TokenCounter, counter_by_name


class Pin(Value):
    """A pin on a turn (its stable index, as ``GCConfig.pinned_turn_indices``) or on one
    message (its id). ``ttl`` None means the pin never expires but still competes for the
    budget for pins; ``unlimited`` makes it sticky (always sent)."""

    turn: int | None = Field(default=None, ge=0, strict=True)
    message_id: str | None = Field(default=None, min_length=1)
    priority: Priority = Priority.NORMAL
    ttl: TTL = None
    review_pending: bool = False

    _normalize_ttl = field_validator("ttl")(normalize_ttl)

    def inconsistency(self) -> str | None:
        if (self.turn is None) == (self.message_id is None):
            return "a pin names either a turn or a message id"
        return None


@dataclass
class _Conversation:
    """The conversation as parallel lists by position, from a history or a budget's leaves:
    each message's id, role, figure, turn (its position in the conversation), the turn's
    stable index (as uploaded), and the call ids it makes and answers."""

    ids: list[str] = field(default_factory=list)
    roles: list[ItemRole] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    stable: list[int | None] = field(default_factory=list)
    calls: list[tuple[str, ...]] = field(default_factory=list)
    answers: list[tuple[str, ...]] = field(default_factory=list)


def plan_items(
    session: Session,
    *,
    pins: Sequence[Pin] = (),
    rag_scores: Mapping[str, float] | None = None,
    counter: TokenCounter | None = None,
) -> tuple[PlannerItem, ...]:
    """The planner items of ``session``: system items, then the conversation in history
    order, then RAG parts (``seq`` follows that order).

    ``rag_scores`` maps an enrichment entry's key (or its item id, ``enrichment/<key>``) to its
    relevance. ``counter`` counts messages only when the session's budget holds no figures for
    its history (a session built or edited by hand); it defaults to the session's own.
    """
    return _items(session, pins, rag_scores or {}, counter)


def _items(
    session: Session,
    pins: Sequence[Pin],
    scores: Mapping[str, float],
    counter: TokenCounter | None,
) -> tuple[PlannerItem, ...]:
    budget = session.budget
    items: list[PlannerItem] = []
    system = [
        *_entry_items(budget, InstructionSource.SYSTEM, "system"),
        *_entry_items(budget, InstructionSource.PLUGIN, "plugin"),
    ]
    for item_id, label, tokens, _ in system:
        items.append(_item(item_id, Source.SYSTEM, ItemRole.SYSTEM, tokens, len(items), label))
    conversation = (
        _history(session, counter)
        if session.history
        else _leaves(budget.get_entry(InstructionSource.CONVERSATION))
    )
    pinned = _resolve_pins(conversation, pins)
    facts = zip(
        conversation.ids,
        conversation.roles,
        conversation.tokens,
        conversation.turns,
        conversation.stable,
        conversation.calls,
        conversation.answers,
        strict=True,
    )
    seq = len(items)
    for position, (message_id, role, tokens, turn, stable, calls, answers) in enumerate(facts):
        pin = pinned.get(position)
        items.append(
            construct(
                PlannerItem,
                id=message_id,
                source=Source.CONVERSATION if pin is None else Source.PINNED,
                role=role,
                tokens=tokens,
                seq=seq + position,
                turn=turn,
                priority=Priority.NORMAL if pin is None else pin.priority,
                ttl=None if pin is None else pin.ttl,
                review_pending=False if pin is None else pin.review_pending,
                score=0.0,
                tool_calls=calls,
                tool_call_ids=answers,
                model_visible=True,
                label=f"{turn_label(stable)} {role.value}",
            )
        )
    for item_id, label, tokens, entry in _entry_items(
        budget, InstructionSource.ENRICHMENT, "enrichment"
    ):
        key = item_id.removeprefix("enrichment/")
        score = scores.get(item_id, scores.get(key, _recorded_score(entry)))
        items.append(_item(item_id, Source.RAG, ItemRole.SYSTEM, tokens, len(items), label, score))
    return tuple(items)


def _item(
    item_id: str,
    source: Source,
    role: ItemRole,
    tokens: int,
    seq: int,
    label: str,
    score: float = 0.0,
) -> PlannerItem:
    """A system or RAG item from a budget entry, built without validating again."""
    return construct(
        PlannerItem,
        id=item_id,
        source=source,
        role=role,
        tokens=tokens,
        seq=seq,
        turn=None,
        priority=Priority.NORMAL,
        ttl=None,
        review_pending=False,
        score=score,
        tool_calls=(),
        tool_call_ids=(),
        model_visible=True,
        label=label,
    )


def _entry_items(
    budget: InstructionBudget, source: InstructionSource, prefix: str
) -> list[tuple[str, str, int, SourceEntry]]:
    """One item per child of a budget source (or the source itself when it has tokens but no
    children): its id, label, figure and entry."""
    entry = budget.get_entry(source)
    if entry is None:
        return []
    if entry.children:
        return [
            (f"{prefix}/{key}", child.label or key, child.total_tokens(), child)
            for key, child in entry.children.items()
        ]
    if entry.tokens:
        return [(prefix, entry.label or prefix, entry.tokens, entry)]
    return []


def _recorded_score(entry: SourceEntry) -> float:
    score = entry.metadata.get("score")
    if isinstance(score, int | float) and not isinstance(score, bool):
        return float(score)
    return 0.0


_ROLES = {Role.USER: ItemRole.USER, Role.MODEL: ItemRole.ASSISTANT, Role.TOOL: ItemRole.TOOL}
_NO_CALLS: tuple[str, ...] = ()


def _history(session: Session, counter: TokenCounter | None) -> _Conversation:
    """The history's messages with the budget's figures for them: the figures the budget was
    built with, or (for a budget that does not describe this history) the budget builder's own
    reading, recorded figures first."""
    history = session.history
    index = budget_index(session.budget)
    if index is None or not index.describes(history):
        index, _ = index_conversation(
            history,
            counter or counter_by_name(session.token_counter),
            recorded_figures=recorded_message_figures(session.recorded_budget),
            exchange_figures=False,
        )
    layout = index.layout
    found = _Conversation(ids=list(layout.message_ids), tokens=list(index.tokens))
    text = PartType.TEXT
    for turn in range(len(layout)):
        start, end = layout.span(turn)
        found.turns += [turn] * (end - start)
        found.stable += [layout.indices[turn]] * (end - start)
        for message in history[start:end]:
            parts = message.parts
            if message.kind is MessageKind.CHAT and len(parts) == 1 and parts[0].type is text:
                # Most messages: one text part, no tool traffic.
                found.roles.append(_ROLES[message.role])
                found.calls.append(_NO_CALLS)
                found.answers.append(_NO_CALLS)
                continue
            traffic = tool_traffic(message)
            calls, answers = traffic if traffic is not None else ([], [])
            if message.kind is not MessageKind.CHAT:
                role = ItemRole.NOTE
            elif message.is_function_response:
                role = ItemRole.TOOL
            else:
                role = _ROLES[message.role]
            found.roles.append(role)
            found.calls.append(tuple(calls) if role is ItemRole.ASSISTANT else _NO_CALLS)
            found.answers.append(tuple(answers) if role is ItemRole.TOOL else _NO_CALLS)
    return found


def _leaf_role(leaf: SourceEntry) -> ItemRole:
    recorded = leaf.metadata.get("role")
    if recorded in ("user", "model", "tool"):
        return _ROLES[Role(recorded)]
    label = (leaf.label or "").lower()
    if "(model)" in label:
        return ItemRole.ASSISTANT
    if "(tool" in label:
        return ItemRole.TOOL
    if "summary" in label or "notice" in label:
        return ItemRole.NOTE
    return ItemRole.USER


def _leaves(conversation: SourceEntry | None) -> _Conversation:
    """A recorded conversation without its messages: one message per leaf, in order, a turn
    starting at each user leaf."""
    found = _Conversation()
    if conversation is None:
        return found
    turn = -1
    for key, leaf in conversation.walk():
        if leaf.children or leaf is conversation:
            continue
        role = _leaf_role(leaf)
        if role is ItemRole.USER or turn < 0:
            turn += 1
        found.ids.append(
            leaf.message_ids[0] if len(leaf.message_ids) == 1 else f"conversation/{key}"
        )
        found.roles.append(role)
        found.tokens.append(leaf.tokens)
        found.turns.append(turn)
        found.stable.append(turn)
        found.calls.append(_NO_CALLS)
        found.answers.append(_NO_CALLS)
    return found


def _resolve_pins(conversation: _Conversation, pins: Sequence[Pin]) -> dict[int, Pin]:
    """Which messages (by position) each pin pins. A message pin wins over a pin on its turn;
    pinning the same turn or message twice is an error, as is a pin that names nothing in the
    session or a tool call or result on its own."""
    turn_pins: dict[int, Pin] = {}
    message_pins: dict[str, Pin] = {}
    for pin in pins:
        if pin.turn is not None:
            if pin.turn in turn_pins:
                raise PlannerError(f"turn {pin.turn} is pinned twice")
            turn_pins[pin.turn] = pin
        elif pin.message_id is not None:
            if pin.message_id in message_pins:
                raise PlannerError(f"message {pin.message_id!r} is pinned twice")
            message_pins[pin.message_id] = pin
    if not pins:
        return {}
    pinned: dict[int, Pin] = {}
    found_turns: set[int] = set()
    found_messages: set[str] = set()
    facts = zip(
        conversation.ids, conversation.stable, conversation.calls, conversation.answers, strict=True
    )
    for position, (message_id, stable, calls, answers) in enumerate(facts):
        message_pin = message_pins.get(message_id)
        if message_pin is not None:
            if calls or answers:
                raise PlannerError(
                    f"message {message_id!r} is a tool call or result, which is only sent "
                    f"with its partner; pin turn {stable} instead"
                )
            pinned[position] = message_pin
            found_messages.add(message_id)
            continue
        turn_pin = turn_pins.get(stable) if stable is not None else None
        if turn_pin is not None and stable is not None:
            found_turns.add(stable)
            if not (calls or answers):
                pinned[position] = turn_pin
    missing_turns = sorted(set(turn_pins) - found_turns)
    if missing_turns:
        raise PlannerError(f"cannot pin turn {missing_turns[0]}: the session has no such turn")
    missing_messages = sorted(set(message_pins) - found_messages)
    if missing_messages:
        raise PlannerError(
            f"cannot pin message {missing_messages[0]!r}: the session has no such message"
        )
    return pinned


def model_caps(
    model: str | None,
    *,
    context_length: int | None = None,
    max_completion_tokens: int | None = None,
    max_prompt_tokens: int | None = None,
    request_max_tokens: int | None = None,
) -> ModelCaps:
    """Caps for ``model`` from the table of known models (``gcengine.context_limits``), each
    figure overridden by the one given here."""
    limits = model_limits(model)
    return ModelCaps(
        model=model,
        context_length=context_length
        if context_length is not None
        else (limits.context_length if limits else None),
        provider_max_completion_tokens=max_completion_tokens
        if max_completion_tokens is not None
        else (limits.max_completion_tokens if limits else None),
        max_prompt_tokens=max_prompt_tokens,
        request_max_tokens=request_max_tokens,
    )


def session_caps(
    session: Session,
    *,
    model: str | None = None,
    context_length: int | None = None,
    request_max_tokens: int | None = None,
) -> ModelCaps:
    """Caps for planning ``session``: ``model`` (default: the session's) from the table; the
    window is ``context_length`` when given, else the one the file states (when it states one
    and no other model is asked for), else the table's."""
    stated = session.context_limit_origin is ContextLimitOrigin.FILE
    if context_length is None and model is None and stated:
        context_length = session.context_limit
    return model_caps(
        model or session.model,
        context_length=context_length,
        request_max_tokens=request_max_tokens,
    )
