"""What every strategy shares: removal units, protection, and applying a decision.

A strategy only *chooses* units, oldest first, until the target is met. This module builds
the units once (indexes by message id and by turn, no scans per removed item), decides what is
protected, and turns a choice into a new history, a removal ledger and figures.

Removal units:

* a whole turn;
* inside an older turn, a tool exchange: the model message(s) making calls together with every
  message answering them (merged when answers span several calls), so no result is ever left
  without its call or a call without its result;
* inside an older turn, a notice the collector wrote earlier;
* a budget entry outside the conversation (an ephemeral plugin entry, the enrichment source).

A unit takes the most protective policy of its members, so pulling a tool result never drags a
preservable or locked call with it.

Protected, never removed: the last ``preserve_recent_turns`` conversation turns, pinned turns
(stable index or message id), and any turn holding locked content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gcengine.budget import GCPolicy, InstructionBudget, InstructionSource
from gcengine.config import GCConfig
from gcengine.gc.types import ContextUsage, GCRemovalItem, GCResult, GCTriggerReason
from gcengine.messages import (
    Message,
    MessageKind,
    Part,
    Role,
    Turn,
    split_into_turns,
    uuid_shaped,
)
from gcengine.session import turn_key
from gcengine.tokens import TokenCounter, count_message, load_counter

# Most protective first: a unit takes the first of these that any member has.
_PROTECTION_ORDER = (
    GCPolicy.LOCKED,
    GCPolicy.PRESERVABLE,
    GCPolicy.CONDITIONAL,
    GCPolicy.PARTIAL,
    GCPolicy.EPHEMERAL,
)


@dataclass
class Unit:
    """Something a strategy can remove in one piece."""

    source: InstructionSource
    key: str | None
    message_ids: list[str]
    tokens: int
    policy: GCPolicy
    created_at: float
    turn_index: int | None = None
    turn_position: int | None = None
    whole_turn: bool = False


@dataclass
class Figures:
    """Per-message token figures and policies, read from the budget once."""

    tokens: dict[str, int]
    policies: dict[str, GCPolicy]
    created_at: dict[str, float]


def _message_figures(
    history: Sequence[Message], budget: InstructionBudget | None, counter: TokenCounter
) -> Figures:
    tokens: dict[str, int] = {}
    policies: dict[str, GCPolicy] = {}
    created: dict[str, float] = {}
    conversation = budget.get_entry(InstructionSource.CONVERSATION) if budget else None
    if conversation is not None:
        for _, entry in conversation.walk():
            if entry.children or not entry.message_ids:
                continue
            share, remainder = divmod(entry.tokens, len(entry.message_ids))
            for position, message_id in enumerate(entry.message_ids):
                tokens[message_id] = share + (remainder if position == 0 else 0)
                policies[message_id] = entry.gc_policy
                created[message_id] = entry.created_at or 0.0
    for position, message in enumerate(history):
        if message.message_id not in tokens:
            tokens[message.message_id] = count_message(message, counter)
            policies[message.message_id] = (
                GCPolicy.PRESERVABLE if message.kind is MessageKind.SUMMARY else GCPolicy.EPHEMERAL
            )
            created[message.message_id] = position / 1000
    return Figures(tokens, policies, created)


def _most_protective(policies: Iterable[GCPolicy]) -> GCPolicy:
    present = set(policies)
    for policy in _PROTECTION_ORDER:
        if policy in present:
            return policy
    return GCPolicy.EPHEMERAL


@dataclass
class Collection:
    """Everything a strategy needs to decide, computed once per collection."""

    history: list[Message]
    config: GCConfig
    turns: list[Turn]
    figures: Figures
    budget: InstructionBudget | None
    tokens_before: int
    context_limit: int
    protected: set[int] = field(default_factory=set)

    @property
    def target_tokens(self) -> int:
        return int(self.context_limit * self.config.target_percent / 100)

    @property
    def to_free(self) -> int:
        return self.tokens_before - self.target_tokens

    def turn_tokens(self, position: int) -> int:
        return sum(self.figures.tokens[m.message_id] for m in self.turns[position].messages)

    def turn_unit(self, position: int) -> Unit:
        turn = self.turns[position]
        ids = turn.message_ids
        return Unit(
            source=InstructionSource.CONVERSATION,
            key=turn_key(turn),
            message_ids=ids,
            tokens=self.turn_tokens(position),
            policy=_most_protective(self.figures.policies[i] for i in ids),
            created_at=min(self.figures.created_at[i] for i in ids),
            turn_index=turn.index,
            turn_position=position,
            whole_turn=True,
        )

    def removable_turns(self) -> list[int]:
        """Positions of turns a strategy may remove whole, oldest first."""
        return [p for p in range(len(self.turns)) if p not in self.protected]

    def inner_units(self, position: int) -> list[Unit]:
        """Tool exchanges and notices inside an (unprotected) turn, in history order."""
        turn = self.turns[position]
        key = turn_key(turn)
        units: list[Unit] = []
        for group in _exchanges(turn.messages):
            ids = [m.message_id for m in group]
            units.append(
                Unit(
                    source=InstructionSource.CONVERSATION,
                    key=f"{key}/{ids[0]}",
                    message_ids=ids,
                    tokens=sum(self.figures.tokens[i] for i in ids),
                    policy=_most_protective(self.figures.policies[i] for i in ids),
                    created_at=min(self.figures.created_at[i] for i in ids),
                    turn_index=turn.index,
                    turn_position=position,
                )
            )
        return units


def _exchanges(messages: Sequence[Message]) -> list[list[Message]]:
    """Group a turn's tool calls with every message answering them; notices stand alone.

    Messages joined through a shared call id end up in one group (a union over call ids), so
    a parallel batch answered across several messages is one exchange.
    """
    owner: dict[str, int] = {}
    parent: list[int] = []

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    members: list[Message] = []
    for message in messages:
        calls = [c.id for c in message.function_calls if c.id]
        answers = [r.call_id for r in message.function_responses if r.call_id]
        if message.kind is MessageKind.NOTICE and not calls and not answers:
            members.append(message)
            parent.append(len(parent))
            continue
        if not calls and not answers:
            continue
        index = len(members)
        members.append(message)
        parent.append(index)
        for call_id in calls + answers:
            if call_id in owner:
                parent[find(index)] = find(owner[call_id])
            else:
                owner[call_id] = index
    # An exchange is complete only when every call in it is answered and every answer has
    # its call in this turn; anything else is left to whole-turn removal.
    groups: dict[int, list[Message]] = {}
    for index, message in enumerate(members):
        groups.setdefault(find(index), []).append(message)
    complete: list[list[Message]] = []
    for group in groups.values():
        called = {c.id for m in group for c in m.function_calls if c.id}
        answered = {r.call_id for m in group for r in m.function_responses if r.call_id}
        if called == answered:
            complete.append(group)
    complete.sort(key=lambda g: messages.index(g[0]))
    return complete


def pinned_positions(turns: Sequence[Turn], config: GCConfig) -> set[int]:
    pinned_indices = set(config.pinned_turn_indices)
    pinned_ids = set(config.pinned_message_ids)
    return {
        position
        for position, turn in enumerate(turns)
        if (turn.index is not None and turn.index in pinned_indices)
        or any(m.message_id in pinned_ids for m in turn.messages)
    }


def preserve_count(config: GCConfig, plugin_options: Mapping[str, Any]) -> int:
    """``preserve_recent_turns`` from the plugin's own options, else the policy's (as JAATO)."""
    value = plugin_options.get("preserve_recent_turns", config.preserve_recent_turns)
    return int(value)


def start_collection(
    history: Sequence[Message],
    context_usage: ContextUsage,
    config: GCConfig,
    budget: InstructionBudget | None,
    counter: TokenCounter | None,
    preserve_recent: int,
) -> Collection:
    history = list(history)
    counter = counter or load_counter()
    turns = split_into_turns(history)
    figures = _message_figures(history, budget, counter)
    if budget is not None:
        tokens_before = budget.total_tokens()
        limit = budget.context_limit
    else:
        tokens_before = sum(figures.tokens.values())
        limit = int(context_usage.get("context_limit") or 0) or max(tokens_before, 1)
    collection = Collection(
        history=history,
        config=config,
        turns=turns,
        figures=figures,
        budget=budget,
        tokens_before=tokens_before,
        context_limit=limit,
    )
    chat_positions = [p for p, t in enumerate(turns) if t.kind is MessageKind.CHAT]
    recent = set(chat_positions[-preserve_recent:]) if preserve_recent else set()
    locked = {
        p
        for p, turn in enumerate(turns)
        if any(figures.policies[m.message_id] is GCPolicy.LOCKED for m in turn.messages)
    }
    collection.protected = recent | pinned_positions(turns, config) | locked
    return collection


def marked_message(kind: MessageKind, text: str, seed: Iterable[str], **metadata: Any) -> Message:
    """A summary or notice: a user-role message (JAATO's shape) that says what it is."""
    digest = hashlib.blake2b(f"{kind.value}:{text}".encode(), digest_size=16)
    for message_id in seed:
        digest.update(message_id.encode())
    return Message(
        role=Role.USER,
        parts=[Part.from_text(text)],
        message_id=uuid_shaped(digest.hexdigest()),
        kind=kind,
        metadata=metadata,
    )


@dataclass
class Decision:
    """What a strategy chose; ``apply`` turns it into a history and a result."""

    removed: list[tuple[Unit, str]] = field(default_factory=list)
    inserted: Message | None = None
    details: dict[str, Any] = field(default_factory=dict)
    freed: int = 0  # kept as units are added: strategies ask after every candidate

    def remove(self, unit: Unit, reason: str) -> None:
        self.removed.append((unit, reason))
        self.freed += unit.tokens

    @property
    def removed_ids(self) -> set[str]:
        return {i for unit, _ in self.removed for i in unit.message_ids}


def take_until_target(
    collection: Collection, candidates: Iterable[Unit], reason: str, decision: Decision
) -> None:
    """Take candidates in order until the collection is at or below its target."""
    for unit in candidates:
        if collection.to_free - decision.freed <= 0:
            return
        decision.remove(unit, reason)


def apply(
    collection: Collection,
    decision: Decision,
    *,
    plugin_name: str,
    reason: GCTriggerReason,
    counter: TokenCounter | None,
    notification: str | None = None,
) -> tuple[list[Message], GCResult]:
    """Build the new history and the result."""
    removed_ids = decision.removed_ids
    new_history: list[Message] = []
    inserts = [m for m in (decision.inserted,) if m is not None]
    if notification is not None and decision.removed:
        inserts.append(
            marked_message(MessageKind.NOTICE, f"[System: {notification}]", sorted(removed_ids))
        )
    # Inserts go before the first turn anything was taken from: at a turn boundary, so they
    # never split a turn that keeps some of its messages.
    for turn in collection.turns:
        if inserts and any(m.message_id in removed_ids for m in turn.messages):
            new_history.extend(inserts)
            inserts = []
        new_history.extend(m for m in turn.messages if m.message_id not in removed_ids)
    new_history.extend(inserts)
    counter = counter or load_counter()
    added = sum(
        count_message(m, counter)
        for m in new_history
        if m.kind is not MessageKind.CHAT and m.message_id not in collection.figures.tokens
    )
    removal_list = [
        GCRemovalItem(
            source=unit.source,
            child_key=unit.key,
            tokens_freed=unit.tokens,
            reason=why,
            message_ids=list(unit.message_ids),
            turn_index=unit.turn_index,
        )
        for unit, why in decision.removed
    ]
    tokens_after = collection.tokens_before - decision.freed + added
    result = GCResult(
        success=True,
        items_collected=len(removal_list),
        tokens_before=collection.tokens_before,
        tokens_after=tokens_after,
        plugin_name=plugin_name,
        trigger_reason=reason,
        notification=notification if decision.removed else None,
        details={
            "target_tokens": collection.target_tokens,
            "tokens_to_free": max(0, collection.to_free),
            "turns_before": len(collection.turns),
            "turns_after": len(split_into_turns(new_history)),
            "protected_turns": sorted(
                t.index
                for p, t in enumerate(collection.turns)
                if p in collection.protected and t.index is not None
            ),
            **decision.details,
        },
        removal_list=removal_list,
    )
    return new_history, result


def failed(
    collection: Collection, plugin_name: str, reason: GCTriggerReason, error: str
) -> GCResult:
    return GCResult(
        success=False,
        items_collected=0,
        tokens_before=collection.tokens_before,
        tokens_after=collection.tokens_before,
        plugin_name=plugin_name,
        trigger_reason=reason,
        error=error,
    )
