"""``gc_summarize``: replace the oldest removable turns with one summary, chained to the
previous one (JAATO's); under JAATO's rules, every turn that is not recent, pinned or locked,
and no summarizer is a failure. Its keys, the summary's cap and the summarizer, are hybrid's
too."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel

from gcengine.errors import SummarizerError
from gcengine.gc.plan import Collection, Decision, jaato_turn_details
from gcengine.gc.strategy import Notices, Strategy
from gcengine.gc.summarizers import DEFAULT_MAX_SUMMARY_TOKENS
from gcengine.gc.summarizing import (
    NO_SUMMARIZER,
    summarize_units,
    summarizer_given,
    summary_limits,
    units_for_summary,
)
from gcengine.messages import MessageKind
from gcengine.strategies.common import EVERY_STRATEGY_READS, NOOP_TEMPLATE, RULES
from gcengine.strategies.keys import KeySpec
from gcengine.strategies.spec import StrategySpec
from gcengine.tokens import TokenCounter


class SummarizeKeys(BaseModel):
    """The keys of a strategy that writes summaries."""

    max_summary_tokens: Annotated[
        int | None,
        KeySpec(
            "Max summary tokens",
            f"The most tokens a summary may take; empty means {DEFAULT_MAX_SUMMARY_TOKENS}.",
            "whole_number",
            minimum=1,
            written_when_default=False,
            plugin_option=True,
        ),
    ] = None


SUMMARIZER = "summarizer"
"""The ``plugin_config`` option naming what writes summaries."""
SUMMARIZER_OPTION = KeySpec(
    "Summarizer",
    "What writes summaries: extractive (summarize's and hybrid's default; reachability writes "
    "a summary of what it stashes only when one is named: offline and deterministic), digest "
    "(offline and deterministic: the task, files, errors, decisions and open work), llm "
    "(an OpenAI-compatible endpoint set where the engine runs) or provider (the project's "
    "own provider, OpenAI-compatible or Anthropic, with the extractive summary when it fails).",
    "choice",
    choices=("extractive", "digest", "llm", "provider"),
)
SUMMARIZING_READS = ("max_summary_tokens", f"plugin_config.{SUMMARIZER}")
"""What every strategy that writes summaries reads, besides the common keys."""


class SummarizeStrategy(Strategy):
    """Replace the oldest removable turns with one summary, chained to the previous one."""

    name = "gc_summarize"
    notices = Notices(
        template="Context cleaned: summarized {removed} old turns into context summary.",
        placeholders={
            "removed": "conversation turns folded into the summary",
            "kept": "recent conversation turns kept",
            "truncated": "0: every turn that goes is summarized",
            "summarized": "conversation turns folded into the summary",
            "items": "entries in the removal ledger (one a turn)",
            "freed": "tokens freed, less the summary written",
            "tokens_freed": "tokens freed, less the summary written",
        },
        noop=True,
    )
    follows_rules = True

    def decide(self, collection: Collection, counter: TokenCounter) -> Decision:
        if collection.jaato_rules:
            return self._jaato_decision(collection, counter)
        decision = Decision(details={"preserve_count": collection.preserve_recent})
        candidates = collection.oldest_units(
            {MessageKind.CHAT, MessageKind.SUMMARY, MessageKind.NOTICE}
        )
        _, most = summary_limits(collection, self._options, counter)
        summarize_units(
            collection,
            units_for_summary(collection, candidates, most),
            counter,
            self._options,
            decision,
        )
        return decision

    def _jaato_decision(self, collection: Collection, counter: TokenCounter) -> Decision:
        """JAATO's: every turn that is not protected into one summary; no summarizer fails."""
        if not summarizer_given(self._options):
            raise SummarizerError(NO_SUMMARIZER)
        decision = Decision()
        units = [collection.turn_unit(p) for p in collection.removable_turns()]
        if units:
            summarize_units(collection, units, counter, self._options, decision)
        decision.details.update(jaato_turn_details(collection, decision))
        decision.details.setdefault("summary_tokens", 0)
        return decision


SPEC = StrategySpec(
    plugin=SummarizeStrategy,
    label="summarize",
    description="replace old turns with a summary",
    reads=(*EVERY_STRATEGY_READS, NOOP_TEMPLATE, RULES, *SUMMARIZING_READS),
    jaato_plugin="gc_gcengine_summarize",
    keys=SummarizeKeys,
    options={SUMMARIZER: SUMMARIZER_OPTION},
    inserts=("summary", "notice"),
    starter_policies={
        "Summarize old turns": {
            "type": "gc_summarize",
            "threshold_percent": 80,
            "target_percent": 60,
            "preserve_recent_turns": 5,
            "plugin_config": {"summarizer": "extractive"},
        },
    },
)
