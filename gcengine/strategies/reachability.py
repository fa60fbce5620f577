"""``gc_reachability``: mark what the roots reach, sweep the rest lowest score first, stash it.

The sweep takes unreachable segments first, lowest score first (oldest first on a tie), and
reachable ones only while usage is still above the target once nothing unreachable is left.
It takes whole units only (a tool exchange, or what is left of a turn), so every guarantee of
the other strategies holds: locked content, the recent turns and pinned turns stay, no call
loses its result, and it stops at the target counting the notice it writes.

Its ``action`` says where what it takes goes: ``stash`` (the default; ``gcengine.restore``
puts it back), ``delete``, or ``auto`` (delete only unreachable segments scoring below
``AUTO_DELETE_BELOW``). ``gcengine.analyze`` is the dry run: every segment with its score,
reason and proposed action, nothing changed.

Named segments (``plugin_config.segment_ids``, see ``gcengine.pruning_config``) make a run a
*prune*: it takes exactly those, whatever the usage, and refuses (``PruneRefused``, before
anything changes) any no collection may take (pinned, locked, in the latest turns, a root) or
the session does not have.

With ``incremental``, a policy also collects a batch of at most ``batch_size`` segments after
each turn once usage passes the target (``incremental``); the full collection still runs at
the threshold. A plugin instance remembers how many of its collections each segment survived
(a segment is *old* once it has survived one), as an agent or a replay keeps one plugin.

With a summarizer (``plugin_config.summarizer``, as summarize and hybrid read it; none by
default), a collection also writes a summary of what it stashes, where the first of it stood,
counted in what it frees so usage still ends at the target. The stash names it: restoring a
segment marks it (``restored_segments``), and restoring them all takes it out, so the history
the run started from comes back.

Its own keys (``roots``, ``weights``, ``action``, ``incremental``, ``batch_size``) and its
``SPEC`` are declared here; the model it decides with is ``gcengine.reachability``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from gcengine._fast import construct
from gcengine.budget import InstructionSource
from gcengine.errors import ConfigError, GCEngineError
from gcengine.gc.plan import Collection, Decision, Unit
from gcengine.gc.stash import Stash, StashedSegment
from gcengine.gc.strategy import Notices, Strategy
from gcengine.gc.summarizing import summarize_taken, summary_limits
from gcengine.gc.types import (
    ContextUsage,
    GCResult,
    GCTriggerReason,
    RemovalReason,
    RemovalVerdict,
)
from gcengine.messages import Message, MessageKind
from gcengine.reachability.explain import named_sentence, taken_sentence, untakeable_sentence
from gcengine.reachability.graph import AUTO_DELETE_BELOW, Candidate, Plan
from gcengine.strategies.common import EVERY_STRATEGY_READS
from gcengine.strategies.keys import KeySpec
from gcengine.strategies.spec import StrategySpec
from gcengine.strategies.summarize import SUMMARIZER, SUMMARIZING_READS
from gcengine.tokens import TokenCounter

if TYPE_CHECKING:
    # Policies are composed of the strategies' keys: named in signatures only.
    from gcengine.config import GCConfig


class ReachabilityRoots(BaseModel):
    """What a reachability collection keeps and follows references from (``roots``).

    Roots are never removed, and everything they reach through references is *reachable*:
    kept while anything unreachable is left to take.
    """

    model_config = ConfigDict(frozen=True)

    current_task: Annotated[
        bool,
        KeySpec(
            "Current task",
            "Whether the latest user message and the original request are roots.",
            "flag",
        ),
    ] = True
    recent_turns: Annotated[
        int,
        KeySpec(
            "Recent turns",
            "How many of the latest turns are roots, whole.",
            "whole_number",
            minimum=0,
        ),
    ] = 3
    pinned: Annotated[
        bool,
        KeySpec(
            "Pinned",
            "Whether pinned turns and messages are roots (they are never removed either way).",
            "flag",
        ),
    ] = True
    locked: Annotated[
        bool,
        KeySpec(
            "Locked",
            "Whether locked content is a root (it is never removed either way).",
            "flag",
        ),
    ] = True
    active_file_turns: Annotated[
        int,
        KeySpec(
            "Active file turns",
            "Files these many latest turns read, edit or name are active: the latest read of "
            "each part of them is a root; 0 means none.",
            "whole_number",
            minimum=0,
        ),
    ] = 3


class ScoreWeights(BaseModel):
    """How the reachability score weighs its four inputs (``weights``); scaled to sum to 1,
    so every score is between 0 and 1."""

    model_config = ConfigDict(frozen=True)

    recency: Annotated[
        float,
        KeySpec(
            "Recency",
            "Weight of how few turns ago a segment was last referred to.",
            "number",
            minimum=0,
        ),
    ] = 0.4
    importance: Annotated[
        float,
        KeySpec(
            "Kind",
            "Weight of the segment's kind: decisions first, logs last.",
            "number",
            minimum=0,
        ),
    ] = 0.3
    refcount: Annotated[
        float,
        KeySpec(
            "References",
            "Weight of how many later segments refer to it (five or more count fully).",
            "number",
            minimum=0,
        ),
    ] = 0.2
    generation: Annotated[
        float,
        KeySpec(
            "Generation",
            "Weight of being young: newer than 20 turns and not yet kept by a collection.",
            "number",
            minimum=0,
        ),
    ] = 0.1


def _some_weight(weights: ScoreWeights) -> str | None:
    """Scaling needs something to scale: all weights 0 would make every score 0/0."""
    if sum(weights.model_dump().values()) <= 0:
        return "at least one weight must be above 0"
    return None


StashAction = Literal["stash", "delete", "auto"]
STASH_ACTIONS: tuple[StashAction, ...] = get_args(StashAction)
# A batch of the seed's size: small enough to run after every turn.
BATCH_SIZE_RANGE = (5, 20)


class ReachabilityKeys(BaseModel):
    """The reachability strategy's own keys. JAATO does not read them, so a dump leaves each
    out while it holds its default."""

    roots: Annotated[
        ReachabilityRoots,
        KeySpec(
            "Roots",
            "What a reachability collection never removes and follows references from: the "
            "current task, the most recent turns, pinned turns, locked content and the latest "
            "reads of the files recent turns work on; an object whose keys are all optional.",
            "object",
            written_when_default=False,
        ),
    ] = Field(default_factory=ReachabilityRoots)
    weights: Annotated[
        ScoreWeights,
        KeySpec(
            "Score weights",
            "How the reachability score weighs recency (in turns), kind, references and "
            "generation; an object of numbers from 0, scaled so every score is between 0 "
            "and 1.",
            "object",
            rule=_some_weight,
            written_when_default=False,
        ),
    ] = Field(default_factory=ScoreWeights)
    action: Annotated[
        StashAction,
        KeySpec(
            "Action",
            "What a reachability collection does with what it removes: stash it (it can be "
            "restored), delete it, or auto (delete only unreachable segments scoring below "
            f"{AUTO_DELETE_BELOW:g}, stash the rest).",
            "choice",
            choices=STASH_ACTIONS,
            written_when_default=False,
        ),
    ] = "stash"
    incremental: Annotated[
        bool,
        KeySpec(
            "Incremental",
            "Whether a reachability policy also collects a small batch after each turn once "
            "usage passes the target, besides the full collection at the threshold.",
            "flag",
            written_when_default=False,
        ),
    ] = False
    batch_size: Annotated[
        int,
        KeySpec(
            "Batch size",
            f"The most segments an incremental collection removes, from {BATCH_SIZE_RANGE[0]} "
            f"to {BATCH_SIZE_RANGE[1]}.",
            "whole_number",
            minimum=BATCH_SIZE_RANGE[0],
            maximum=BATCH_SIZE_RANGE[1],
            unit="segments",
            written_when_default=False,
        ),
    ] = 10


SEGMENT_IDS = "segment_ids"
"""The ``plugin_config`` key naming the segments a prune takes."""


class PruneRefused(GCEngineError):
    """Segments named for pruning that no collection may take (``refused``: each with why) or
    that the session does not have (``unknown``). Nothing was taken."""

    def __init__(self, refused: dict[str, str], unknown: list[str]) -> None:
        self.refused, self.unknown = refused, unknown
        reasons = [f"{segment_id}: {why}" for segment_id, why in refused.items()]
        if unknown:
            shown = ", ".join(repr(segment_id) for segment_id in unknown[:5])
            more = f" and {len(unknown) - 5:,} more" if len(unknown) > 5 else ""
            reasons.append(f"the session has no segment {shown}{more}")
        super().__init__("nothing pruned: " + "; ".join(reasons))


def named_segments(options: Mapping[str, Any]) -> list[str]:
    """The segments a prune is asked to take, from a plugin's options (none: a normal run)."""
    named = options.get(SEGMENT_IDS)
    if named is None:
        return []
    if not isinstance(named, list) or not all(isinstance(i, str) and i for i in named):
        raise ConfigError("must be a list of segment ids", f"plugin_config.{SEGMENT_IDS}")
    return list(dict.fromkeys(named))


