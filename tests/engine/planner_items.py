"""Builders for planner items in the specification's notation.

``Items`` hands out increasing ``seq`` numbers in the order items are written, unless an
example gives one; ``sys``, ``pin``, ``msg`` and ``rag`` follow the worked examples'
``id(tokens, ...)`` shorthand.
"""

from __future__ import annotations

from typing import Any

from gcengine.planner import (
    ContextPlan,
    ItemRole,
    ModelCaps,
    PlannerConfig,
    PlannerItem,
    Priority,
    SectionShares,
    Source,
    TTLPolicy,
    TTLState,
)

# The examples' shared settings: L 2000, request max 500, S 100, so B = 1400.
SHARED_CAPS = ModelCaps(context_length=2000, request_max_tokens=500)
UNLIMITED = TTLState.UNLIMITED
NONE_REMAINING = TTLState.NONE_REMAINING
HIGH, NORMAL, LOW = Priority.HIGH, Priority.NORMAL, Priority.LOW


def shared_config(**changes: Any) -> PlannerConfig:
    values: dict[str, Any] = {
        "safety_buffer": 100,
        "shares": SectionShares(system_pinned=15, conversation=55, rag=30),
        "ttl_policy": TTLPolicy.AUTOMATIC,
        "spillover": True,
        **changes,
    }
    return PlannerConfig.model_validate(values)


class Items:
    """Items written in order; each gets the next seq unless one is given."""

    def __init__(self) -> None:
        self.items: list[PlannerItem] = []
        self.next_seq = 0

    def _add(self, seq: int | None, **fields: Any) -> PlannerItem:
        if seq is None:
            seq = self.next_seq
        self.next_seq = max(self.next_seq, seq + 1)
        item = PlannerItem.model_validate({**fields, "seq": seq})
        self.items.append(item)
        return item

    def sys(self, tokens: int = 200, item_id: str = "sys", seq: int | None = None) -> PlannerItem:
        return self._add(seq, id=item_id, source=Source.SYSTEM, role=ItemRole.SYSTEM, tokens=tokens)

    def pin(
        self,
        item_id: str,
        tokens: int,
        priority: Priority = NORMAL,
        ttl: int | TTLState | None = None,
        *,
        seq: int | None = None,
        review_pending: bool = False,
        turn: int | None = None,
    ) -> PlannerItem:
        return self._add(
            seq,
            id=item_id,
            source=Source.PINNED,
            role=ItemRole.NOTE if turn is None else ItemRole.USER,
            tokens=tokens,
            priority=priority,
            ttl=ttl,
            review_pending=review_pending,
            turn=turn,
        )

    def msg(
        self,
        item_id: str,
        tokens: int,
        turn: int,
        *,
        calls: tuple[str, ...] = (),
        result: tuple[str, ...] = (),
        seq: int | None = None,
    ) -> PlannerItem:
        """``u…`` is a user message, ``a…`` an assistant message, ``t…`` a tool result."""
        role = {"u": ItemRole.USER, "a": ItemRole.ASSISTANT, "t": ItemRole.TOOL}[item_id[0]]
        return self._add(
            seq,
            id=item_id,
            source=Source.CONVERSATION,
            role=role,
            tokens=tokens,
            turn=turn,
            tool_calls=calls,
            tool_call_ids=result,
        )

    def rag(self, item_id: str, tokens: int, score: float, seq: int | None = None) -> PlannerItem:
        return self._add(
            seq, id=item_id, source=Source.RAG, role=ItemRole.SYSTEM, tokens=tokens, score=score
        )


def decisions(plan: ContextPlan) -> dict[str, str]:
    """Every item's decision code by id (included and excluded)."""
    return {item.id: item.code for item in (*plan.included, *plan.excluded)}


def included_ids(plan: ContextPlan) -> list[str]:
    return [item.id for item in plan.included]


def excluded_codes(plan: ContextPlan) -> dict[str, str]:
    return {item.id: item.code for item in plan.excluded}


def allocation(plan: ContextPlan) -> tuple[int, int, int]:
    sections = plan.sections
    return (
        sections.system_pinned.allocated,
        sections.conversation.allocated,
        sections.rag.allocated,
    )
