"""``gc_budget``: JAATO's policy-aware strategy, ephemeral content first, preservable content
only under pressure; the one strategy that also takes budget entries outside the conversation."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from gcengine.budget import GCPolicy, InstructionBudget, InstructionSource
from gcengine.conversation import ConversationIndex
from gcengine.gc.plan import Collection, Decision, Unit, oldest_first, take_until_target
from gcengine.gc.strategy import Notices, Strategy
from gcengine.gc.types import ContextUsage, GCResult, GCTriggerReason, RemovalReason
from gcengine.messages import Message
from gcengine.strategies.common import EVERY_STRATEGY_READS, RULES
from gcengine.strategies.spec import StrategySpec
from gcengine.strategies.truncate import TruncateStrategy
from gcengine.tokens import TokenCounter

if TYPE_CHECKING:
    # Policies are composed of the strategies' keys: named in signatures only.
    from gcengine.config import GCConfig
    from gcengine.session.cut import Cut


class BudgetStrategy(Strategy):
    """Policy-aware, in phases, each only while the target is not yet met:

    1a. clear the enrichment source whole; 1b. other ephemeral entries, oldest first (plugin
    entries, and complete tool exchanges and notices inside older turns); 2. whole older turns
    that hold nothing preservable; 3. preservable content, only when usage is at or above
    ``pressure_percent`` and never in continuous mode. Locked content never goes. Without a
    budget it falls back to truncation and says so: to the target under the engine's rules,
    every turn that is not recent, pinned or locked under JAATO's (JAATO's fallback). With a
    budget, both rules collect as above.
    """

    name = "gc_budget"
    notices = Notices(
        template="Context cleaned: removed {items} items, freed {freed} tokens.",
        placeholders={
            "removed": "conversation turns removed whole",
            "kept": "recent conversation turns kept whole",
            "truncated": "conversation turns removed whole",
            "summarized": "0: the budget strategy writes no summary",
            "items": "entries in the removal ledger (turns, tool exchanges, budget entries)",
            "freed": "tokens freed",
            "tokens_freed": "tokens freed",
        },
        noop=False,
    )

    def collect_cut(
        self,
        history: Sequence[Message],
        context_usage: ContextUsage,
        config: GCConfig,
        reason: GCTriggerReason,
        budget: InstructionBudget | None = None,
        *,
        counter: TokenCounter | None = None,
        conversation: ConversationIndex | None = None,
    ) -> tuple[list[Message], GCResult, Cut | None]:
        if budget is None:  # the fallback, a truncate, reads the rules; the phases do not
            fallback = _FallbackTruncate()
            fallback.initialize(self._options)
            new_history, result, cut = fallback.collect_cut(
                history, context_usage, config, reason, counter=counter
            )
            result.plugin_name = self.name
            result.details["mode"] = "fallback_truncate"
            return new_history, result, cut
        return super().collect_cut(
            history,
            context_usage,
            config,
            reason,
            budget,
            counter=counter,
            conversation=conversation,
        )

    def decide(self, collection: Collection, counter: TokenCounter) -> Decision:
        decision = Decision()
        budget = collection.budget
        assert budget is not None
        enrichment = budget.get_entry(InstructionSource.ENRICHMENT)
        if enrichment is not None and enrichment.total_tokens() > 0:
            unit = Unit(
                InstructionSource.ENRICHMENT,
                None,
                [],
                enrichment.total_tokens(),
                GCPolicy.EPHEMERAL,
                0.0,
            )
            take_until_target(collection, [unit], RemovalReason.ENRICHMENT_BULK_CLEAR, decision)
        ephemeral = oldest_first(
            collection,
            [u for u in _entry_units(collection) if u.policy is GCPolicy.EPHEMERAL],
            collection.ephemeral_units(),
            key=lambda u: (u.created_at, -u.tokens),
        )
        take_until_target(collection, ephemeral, RemovalReason.EPHEMERAL, decision)
        turns = self._remaining_turns(collection, decision, allow_preservable=False)
        take_until_target(collection, turns, RemovalReason.PARTIAL_TURN, decision)
        under_pressure = collection.under_pressure
        if under_pressure and collection.still_short(decision):
            preservable = oldest_first(
                collection,
                [u for u in _entry_units(collection) if u.policy is GCPolicy.PRESERVABLE],
                self._remaining_turns(collection, decision, allow_preservable=True),
                key=lambda u: u.created_at,
            )
            take_until_target(
                collection, preservable, RemovalReason.PRESERVABLE_UNDER_PRESSURE, decision
            )
        counts = decision.reasons()
        decision.details.update(
            {
                "enrichment_cleared": counts.get(RemovalReason.ENRICHMENT_BULK_CLEAR, 0) > 0,
                "ephemeral_removed": counts.get(RemovalReason.EPHEMERAL, 0),
                "partial_removed": counts.get(RemovalReason.PARTIAL_TURN, 0),
                "preservable_removed": counts.get(RemovalReason.PRESERVABLE_UNDER_PRESSURE, 0),
                "pressure_applied": under_pressure,
            }
        )
        return decision

    @staticmethod
    def _remaining_turns(
        collection: Collection, decision: Decision, *, allow_preservable: bool
    ) -> Iterator[Unit]:
        """Whole removable turns, minus what earlier phases already took from them, oldest
        first; what was taken is read when the first is asked for, before this phase takes any."""
        taken = set(decision.removed_positions)
        # A whole-turn unit takes every message its turn had left: such turns are passed over
        # without looking at their messages (most turns, once the ephemeral phase is done).
        gone = decision.turns_taken_whole()
        policies = collection.figures.policies
        for position in collection.removable_turns():
            if position in gone:
                continue
            start, end = collection.layout.span(position)
            left = [p for p in range(start, end) if p not in taken]
            if not left:
                continue
            holds_preservable = any(policies[p] is GCPolicy.PRESERVABLE for p in left)
            if holds_preservable and not allow_preservable:
                continue
            yield collection.turn_unit(position, left)


class _FallbackTruncate(TruncateStrategy):
    """What gc_budget does without a budget: truncation, labelled as such, without notices."""

    removal_reason = RemovalReason.TRUNCATED_FALLBACK

    def _notifies(self, config: GCConfig) -> bool:
        return False


def _entry_units(collection: Collection) -> list[Unit]:
    """Removable budget entries outside the conversation (plugin instructions, tool schemas).

    A CONDITIONAL entry is decided by the plugin owning its tool; with no such plugin here it
    counts as ephemeral, as it does in JAATO. Messages an entry names go with it, except where
    nothing may be taken (``Collection.open_positions``).
    """
    budget = collection.budget
    assert budget is not None
    units = []
    for source in (InstructionSource.SYSTEM, InstructionSource.PLUGIN):
        entry = budget.get_entry(source)
        if entry is None:
            continue
        for key, child in entry.children.items():
            policy = child.effective_gc_policy()
            if policy is GCPolicy.CONDITIONAL:
                policy = GCPolicy.EPHEMERAL
            if policy in (GCPolicy.EPHEMERAL, GCPolicy.PRESERVABLE):
                units.append(
                    Unit(
                        source,
                        key,
                        list(child.message_ids),
                        child.total_tokens(),
                        policy,
                        child.created_at or 0.0,
                        positions=collection.open_positions(child.message_ids),
                    )
                )
    return units


SPEC = StrategySpec(
    plugin=BudgetStrategy,
    label="budget",
    description="policy-aware, ephemeral content first",
    reads=(*EVERY_STRATEGY_READS, RULES),
    jaato_plugin="gc_gcengine_budget",
    conversation_only=False,
    starter_policies={
        "Budget 80/60": {
            "type": "gc_budget",
            "threshold_percent": 80,
            "target_percent": 60,
            "pressure_percent": 90,
            "preserve_recent_turns": 5,
        },
        "Continuous budget": {
            "type": "gc_budget",
            "threshold_percent": 80,
            "target_percent": 60,
            "pressure_percent": 0,
            "preserve_recent_turns": 5,
        },
    },
)