def check_named(plan: Plan, named: list[str]) -> None:
    """Refuse (``PruneRefused``) named segments that are no candidate of ``plan``."""
    takeable = {plan.segments[candidate.segment].segment_id for candidate in plan.candidates}
    unknown = [segment_id for segment_id in named if segment_id not in plan.by_id]
    refused = {
        segment_id: untakeable_sentence(plan, plan.by_id[segment_id].number).removeprefix("kept: ")
        for segment_id in named
        if segment_id in plan.by_id and segment_id not in takeable
    }
    if unknown or refused:
        raise PruneRefused(refused, unknown)


class ReachabilityStrategy(Strategy):
    """Mark and sweep with a stash (design document 001)."""

    name = "gc_reachability"
    notices = Notices(
        template=(
            "Context cleaned: stashed {stashed} segments, deleted {deleted}, freed {freed} tokens."
        ),
        placeholders={
            "removed": "conversation turns removed whole",
            "kept": "recent conversation turns kept whole",
            "truncated": "conversation turns removed whole",
            "summarized": "stashed conversation turns its summary covers (0 without a summarizer)",
            "items": "segments removed (turns and tool exchanges)",
            "stashed": "segments put in the run's stash, which can be restored",
            "deleted": "segments deleted for good",
            "freed": "tokens freed, less the summary written",
            "tokens_freed": "tokens freed, less the summary written",
        },
        noop=False,
    )

    def __init__(self) -> None:
        super().__init__()
        self.last_plan: Plan | None = None
        self._survivals: dict[str, int] = {}
        # The last collection's plan and the positions it took: its survivors are credited
        # once a later history shows its removals were applied.
        self._pending: tuple[Plan, set[int]] | None = None
        self._limit: int | None = None
        # A dry run reads its sentences from the plan when it needs them, and keeps no stash.
        self.explains = True

    def should_collect(
        self, context_usage: ContextUsage, config: GCConfig
    ) -> tuple[bool, GCTriggerReason | None]:
        """As every strategy; with ``incremental``, also above the target (below the
        threshold, or anywhere in continuous mode): a batch after the turn."""
        if config.auto_trigger and config.incremental:
            percent = float(context_usage.get("percent_used", 0.0))
            below_threshold = config.continuous_mode or percent < config.threshold_percent
            if percent > config.target_percent and below_threshold:
                return True, GCTriggerReason.INCREMENTAL
        return super().should_collect(context_usage, config)

    def has_work(self, collection: Collection) -> bool:
        """A prune takes what it names whatever the usage."""
        return bool(named_segments(self._options)) or super().has_work(collection)

    def collect_from(
        self, collection: Collection, reason: GCTriggerReason, counter: TokenCounter
    ) -> tuple[list[Message], GCResult]:
        incremental = reason is GCTriggerReason.INCREMENTAL
        self._limit = collection.config.batch_size if incremental else None
        return super().collect_from(collection, reason, counter)

    def plan(self, collection: Collection) -> Plan:
        """Segments, references, roots, marks and scores for a collection."""
        self._credit_survivors(collection)
        self.last_plan = Plan(collection, self._survivals)
        return self.last_plan

    def _credit_survivors(self, collection: Collection) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        plan, taken = pending
        ids = plan.collection.ids
        if taken and all(ids[p] not in collection.figures.ids for p in taken):
            self._survivals = {
                segment.segment_id: self._survivals.get(segment.segment_id, 0) + 1
                for segment in plan.segments
                if taken.isdisjoint(segment.positions)
            }

    def decide(self, collection: Collection, counter: TokenCounter) -> Decision:
        plan = self.plan(collection)
        decision = Decision()
        taken = decision.removed_positions
        action = collection.config.action
        named = named_segments(self._options)
        check_named(plan, named)
        chosen = set(named)
        summarizing = bool(self._options.get(SUMMARIZER))
        if summarizing:  # what the summary may cost counts as it takes
            decision.summary_reserve = summary_limits(collection, self._options, counter)[1]
        for candidate in plan.candidates:
            if chosen and plan.segments[candidate.segment].segment_id not in chosen:
                continue
            if not chosen and (not collection.still_short(decision) or self._batch_full(decision)):
                break
            unit = _unit(collection, plan, candidate, taken)
            if unit is None:
                continue
            sentence = named_sentence if chosen else taken_sentence
            unit.verdict = RemovalVerdict(
                candidate.reachable,
                candidate.score,
                sentence(plan, candidate) if self.explains else "",
                "deleted" if _deletes(action, candidate) else "stashed",
            )
            reason = (
                RemovalReason.REACHABLE_LOW_SCORE
                if candidate.reachable
                else RemovalReason.UNREACHABLE
            )
            decision.remove(unit, reason)
        stashed = [u for u, _ in decision.removed if u.verdict and u.verdict.action == "stashed"]
        if summarizing and stashed:
            summarize_taken(collection, stashed, counter, self._options, decision)
        self._pending = (plan, set(taken))
        verdicts = [unit.verdict for unit, _ in decision.removed if unit.verdict]
        decision.details.update(
            {
                "segments": len(plan.segments),
                "roots": len(plan.roots),
                "reachable_segments": sum(plan.reachable),
                "young_segments": sum(plan.young_ones),
                "unreachable_removed": sum(1 for v in verdicts if not v.reachable),
                "reachable_removed": sum(1 for v in verdicts if v.reachable),
                "stashed": sum(1 for v in verdicts if v.action == "stashed"),
                "deleted": sum(1 for v in verdicts if v.action == "deleted"),
                "action": action,
                "batch_size": self._limit,
                "pressure_applied": collection.under_pressure,
            }
        )
        return decision

    def _batch_full(self, decision: Decision) -> bool:
        return self._limit is not None and len(decision.removed) >= self._limit

    def notification_fields(self, collection: Collection, decision: Decision) -> dict[str, int]:
        fields = super().notification_fields(collection, decision)
        verdicts = [unit.verdict for unit, _ in decision.removed if unit.verdict]
        fields["stashed"] = sum(1 for v in verdicts if v.action == "stashed")
        fields["deleted"] = len(verdicts) - fields["stashed"]
        if decision.inserted is not None:
            fields["summarized"] = int(decision.details.get("turns_summarized") or 0)
        return fields

    def completed(
        self,
        collection: Collection,
        decision: Decision,
        new_history: list[Message],
        result: GCResult,
    ) -> GCResult:
        """The result with its stash: each stashed unit's messages, where they stood, and why
        they went; the place of every deleted message; the notice the run wrote."""
        plan = self.last_plan
        assert plan is not None  # decide() made it
        if not self.explains:
            return result
        history = collection.history
        segments: list[StashedSegment] = []
        deleted: dict[str, str | None] = {}
        for unit, _ in decision.removed:
            verdict = unit.verdict
            assert verdict is not None  # every unit this strategy takes has one
            after = [history[p - 1].message_id if p else None for p in unit.positions]
            if verdict.action == "deleted":
                deleted.update(zip(unit.message_ids, after, strict=True))
                continue
            positions = set(unit.positions)
            held = {
                anchor
                for number in plan.by_turn.get(unit.turn_position or 0, ())
                if not positions.isdisjoint(plan.segments[number].positions)
                for anchor in plan.segments[number].holds
            }
            segments.append(
                construct(
                    StashedSegment,
                    segment_id=unit.key or "",
                    kind=plan.by_id[unit.key or ""].kind,
                    turn_index=unit.turn_index,
                    messages=[history[p] for p in unit.positions],
                    positions=list(unit.positions),
                    after=after,
                    tokens=unit.tokens,
                    reachable=verdict.reachable,
                    score=verdict.score,
                    reason=verdict.sentence,
                    anchors=sorted(held),
                    recorded=[],
                )
            )
        known = collection.figures.ids
        # A foreign history's kept messages are the framework's own objects, never a notice.
        notices = [
            m.message_id
            for m in new_history
            if isinstance(m, Message) and m.kind is MessageKind.NOTICE
        ]
        notice = next((i for i in notices if i not in known), None)
        summary = decision.inserted.message_id if decision.inserted is not None else None
        stash = construct(
            Stash, segments=segments, deleted=deleted, notice_id=notice, summary_id=summary
        )
        return result.model_copy(update={"stash": stash})


