"""The four strategies: truncate, summarize, hybrid, budget.

Every one stops as soon as usage is at or below ``target_percent`` (oldest first), never
removes locked content, recent or pinned turns, and removes whole turns or, inside older turns,
complete tool exchanges (see ``plan``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from gcengine.budget import GCPolicy, InstructionBudget, InstructionSource
from gcengine.config import NOTIFICATION_FIELDS, GCConfig
from gcengine.conversation import ConversationIndex
from gcengine.errors import SummarizerError
from gcengine.gc.plan import (
    Collection,
    Decision,
    Unit,
    apply,
    failed,
    marked_message,
    notice_message,
    oldest_first,
    preserve_count,
    start_collection,
    take_until_target,
    touched_turns,
)
from gcengine.gc.summarizers import (
    DEFAULT_MAX_SUMMARY_TOKENS,
    SummaryRequest,
    summarizer_from_options,
    summary_text,
)
from gcengine.gc.types import ContextUsage, GCResult, GCTriggerReason, RemovalReason
from gcengine.messages import Message, MessageKind
from gcengine.tokens import TokenCounter, count_message, load_counter

DEFAULT_TEMPLATES = {
    "gc_truncate": "Context cleaned: removed {removed} old turns, kept {kept} recent turns.",
    "gc_summarize": "Context cleaned: summarized {removed} old turns into context summary.",
    "gc_hybrid": (
        "Context cleaned: {truncated} turns removed, {summarized} turns summarized, "
        "{kept} recent turns preserved."
    ),
    "gc_budget": "Context cleaned: removed {items} items, freed {freed} tokens.",
    "gc_reachability": (
        "Context cleaned: stashed {stashed} segments, deleted {deleted}, freed {freed} tokens."
    ),
}
DEFAULT_NOOP_TEMPLATE = (
    "GC triggered but all {total} turns preserved (preserve_recent_turns={preserve}). "
    "No context removed."
)


class Strategy:
    """Shared plumbing: options, triggering, and turning a decision into a result.

    ``noop_notice``: whether a collection that was needed but could take nothing (everything
    left is protected) says so, with ``noop_notification_template``, when ``notify_on_gc`` is
    set. JAATO's truncate, summarize and hybrid do; its budget strategy does not.
    """

    name = "gc_strategy"
    noop_notice = True

    def __init__(self) -> None:
        self._options: dict[str, Any] = {}
        self.initialized = False

    def initialize(self, config: Mapping[str, Any] | None = None) -> None:
        self._options = dict(config or {})
        self.initialized = True

    def shutdown(self) -> None:
        self._options = {}
        self.initialized = False

    def should_collect(
        self, context_usage: ContextUsage, config: GCConfig
    ) -> tuple[bool, GCTriggerReason | None]:
        """Threshold mode: at or above the threshold (``threshold``). Continuous mode: above
        the target (``continuous``; JAATO says ``threshold`` there too).

        ``max_turns`` triggers in both modes (JAATO's budget strategy skips it in continuous).
        """
        if not config.auto_trigger:
            return False, None
        percent = float(context_usage.get("percent_used", 0.0))
        if config.continuous_mode:
            if percent > config.target_percent:
                return True, GCTriggerReason.CONTINUOUS
        elif percent >= config.threshold_percent:
            return True, GCTriggerReason.THRESHOLD
        turns = int(context_usage.get("turns", 0))
        if config.max_turns is not None and turns >= config.max_turns:
            return True, GCTriggerReason.TURN_LIMIT
        return False, None

    def collect(
        self,
        history: Sequence[Message],
        context_usage: ContextUsage,
        config: GCConfig,
        reason: GCTriggerReason,
        budget: InstructionBudget | None = None,
        *,
        counter: TokenCounter | None = None,
        conversation: ConversationIndex | None = None,
    ) -> tuple[list[Message], GCResult]:
        """JAATO's ``collect``. ``conversation``, when given, is the index of ``history`` that
        stands for the budget's conversation entry (a replay keeps one and builds no tree)."""
        counter = counter or load_counter()
        collection = start_collection(
            history,
            context_usage,
            config,
            budget,
            counter,
            preserve_count(config, self._options),
            conversation,
        )
        return self.collect_from(collection, reason, counter)

    def collect_from(
        self, collection: Collection, reason: GCTriggerReason, counter: TokenCounter
    ) -> tuple[list[Message], GCResult]:
        """``collect`` on a collection already started (what a dry run has laid out)."""
        config = collection.config
        if not self.has_work(collection):
            decision = Decision(
                details={"message": "Already at or below target, nothing to collect"}
            )
            return apply(
                collection, decision, plugin_name=self.name, reason=reason, counter=counter
            )
        template = config.notification_template or DEFAULT_TEMPLATES[self.name]
        notifies = self._notifies(config)
        if notifies:
            collection.notice_reserve = self._notice_bound(collection, template, counter)
        try:
            decision = self.decide(collection, counter)
        except SummarizerError as error:
            return list(collection.history), failed(collection, self.name, reason, str(error))
        notification = None
        if decision.removed and notifies:
            notification, decision = self._settle(collection, decision, template, counter)
        if not decision.removed:
            return self._nothing_taken(collection, decision, config, reason, counter, notifies)
        new_history, result = apply(
            collection,
            decision,
            plugin_name=self.name,
            reason=reason,
            counter=counter,
            notification=notification,
        )
        return new_history, self.completed(collection, decision, new_history, result)

    def has_work(self, collection: Collection) -> bool:
        """Whether the collection must take anything: usage is above the target."""
        return collection.to_free > 0

    def completed(
        self,
        collection: Collection,
        decision: Decision,
        new_history: list[Message],
        result: GCResult,
    ) -> GCResult:
        """What a strategy adds to its result once its decision is applied: nothing, except
        the reachability strategy's stash."""
        return result

    def decide(self, collection: Collection, counter: TokenCounter) -> Decision:
        raise NotImplementedError

    def _notifies(self, config: GCConfig) -> bool:
        return bool(self._options.get("notify_on_gc", config.notify_on_gc))

    def _notice_bound(self, collection: Collection, template: str, counter: TokenCounter) -> int:
        """The most the notice can cost: the template with every figure as large as any can
        be (a figure with fewer digits never takes more tokens)."""
        largest = max(collection.tokens_before, len(collection.history))
        text = render_template(template, dict.fromkeys(NOTIFICATION_FIELDS[self.name], largest))
        return count_message(marked_message(MessageKind.NOTICE, f"[System: {text}]", ()), counter)

    def _settle(
        self, collection: Collection, decision: Decision, template: str, counter: TokenCounter
    ) -> tuple[str | None, Decision]:
        """The notice for a decision, once what it inserts is known never to grow the context:
        a summary that would is dropped for truncation, and a decision that frees less than
        its notice costs is given up, saying why."""
        while True:
            notification = render_template(template, self.notification_fields(collection, decision))
            notice = count_message(notice_message(collection, decision, notification), counter)
            if decision.freed - decision.inserted_tokens - notice >= 0:
                return notification, decision
            if decision.inserted is None:
                return None, Decision(
                    details={
                        "message": "Nothing useful to collect: what may go "
                        f"({decision.freed:,} tokens) is less than the notice saying so "
                        f"({notice:,} tokens)",
                        "total_turns": collection.turn_count,
                        "preserve_count": collection.preserve_recent,
                    }
                )
            decision.truncate_instead(
                f"the summary ({decision.inserted_tokens:,} tokens) and the notice ({notice:,}) "
                f"would cost more than the {decision.freed:,} tokens they replace"
            )

    def _nothing_taken(
        self,
        collection: Collection,
        decision: Decision,
        config: GCConfig,
        reason: GCTriggerReason,
        counter: TokenCounter,
        notifies: bool,
    ) -> tuple[list[Message], GCResult]:
        """A collection was needed but took nothing: everything left is protected, or what may
        go is not worth its notice. JAATO's truncate, summarize and hybrid say so in a no-op
        notice; it is reported, never written, since it would grow the context."""
        all_protected = "message" not in decision.details
        if all_protected:
            decision.details.update(
                {
                    "message": "All turns preserved, nothing to collect",
                    "total_turns": collection.turn_count,
                    "preserve_count": collection.preserve_recent,
                }
            )
        notification = None
        if notifies and self.noop_notice and all_protected:
            template = config.noop_notification_template or DEFAULT_NOOP_TEMPLATE
            notification = render_template(
                template, {"total": collection.turn_count, "preserve": collection.preserve_recent}
            )
        return apply(
            collection,
            decision,
            plugin_name=self.name,
            reason=reason,
            counter=counter,
            notification=notification,
            write_notice=False,
        )

    def notification_fields(self, collection: Collection, decision: Decision) -> dict[str, int]:
        """Every variable any JAATO template uses, as ``NOTIFICATION_FIELD_MEANINGS`` says."""
        kinds = collection.layout.kinds
        truncated = summarized = 0
        for unit, why in decision.removed:
            position = unit.turn_position
            if unit.whole_turn and position is not None and kinds[position] is MessageKind.CHAT:
                if why == RemovalReason.SUMMARIZED:
                    summarized += 1
                else:
                    truncated += 1
        freed = decision.freed - decision.inserted_tokens
        return {
            "removed": truncated + summarized,
            "kept": _recent_turns_kept(collection, decision),
            "truncated": truncated,
            "summarized": summarized,
            "items": len(decision.removed),
            "freed": freed,
            "tokens_freed": freed,
        }


def render_template(template: str, fields: Mapping[str, int]) -> str:
    """A notice's text. Never raises: a name the strategy does not provide stays as written
    (a policy loaded from gc.json cannot have one while notices are on; one built in code can)."""

    class _AsWritten(dict[str, Any]):
        def __missing__(self, key: str) -> str:
            return "{" + key + "}"

    try:
        return template.format_map(_AsWritten(fields))
    except (ValueError, IndexError, AttributeError, TypeError):
        return template


def _recent_turns_kept(collection: Collection, decision: Decision) -> int:
    """The recent conversation turns a decision kept whole: not summaries or notices, not a
    turn it took anything from (a tool exchange, say), and not the turn holding the original
    request (locked, kept because it may never go)."""
    gone = touched_turns(collection, decision)
    locked = collection.figures.locked_turns
    return sum(
        1
        for p, kind in enumerate(collection.layout.kinds)
        if kind is MessageKind.CHAT and p not in gone and p not in locked
    )


def _whole_turns(collection: Collection, kinds: set[MessageKind]) -> Iterator[Unit]:
    """Removable turns of ``kinds`` as units, oldest first, built as they are asked for."""
    return (
        collection.turn_unit(p)
        for p in collection.removable_turns()
        if collection.layout.kinds[p] in kinds
    )


class TruncateStrategy(Strategy):
    """Drop the oldest removable turns until the target is reached."""

    name = "gc_truncate"
    removal_reason = RemovalReason.TRUNCATED

    def decide(self, collection: Collection, counter: TokenCounter) -> Decision:
        decision = Decision(details={"preserve_count": collection.preserve_recent})
        candidates = _whole_turns(collection, {MessageKind.CHAT, MessageKind.NOTICE})
        take_until_target(collection, candidates, self.removal_reason, decision)
        return decision


# Tokens a summary's text can gain from being joined with JAATO's markers (a line break the
# empty wrapper merges, say): part of the most a summary message may cost.
_SUMMARY_JOIN_SLACK = 2


def summary_limits(
    collection: Collection, options: Mapping[str, Any], counter: TokenCounter
) -> tuple[int, int]:
    """The cap on a summary's text (``max_summary_tokens``) and the most its message may cost:
    what a run reserves for it in the stopping rule."""
    cap = int(
        options.get("max_summary_tokens")
        or collection.config.max_summary_tokens
        or DEFAULT_MAX_SUMMARY_TOKENS
    )
    wrapper = count_message(marked_message(MessageKind.SUMMARY, summary_text(""), ()), counter)
    return cap, cap + wrapper + _SUMMARY_JOIN_SLACK


def summarize_units(
    collection: Collection,
    units: list[Unit],
    counter: TokenCounter,
    options: Mapping[str, Any],
    decision: Decision,
) -> None:
    """Replace ``units`` (whole turns, oldest first) with one summary in the chain.

    An earlier summary among them is folded into the new one, which records the turns and the
    summary it covers, so nothing the chain held is lost. A summary never costs what it
    replaces or more, nor more than ``max_summary_tokens`` allows: the summarizer is asked to
    stay within that, and a summary that does not (or turns too small to leave it room) are
    truncated instead, the details saying why (``summary_skipped``).
    """
    if not units:
        return
    positions = {u.turn_position for u in units}
    turns = [collection.turn(p) for p in sorted(p for p in positions if p is not None)]
    earlier = [t for t in turns if t.kind is MessageKind.SUMMARY]
    covered = [t for t in turns if t.kind is not MessageKind.SUMMARY]
    previous = earlier[-1].messages[0] if earlier else None
    cap, most = summary_limits(collection, options, counter)
    replaced = sum(unit.tokens for unit in units)
    room = min(most, replaced - 1)  # the most the summary message may cost
    for unit in units:
        decision.remove(unit, RemovalReason.SUMMARIZED)
    decision.details["turns_summarized"] = len(covered)
    text_room = min(cap, room - (most - cap))
    if text_room <= 0:
        decision.truncate_instead(
            f"the turns to summarize cost {replaced:,} tokens, too few for a summary smaller "
            "than them"
        )
        return
    summarizer = summarizer_from_options(options)
    body = summarizer.summarize(
        SummaryRequest(
            turns=covered,
            previous_summary=_summary_body(previous.text) if previous else None,
            max_tokens=text_room,
            counter=counter,
        )
    )
    # A summary always stands alone as a turn, so the summaries are those turns' first messages.
    layout = collection.layout
    summaries = [
        collection.history[layout.starts[p]]
        for p, kind in enumerate(layout.kinds)
        if kind is MessageKind.SUMMARY
    ]
    existing = [
        int(m.metadata["summary_number"])
        for m in summaries
        if isinstance(m.metadata.get("summary_number"), int)
    ]
    number = max(existing, default=0) + 1
    decision.inserted = marked_message(
        MessageKind.SUMMARY,
        summary_text(body),
        [i for unit in units for i in unit.message_ids],
        summary_number=number,
        covers_turns=[t.index for t in covered],
        covers_summary=previous.metadata.get("summary_number", previous.message_id)
        if previous
        else None,
        summarizer=summarizer.name,
    )
    tokens = count_message(decision.inserted, counter)
    decision.details.update(
        {"summary_number": number, "summarizer": summarizer.name, "summary_tokens": tokens}
    )
    if tokens >= replaced:
        decision.truncate_instead(
            f"the {summarizer.name} summary ({tokens:,} tokens) was not smaller than the "
            f"{replaced:,} tokens it would replace"
        )
    elif tokens > most:
        decision.truncate_instead(
            f"the {summarizer.name} summary ({tokens:,} tokens) was longer than "
            f"max_summary_tokens ({cap:,}) allows"
        )


def _summary_body(text: str) -> str:
    lines = text.splitlines()
    if lines and lines[0].startswith("[Context Summary"):
        lines = lines[1:]
    if lines and lines[-1].startswith("[End Context Summary"):
        lines = lines[:-1]
    return "\n".join(lines)


def _units_for_summary(
    collection: Collection, candidates: Iterable[Unit], summary_cost: int
) -> list[Unit]:
    """The shortest run of oldest candidates whose replacement by a summary costing at most
    ``summary_cost`` (with the notice, if any) meets the target."""
    chosen: list[Unit] = []
    freed = 0
    inserted = summary_cost + collection.notice_reserve
    for unit in candidates:
        if collection.tokens_before - freed + inserted <= collection.target_tokens and chosen:
            break
        chosen.append(unit)
        freed += unit.tokens
    return chosen


class SummarizeStrategy(Strategy):
    """Replace the oldest removable turns with one summary, chained to the previous one."""

    name = "gc_summarize"

    def decide(self, collection: Collection, counter: TokenCounter) -> Decision:
        decision = Decision(details={"preserve_count": collection.preserve_recent})
        candidates = _whole_turns(
            collection, {MessageKind.CHAT, MessageKind.SUMMARY, MessageKind.NOTICE}
        )
        _, most = summary_limits(collection, self._options, counter)
        summarize_units(
            collection,
            _units_for_summary(collection, candidates, most),
            counter,
            self._options,
            decision,
        )
        return decision


class HybridStrategy(Strategy):
    """Generational: truncate ancient turns, summarize the middle, keep recent ones.

    ``preserve_recent_turns`` sets the young generation, ``summarize_middle_turns`` (default
    10) the middle one; everything older is ancient. Ancient turns go first (truncated, oldest
    first); only if that does not reach the target is the middle generation summarized. With
    ``summarize_middle_turns`` 0 it is plain truncation; with a large value, plain summarizing.
    """

    name = "gc_hybrid"

    def decide(self, collection: Collection, counter: TokenCounter) -> Decision:
        decision = Decision()
        middle_size = self._options.get(
            "summarize_middle_turns", collection.config.summarize_middle_turns
        )
        middle_size = 10 if middle_size is None else int(middle_size)
        kinds = collection.layout.kinds
        unprotected_chat = [
            p for p in collection.removable_turns() if kinds[p] is not MessageKind.SUMMARY
        ]
        # Recent turns are protected, so every unprotected turn comes before them.
        middle = unprotected_chat[-middle_size:] if middle_size else []
        ancient = unprotected_chat[: len(unprotected_chat) - len(middle)]  # middle is a suffix
        take_until_target(
            collection,
            (collection.turn_unit(p) for p in ancient),
            RemovalReason.TRUNCATED,
            decision,
        )
        decision.details["turns_truncated"] = len(decision.removed)
        if collection.still_short(decision) and middle:
            summaries = [p for p in collection.removable_turns() if kinds[p] is MessageKind.SUMMARY]
            units = [collection.turn_unit(p) for p in sorted(summaries + middle)]
            summarize_units(collection, units, counter, self._options, decision)
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


class BudgetStrategy(Strategy):
    """Policy-aware, in phases, each only while the target is not yet met:

    1a. clear the enrichment source whole; 1b. other ephemeral entries, oldest first (plugin
    entries, and complete tool exchanges and notices inside older turns); 2. whole older turns
    that hold nothing preservable; 3. preservable content, only when usage is at or above
    ``pressure_percent`` and never in continuous mode. Locked content never goes. Without a
    budget it falls back to truncation and says so.
    """

    name = "gc_budget"
    noop_notice = False

    def collect(
        self,
        history: Sequence[Message],
        context_usage: ContextUsage,
        config: GCConfig,
        reason: GCTriggerReason,
        budget: InstructionBudget | None = None,
        *,
        counter: TokenCounter | None = None,
        conversation: ConversationIndex | None = None,
    ) -> tuple[list[Message], GCResult]:
        if budget is None:
            fallback = _FallbackTruncate()
            fallback.initialize(self._options)
            new_history, result = fallback.collect(
                history, context_usage, config, reason, counter=counter
            )
            result.plugin_name = self.name
            result.details["mode"] = "fallback_truncate"
            return new_history, result
        return super().collect(
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
        percent = (
            collection.tokens_before / collection.context_limit * 100
            if collection.context_limit
            else 0.0
        )
        pressure = collection.config.pressure_percent
        under_pressure = pressure is not None and percent >= pressure
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
        counts: dict[str, int] = {}
        for _, why in decision.removed:
            counts[why] = counts.get(why, 0) + 1
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


STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (TruncateStrategy, SummarizeStrategy, HybridStrategy, BudgetStrategy)
}
