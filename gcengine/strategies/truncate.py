"""``gc_truncate``: drop the oldest removable turns until the target is reached, then, inside
a long turn, its oldest exchanges and the model's text between them; under JAATO's rules,
every turn that is not recent, pinned or locked, whatever the target (JAATO's)."""

from __future__ import annotations

from gcengine.gc.plan import (
    Collection,
    Decision,
    jaato_turn_details,
    take_every_turn,
    take_until_target,
)
from gcengine.gc.strategy import Notices, Strategy
from gcengine.gc.types import RemovalReason
from gcengine.messages import MessageKind
from gcengine.strategies.common import EVERY_STRATEGY_READS, NOOP_TEMPLATE, RULES
from gcengine.strategies.spec import StrategySpec
from gcengine.tokens import TokenCounter


class TruncateStrategy(Strategy):
    """Drop the oldest removable turns until the target is reached."""

    name = "gc_truncate"
    notices = Notices(
        template="Context cleaned: removed {removed} old turns, kept {kept} recent turns.",
        placeholders={
            "removed": "conversation turns removed",
            "kept": "recent conversation turns kept",
            "truncated": "conversation turns removed (all of them are truncated)",
            "summarized": "0: truncation writes no summary",
            "items": "entries in the removal ledger (one a turn)",
            "freed": "tokens freed",
            "tokens_freed": "tokens freed",
        },
        noop=True,
    )
    removal_reason = RemovalReason.TRUNCATED
    follows_rules = True

    def decide(self, collection: Collection, counter: TokenCounter) -> Decision:
        if collection.jaato_rules:
            decision = Decision()
            take_every_turn(collection, self.removal_reason, decision)
            decision.details.update(jaato_turn_details(collection, decision))
            return decision
        decision = Decision(details={"preserve_count": collection.preserve_recent})
        candidates = collection.oldest_units({MessageKind.CHAT, MessageKind.NOTICE})
        take_until_target(collection, candidates, self.removal_reason, decision)
        return decision


SPEC = StrategySpec(
    plugin=TruncateStrategy,
    label="truncate",
    description="drop the oldest turns",
    reads=(*EVERY_STRATEGY_READS, NOOP_TEMPLATE, RULES),
    jaato_plugin="gc_gcengine_truncate",
)