def _deletes(action: str, candidate: Candidate) -> bool:
    if action == "delete":
        return True
    return action == "auto" and not candidate.reachable and candidate.score < AUTO_DELETE_BELOW


def _unit(collection: Collection, plan: Plan, candidate: Candidate, taken: set[int]) -> Unit | None:
    """The unit a candidate removes: an exchange, or what is left of a turn (None when
    nothing is)."""
    if candidate.turn is None:
        segment = plan.segments[candidate.segment]
        return Unit(
            InstructionSource.CONVERSATION,
            segment.segment_id,
            list(segment.message_ids),
            segment.tokens,
            segment.policy,
            segment.created,
            segment.turn_index,
            segment.turn,
            False,
            list(segment.positions),
        )
    start, end = collection.layout.span(candidate.turn)
    left = [p for p in range(start, end) if p not in taken]
    if not left:
        return None
    unit = collection.turn_unit(candidate.turn)
    unit.message_ids = [collection.ids[p] for p in left]
    unit.positions = left
    unit.tokens = sum([collection.figures.tokens[p] for p in left])
    return unit


SPEC = StrategySpec(
    plugin=ReachabilityStrategy,
    label="reachability",
    description="stash what no later turn refers to, lowest score first",
    reads=(*EVERY_STRATEGY_READS, *ReachabilityKeys.model_fields, *SUMMARIZING_READS),
    jaato_plugin="gc_gcengine_reachability",
    keys=ReachabilityKeys,
    inserts=("summary", "notice"),
    summary_on_request=True,
    stashes=True,
    keeps="its roots (the current task, the latest turns, the files being worked on)",
    starter_policies={
        "Reachability stash": {
            "type": "gc_reachability",
            "threshold_percent": 80,
            "target_percent": 60,
            "preserve_recent_turns": 5,
        },
    },
)
