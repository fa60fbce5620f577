"""What every strategy shares: options, triggering, notices, and turning a decision into a result.

Every strategy stops as soon as usage is at or below ``target_percent`` (oldest first), never
removes locked content, recent or pinned turns, and removes whole turns or, inside older turns,
complete tool exchanges (see ``plan``). Under JAATO's plugins' rules (``rules`` "jaato", for
the strategies JAATO also has) truncate, summarize and hybrid instead take every turn that is
not recent, pinned or locked, whole, and put the summary and notice at the top, as JAATO's
do. The strategies themselves are ``gcengine.strategies``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from gcengine.budget import InstructionBudget
from gcengine.conversation import ConversationIndex
from gcengine.errors import SummarizerError
from gcengine.gc.plan import (
    Collection,
    Decision,
    apply,
    failed,
    jaato_rules,
    marked_message,
    notice_message,
    preserve_count,
    start_collection,
    touched_turns,
)
from gcengine.gc.types import ContextUsage, GCResult, GCTriggerReason, RemovalReason
from gcengine.messages import Message, MessageKind
from gcengine.tokens import TokenCounter, count_message, load_counter

if TYPE_CHECKING:
    # Policies sit above the machinery that carries them out: named in signatures only.
    from gcengine.config import GCConfig
    from gcengine.session.cut import Cut

DEFAULT_NOOP_TEMPLATE = (
    "GC triggered but all {total} turns preserved (preserve_recent_turns={preserve}). "
    "No context removed."
)
# The placeholders of the no-op notice, whatever the strategy.
NOOP_NOTIFICATION_FIELDS = frozenset({"total", "preserve"})


@dataclass(frozen=True)
class Notices:
    """What a strategy's notices say.

    ``template`` is its notice's wording when the policy gives none; ``placeholders`` are the
    names a notification template may use, each with what it means for this strategy (every
    strategy provides every name any of JAATO's templates uses, so a JAATO gc.json written for
    one strategy renders under any); ``noop``: whether a collection that was needed but could
    take nothing (everything left is protected) says so, with ``noop_notification_template``,
    when ``notify_on_gc`` is set (JAATO's truncate, summarize and hybrid do; its budget
    strategy does not).
    """

    template: str
    placeholders: Mapping[str, str]
    noop: bool


class Strategy:
    """Shared plumbing: options, triggering, and turning a decision into a result.

    Each strategy names itself (``name``, JAATO's plugin name) and says what its notices say
    (``notices``); its module's ``SPEC`` reads both from here, so each is declared once.
    """

    name: ClassVar[str]
    notices: ClassVar[Notices]
    # Whether the policy's ``rules`` "jaato" changes how it collects: JAATO's plugins' rules
    # exist for the strategies JAATO has a plugin of, where they differ from the engine's.
    follows_rules: ClassVar[bool] = False

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
        Under JAATO's rules truncate, summarize and hybrid have no continuous mode, as JAATO's
        have none: the threshold or the turn limit.
        """
        if not config.auto_trigger:
            return False, None
        percent = float(context_usage.get("percent_used", 0.0))
        if config.continuous_mode and not self.follows_jaato(config):
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
        new_history, result, _ = self.collect_cut(
            history,
            context_usage,
            config,
            reason,
            budget,
            counter=counter,
            conversation=conversation,
        )
        return new_history, result

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
        """``collect``, and how the new history was cut from ``history`` when the collection
        only took messages (``Cut``; None otherwise): a run then cuts the budget after from
        the budget before by position."""
        counter = counter or load_counter()
        collection = start_collection(
            history,
            context_usage,
            config,
            budget,
            counter,
            preserve_count(config, self._options),
            conversation,
            jaato_rules=self.follows_jaato(config),
        )
        new_history, result = self.collect_from(collection, reason, counter)
        return new_history, result, collection.cut

    def follows_jaato(self, config: GCConfig) -> bool:
        """Whether a collection follows JAATO's plugins' rules (``rules`` "jaato")."""
        return self.follows_rules and jaato_rules(config, self._options)

    def collect_from(
        self, collection: Collection, reason: GCTriggerReason, counter: TokenCounter
    ) -> tuple[list[Message], GCResult]:
        """``collect`` on a collection already started (what a dry run has laid out)."""
        config = collection.config
        jaato = collection.jaato_rules
        if not jaato and not self.has_work(collection):
            decision = Decision(
                details={"message": "Already at or below target, nothing to collect"}
            )
            return apply(
                collection, decision, plugin_name=self.name, reason=reason, counter=counter
            )
        template = config.notification_template or self.notices.template
        notifies = self._notifies(config)
        if notifies and not jaato:
            collection.notice_reserve = self._notice_bound(collection, template, counter)
        try:
            decision = self.decide(collection, counter)
        except SummarizerError as error:
            return list(collection.history), failed(collection, self.name, reason, str(error))
        notification = None
        if decision.items and notifies:
            if jaato:  # JAATO's notice, whatever it costs
                fields = self.notification_fields(collection, decision)
                notification = render_template(template, fields)
            else:
                notification, decision = self._settle(collection, decision, template, counter)
        if not decision.items:
            return self._nothing_taken(collection, decision, config, reason, counter, notifies)
        new_history, result = apply(
            collection,
            decision,
            plugin_name=self.name,
            reason=reason,
            counter=counter,
            notification=notification,
            at_top=jaato,
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
        text = render_template(template, dict.fromkeys(self.notices.placeholders, largest))
        return count_message(marked_message(MessageKind.NOTICE, f"[System: {text}]", ()), counter)

    def _settle(
        self, collection: Collection, decision: Decision, template: str, counter: TokenCounter
    ) -> tuple[str | None, Decision]:
        """The notice for a decision, once what it inserts is known to shrink the context: a
        summary that would not is dropped for truncation, and a decision that frees no more
        than its notice costs is given up, saying why (it would only trade content, often an
        earlier run's notice, for a notice as large)."""
        while True:
            notification = render_template(template, self.notification_fields(collection, decision))
            notice = count_message(notice_message(collection, decision, notification), counter)
            if decision.freed - decision.inserted_tokens - notice > 0:
                return notification, decision
            if decision.inserted is None:
                return None, Decision(
                    details={
                        "message": "Nothing useful to collect: what may go "
                        f"({decision.freed:,} tokens) is no more than the notice saying so "
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
        notice; under the engine's rules it is reported, never written, since it would grow
        the context; under JAATO's it goes at the top of the history, as JAATO's does."""
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
        if notifies and self.notices.noop and all_protected:
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
            write_notice=collection.jaato_rules,
            at_top=collection.jaato_rules,
        )

    def notification_fields(self, collection: Collection, decision: Decision) -> dict[str, int]:
        """Every variable any JAATO template uses, as each strategy's ``notices`` say; under
        JAATO's rules every turn counts, whatever it holds, and ``kept`` is every turn kept,
        as in JAATO's notices."""
        if collection.jaato_rules:
            return _jaato_fields(collection, decision)
        kinds = collection.layout.kinds
        truncated = summarized = 0
        for unit, why in decision.taken:
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
            "items": decision.items,
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


def _jaato_fields(collection: Collection, decision: Decision) -> dict[str, int]:
    """A notice's variables as JAATO's truncate, summarize and hybrid fill them in."""
    summarized = sum(1 for _, why in decision.removed if why == RemovalReason.SUMMARIZED)
    removed = len(decision.removed)  # whole turns only, under JAATO's rules
    freed = decision.freed - decision.inserted_tokens
    return {
        "removed": removed,
        "kept": collection.turn_count - removed,
        "truncated": removed - summarized,
        "summarized": summarized,
        "items": removed,
        "freed": freed,
        "tokens_freed": freed,
    }


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
