"""``gc_hybrid``: generational, JAATO's: truncate ancient turns, summarize the middle, keep
recent ones; under JAATO's rules, every turn that is not recent, pinned or locked into one
summary (truncated without a summarizer)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel

from gcengine.gc.plan import (
    Collection,
    Decision,
    jaato_turn_details,
    take_every_turn,
    take_until_target,
)
from gcengine.gc.strategy import Notices, Strategy
from gcengine.gc.summarizing import summarize_units, summarizer_given
from gcengine.gc.types import RemovalReason
from gcengine.messages import MessageKind
from gcengine.strategies.common import EVERY_STRATEGY_READS, NOOP_TEMPLATE, RULES
from gcengine.strategies.keys import KeySpec
from gcengine.strategies.spec import StrategySpec
from gcengine.strategies.summarize import SUMMARIZING_READS
from gcengine.tokens import TokenCounter

DEFAULT_MIDDLE_TURNS = 10
"""The middle generation's size when a policy does not say."""


class HybridKeys(BaseModel):
    """The hybrid strategy's own key: the size of the middle generation."""

    summarize_middle_turns: Annotated[
        int | None,
        KeySpec(
            "Summarize middle turns",
            "How many turns before the preserved recent ones are summarized rather than "
            f"dropped; 0 only drops, empty means {DEFAULT_MIDDLE_TURNS}.",
            "whole_number",
            minimum=0,  # 0 is meaningful: the strategy then only truncates
            written_when_default=False,
            plugin_option=True,
        ),
    ] = None


class HybridStrategy(Strategy):
    """Generational: truncate ancient turns, summarize the middle, keep recent ones.

    ``preserve_recent_turns`` sets the young generation, ``summarize_middle_turns`` (default
    10) the middle one; everything older is ancient. Ancient turns go first (truncated, oldest
    first); only if that does not reach the target is the middle generation summarized. With
    ``summarize_middle_turns`` 0 it is plain truncation; with a large value, plain summarizing.
    """

    name = "gc_hybrid"
    notices = Notices(
        template=(
            "Context cleaned: {truncated} turns removed, {summarized} turns summarized, "
            "{kept} recent turns preserved."
        ),
        placeholders={
            "removed": "conversation turns removed, truncated or summarized",
            "kept": "recent conversation turns kept",
            "truncated": "ancient conversation turns removed without a summary",
            "summarized": "middle conversation turns folded into the summary",
            "items": "entries in the removal ledger (one a turn)",
            "freed": "tokens freed, less the summary written",
            "tokens_freed": "tokens freed, less the summary written",
        },
        noop=True,
    )
    follows_rules = True

    def decide(self, collection: Collection, counter: TokenCounter) -> Decision:
        decision = Decision()
        middle_size = self._options.get(
            "summarize_middle_turns", collection.config.summarize_middle_turns
        )
        middle_size = DEFAULT_MIDDLE_TURNS if middle_size is None else int(middle_size)
        if collection.jaato_rules:
            return self._jaato_decision(collection, counter, middle_size)
        kinds = collection.layout.kinds
        # Oldest first: removable turns, then pieces of the turns that may not go whole (a long
        # turn's older exchanges); the middle generation is the youngest of them.
        units = list(collection.oldest_units({MessageKind.CHAT, MessageKind.NOTICE}))
        middle = units[-middle_size:] if middle_size else []
        ancient = units[: len(units) - len(middle)]  # middle is a suffix
        take_until_target(collection, ancient, RemovalReason.TRUNCATED, decision)
        truncated = len(decision.removed)
        decision.details["turns_truncated"] = truncated
        if collection.still_short(decision) and middle:
            summaries = [
                collection.turn_unit(p)
                for p in collection.removable_turns()
                if kinds[p] is MessageKind.SUMMARY
            ]
            chosen = sorted(summaries + middle, key=lambda unit: unit.positions[0])
            summarize_units(collection, chosen, counter, self._options, decision)
        elif middle and truncated:
            # JAATO's hybrid summarizes every collection's middle; this one reaches the target
            # with the oldest turns first and keeps the middle word for word when that is
            # enough, which the run must say (its name promises a summary).
            decision.details["middle_kept"] = (
                f"dropping {truncated:,} of the {len(ancient):,} ancient turns reached the "
                f"target, so the {len(middle):,} middle turns were kept as they are, not "
                "summarized"
            )
        decision.details.update(
            {
                "turns_summarized": decision.details.get("turns_summarized", 0),
                "summary_tokens": decision.details.get("summary_tokens", 0),
                "preserve_recent": collection.preserve_recent,
                "summarize_middle": middle_size,
                "ancient_turns": len(ancient),
                "middle_turns": len(middle),
            }
        )
        return decision

    def _jaato_decision(
        self, collection: Collection, counter: TokenCounter, middle_size: int
    ) -> Decision:
        """JAATO's: with a summarizer, the ancient and middle generations (every turn that is
        not protected) into one summary; without one, all of them truncated. The middle
        generation's size changes nothing taken, as in JAATO; a summarizer that fails fails
        the collection."""
        decision = Decision()
        had_summarizer = summarizer_given(self._options)
        if had_summarizer:
            units = [collection.turn_unit(p) for p in collection.removable_turns()]
            if units:
                summarize_units(collection, units, counter, self._options, decision)
        else:
            take_every_turn(collection, RemovalReason.TRUNCATED, decision)
        summarized = sum(1 for _, why in decision.removed if why == RemovalReason.SUMMARIZED)
        decision.details.update(
            {
                **jaato_turn_details(collection, decision),
                "turns_truncated": len(decision.removed) - summarized,
                "turns_summarized": summarized,
                "preserve_recent": collection.preserve_recent,
                "summarize_middle": middle_size,
                "had_summarizer": had_summarizer,
                "summary_tokens": decision.details.get("summary_tokens", 0),
            }
        )
        return decision


SPEC = StrategySpec(
    plugin=HybridStrategy,
    label="hybrid",
    description="drop ancient turns, summarize the middle",
    reads=(
        *EVERY_STRATEGY_READS,
        NOOP_TEMPLATE,
        RULES,
        "summarize_middle_turns",
        *SUMMARIZING_READS,
    ),
    jaato_plugin="gc_gcengine_hybrid",
    keys=HybridKeys,
    inserts=("summary", "notice"),
    starter_policies={
        "Hybrid (summarize the middle)": {
            "type": "gc_hybrid",
            "threshold_percent": 80,
            "target_percent": 50,
            "preserve_recent_turns": 5,
            "summarize_middle_turns": 20,
        },
    },
)
