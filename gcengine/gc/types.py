"""The collector's contract, compatible with JAATO's so plugins move between the two.

A plugin decides *what* to forget and returns a new history with a removal list; the caller
(``run_gc``, or an agent framework) applies it. ``collect`` never mutates its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, computed_field

from gcengine.budget import InstructionBudget, InstructionSource
from gcengine.gc.stash import Stash
from gcengine.messages import Message, turn_number

if TYPE_CHECKING:
    # Policies sit above the machinery that carries them out: named in signatures only.
    from gcengine.config import GCConfig


class GCTriggerReason(StrEnum):
    """Why a collection ran. JAATO's values, ``continuous``, which JAATO reports as
    ``threshold`` (usage passed the target in continuous mode), and ``incremental`` (usage passed
    the target, and a reachability policy takes a small batch after the turn)."""

    THRESHOLD = "threshold"
    CONTINUOUS = "continuous"
    MANUAL = "manual"
    TURN_LIMIT = "turn_limit"
    PRE_MESSAGE = "pre_message"
    CONTEXT_LIMIT = "context_limit"
    INCREMENTAL = "incremental"


class RemovalReason(StrEnum):
    """Why an item went; JAATO's values, so ledgers from both read alike, and the reachability
    strategy's two: nothing kept refers to it, or it was reachable and scored low once nothing
    unreachable was left."""

    TRUNCATED = "truncated"
    SUMMARIZED = "summarized"
    TRUNCATED_FALLBACK = "truncated_fallback"
    ENRICHMENT_BULK_CLEAR = "enrichment_bulk_clear"
    EPHEMERAL = "ephemeral"
    PARTIAL_TURN = "partial_turn"
    PRESERVABLE_UNDER_PRESSURE = "preservable_under_pressure"
    UNREACHABLE = "unreachable"
    REACHABLE_LOW_SCORE = "reachable_low_score"


@dataclass(slots=True)
class RemovalVerdict:
    """Why the reachability strategy took an item, in figures and in words, and where it went:
    ``stashed`` (``gcengine.restore`` puts it back) or ``deleted``."""

    reachable: bool
    score: float
    sentence: str
    action: Literal["stashed", "deleted"]


@dataclass(slots=True)
class GCRemovalItem:
    """One thing a collection removed from the budget (and, with message ids, the history).

    ``child_key`` None means the whole source was cleared. ``turn_index`` is the stable index
    of the turn the item belonged to, when it belonged to one (``turn_number`` is what a person
    reads). A dataclass, as JAATO's: a
    collection makes thousands, and a model costs several times as much to make.
    """

    source: InstructionSource
    child_key: str | None = None
    tokens_freed: int = 0
    reason: str = ""
    message_ids: list[str] = field(default_factory=list)
    turn_index: int | None = None
    verdict: RemovalVerdict | None = None

    @property
    def turn_number(self) -> int | None:
        """The turn as a person reads it (JAATO's, from 1)."""
        return turn_number(self.turn_index) if self.turn_index is not None else None


class GCResult(BaseModel):
    success: bool
    items_collected: int
    tokens_before: int
    tokens_after: int
    plugin_name: str
    trigger_reason: GCTriggerReason
    notification: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    removal_list: list[GCRemovalItem] = Field(default_factory=list)
    stash: Stash | None = Field(
        default=None, description="what a reachability collection stashed, to restore from"
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tokens_freed(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)


ContextUsage = Mapping[str, Any]
"""JAATO's ``get_context_usage()`` dict: ``total_tokens``, ``context_limit``, ``percent_used``,
``turns`` (and more a plugin may ignore)."""


@runtime_checkable
class GCPlugin(Protocol):
    """What every collection strategy provides (JAATO's ``GCPlugin``)."""

    @property
    def name(self) -> str: ...

    def initialize(self, config: Mapping[str, Any] | None = None) -> None: ...

    def shutdown(self) -> None: ...

    def should_collect(
        self, context_usage: ContextUsage, config: GCConfig
    ) -> tuple[bool, GCTriggerReason | None]: ...

    def collect(
        self,
        history: Sequence[Message],
        context_usage: ContextUsage,
        config: GCConfig,
        reason: GCTriggerReason,
        budget: InstructionBudget | None = None,
    ) -> tuple[list[Message], GCResult]: ...


def context_usage(
    budget: InstructionBudget, turns: int, total: int | None = None
) -> dict[str, Any]:
    """The usage dict a plugin receives, computed from a budget (whose total is ``total``,
    when the caller knows it)."""
    total = budget.total_tokens() if total is None else total
    return {
        "total_tokens": total,
        "prompt_tokens": total,
        "output_tokens": 0,
        "context_limit": budget.context_limit,
        "percent_used": budget.percent_of(total),
        "tokens_remaining": max(0, budget.context_limit - total),
        "turns": turns,
    }
