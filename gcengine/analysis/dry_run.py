"""The dry run (``analyze``) and the reference graph around a turn: what a reachability
collection sees in a session, in figures and words, with nothing changed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from gcengine.config import GCConfig
from gcengine.conversation import history_layout
from gcengine.errors import TurnNotFoundError
from gcengine.gc.plan import Collection, preserve_count, start_collection
from gcengine.gc.segments import SegmentKind, describe
from gcengine.gc.strategy import Strategy
from gcengine.gc.types import GCTriggerReason, context_usage
from gcengine.messages import turn_number
from gcengine.reachability.explain import Keeper, kept_by, kept_sentence, label, taken_sentence
from gcengine.reachability.graph import REPLY, SUMMARY_OF, Plan, segment_graph
from gcengine.running.run import plugin_options
from gcengine.session import Session
from gcengine.strategies.reachability import ReachabilityStrategy
from gcengine.tokens import counter_by_name

Action = Literal["stash", "delete", "keep"]


@dataclass(frozen=True, slots=True)
class PathStep:
    """One step of the way a root reaches a segment: the segment referring, and how (the
    anchor it names, or ``reply`` / ``summary``)."""

    segment_id: str
    label: str
    how: str


class AnalyzedSegment:
    """A segment as the dry run sees it. ``proposed`` is what a run of the policy would do
    with it now (``stash``, ``delete`` or ``keep``); ``reason`` says why, in words, and
    ``path`` how a root reaches it. Both are worked out when first read: a page shows a few
    dozen of a session's tens of thousands of segments."""

    __slots__ = (
        "_explainer",
        "_number",
        "_reason",
        "candidate",
        "generation",
        "kept_by",
        "kind",
        "proposed",
        "reachable",
        "refcount",
        "root",
        "score",
        "segment_id",
        "tokens",
        "turn_index",
    )

    def __init__(self, explainer: _Explainer, number: int, proposed: Action) -> None:
        plan = explainer.plan
        segment = plan.segments[number]
        self._explainer, self._number, self._reason = explainer, number, ""
        self.segment_id: str = segment.segment_id
        self.kind: SegmentKind = segment.kind
        self.turn_index: int | None = segment.turn_index
        self.tokens: int = segment.tokens
        self.reachable: bool = plan.reachable[number]
        self.root: bool = number in plan.roots
        self.score: float = plan.scores[number]
        self.refcount: int = plan.graph.refcounts[number]
        self.generation: Literal["young", "old"] = "young" if plan.young_ones[number] else "old"
        self.candidate: bool = number in explainer.candidate_of
        # What keeps a segment no collection may take; None for a candidate.
        self.kept_by: Keeper | None = None if self.candidate else kept_by(plan, number)
        self.proposed: Action = proposed

    @property
    def turn_number(self) -> int | None:
        return turn_number(self.turn_index) if self.turn_index is not None else None

    @property
    def reason(self) -> str:
        if not self._reason:
            self._reason = self._explainer.reason(self._number, self.proposed)
        return self._reason

    @property
    def anchors(self) -> list[str]:
        """What it holds, as anchors (``file:...``, ``name:...``, ``code:...``)."""
        return sorted(self._explainer.plan.segments[self._number].holds)

    @property
    def path(self) -> list[PathStep]:
        plan = self._explainer.plan
        return [
            PathStep(plan.segments[n].segment_id, label(plan, n), _how(how))
            for n, how in plan.path(self._number)
        ]

    def __repr__(self) -> str:
        return (
            f"AnalyzedSegment({self.segment_id!r}, {self.kind.value}, reachable={self.reachable}, "
            f"score={self.score:.2f}, proposed={self.proposed!r})"
        )


class _Explainer:
    """The sentences of a dry run, from its plan and what the run would take."""

    def __init__(self, plan: Plan, fate: dict[str, Action]) -> None:
        self.plan = plan
        self.fate = fate
        self.candidate_of = {c.segment: c for c in plan.candidates}
        self.rest_of = {s.turn: s.number for s in plan.segments if not s.exchange}

    def reason(self, number: int, proposed: Action) -> str:
        plan = self.plan
        segment = plan.segments[number]
        candidate = self.candidate_of.get(number)
        if proposed == "keep":
            return kept_sentence(plan, number, candidate)
        if candidate is not None and segment.segment_id in self.fate:
            return taken_sentence(plan, candidate)
        rest = self.rest_of[segment.turn]
        return f"taken with the rest of {label(plan, rest)}: " + taken_sentence(
            plan, self.candidate_of[rest]
        )


@dataclass(frozen=True)
class Analysis:
    """What ``analyze`` found: every segment in history order, the figures a run starts from,
    and what a run would do (nothing applied): ``taken`` lists the segment ids it would take,
    in order, ``tokens_after`` what it would leave, ``notification`` what it would say."""

    plugin: str
    context_limit: int
    tokens_before: int
    target_tokens: int
    tokens_after: int
    notification: str | None
    segments: list[AnalyzedSegment]
    taken: list[str]
    order: list[int]

    @property
    def candidates(self) -> list[AnalyzedSegment]:
        """The segments a run may take, in the order it would take them."""
        return [self.segments[number] for number in self.order]

    def segment(self, segment_id: str) -> AnalyzedSegment:
        for segment in self.segments:
            if segment.segment_id == segment_id:
                return segment
        raise KeyError(segment_id)


def analyze(session: Session, config: GCConfig) -> Analysis:
    """The dry run of a reachability policy on ``session``: every segment with its kind,
    tokens, reachability, score, what a run would do with it and why. Nothing changes;
    ``config`` is read as a reachability policy whatever its ``type``."""
    strategy = ReachabilityStrategy()
    strategy.initialize(plugin_options(config))
    strategy.explains = False
    collection = collection_of(session, config, strategy)
    _, result = strategy.collect_from(
        collection, GCTriggerReason.MANUAL, counter_by_name(session.token_counter)
    )
    plan = strategy.last_plan or strategy.plan(collection)
    fate: dict[str, Action] = {}
    for item in result.removal_list:
        if item.verdict is not None and item.child_key is not None:
            fate[item.child_key] = "delete" if item.verdict.action == "deleted" else "stash"
    explainer = _Explainer(plan, fate)
    rest_of = explainer.rest_of
    segments = []
    for segment in plan.segments:
        proposed = fate.get(segment.segment_id)
        if proposed is None and segment.exchange:
            rest = rest_of.get(segment.turn)
            if rest is not None:
                proposed = fate.get(plan.segments[rest].segment_id)
        segments.append(AnalyzedSegment(explainer, segment.number, proposed or "keep"))
    return Analysis(
        plugin=strategy.name,
        context_limit=collection.context_limit,
        tokens_before=collection.tokens_before,
        target_tokens=collection.target_tokens,
        tokens_after=result.tokens_after,
        notification=result.notification,
        segments=segments,
        taken=list(fate),
        order=[c.segment for c in plan.candidates],
    )


def collection_of(session: Session, config: GCConfig, strategy: Strategy) -> Collection:
    """The collection ``run_gc`` would start on ``session``."""
    counter = counter_by_name(session.token_counter)
    layout = history_layout(session.history, session.budget)
    usage = context_usage(session.budget, turns=len(layout))
    return start_collection(
        session.history,
        usage,
        config,
        session.budget,
        counter,
        preserve_count(config, plugin_options(config)),
    )


def _how(how: str) -> str:
    """How a reference goes, as a page shows it: the anchor as written, ``reply``,
    ``summary``."""
    return how if how in (REPLY, SUMMARY_OF) else describe(how)


# --- The reference graph around a turn --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reference:
    """One reference: ``source`` refers to ``target`` by ``how`` (an anchor as written,
    ``reply`` or ``summary``)."""

    source_id: str
    source_label: str
    target_id: str
    target_label: str
    how: str


@dataclass(frozen=True, slots=True)
class GraphSegment:
    segment_id: str
    label: str
    kind: SegmentKind
    tokens: int
    reachable: bool
    root: bool


@dataclass(frozen=True)
class TurnReferences:
    """The reference graph around one turn: its segments, what they refer to (``outgoing``)
    and what refers to them (``incoming``), each list oldest first."""

    turn_index: int
    segments: list[GraphSegment]
    outgoing: list[Reference]
    incoming: list[Reference]

    @property
    def turn_number(self) -> int:
        return turn_number(self.turn_index)


def turn_references(
    session: Session, turn_index: int, config: GCConfig | None = None
) -> TurnReferences:
    """What the segments of the turn with stable index ``turn_index`` refer to, and what
    refers to them, with their reachability under ``config`` (the reachability strategy's
    defaults when None)."""
    config = config or GCConfig(plugin=ReachabilityStrategy.name)
    strategy = ReachabilityStrategy()
    plan = strategy.plan(collection_of(session, config, strategy))
    numbers = [s.number for s in plan.segments if s.turn_index == turn_index]
    if not numbers:
        raise TurnNotFoundError(
            f"the session has no turn {turn_number(turn_index)} (stable index {turn_index})"
        )
    inside = set(numbers)

    def reference(source: int, target: int, how: str) -> Reference:
        return Reference(
            plan.segments[source].segment_id,
            label(plan, source),
            plan.segments[target].segment_id,
            label(plan, target),
            _how(how),
        )

    outgoing = sorted(
        (
            reference(source, target, how)
            for source in numbers
            for target, how in plan.references[source].items()
            if target not in inside
        ),
        key=lambda r: r.target_id,
    )
    incoming = [
        reference(source, target, plan.references[source][target])
        for target in numbers
        for source in sorted(plan.referrers[target])
        if source not in inside
    ]
    position = {s.segment_id: s.number for s in plan.segments}
    outgoing.sort(key=lambda r: position[r.target_id])
    incoming.sort(key=lambda r: position[r.source_id])
    return TurnReferences(
        turn_index=turn_index,
        segments=[
            GraphSegment(
                plan.segments[n].segment_id,
                label(plan, n),
                plan.segments[n].kind,
                plan.segments[n].tokens,
                plan.reachable[n],
                n in plan.roots,
            )
            for n in numbers
        ],
        outgoing=outgoing,
        incoming=incoming,
    )


def segment_pins(session: Session, segment_ids: Iterable[str]) -> tuple[list[int], list[str]]:
    """What to pin to keep the segments named (ids as ``analyze`` gives them): the stable
    index of each one's turn, since a turn is pinned whole, or, for a summary or notice a
    collection wrote (a turn with no index), its messages. ``KeyError`` names an id the
    session has no segment of."""
    strategy = ReachabilityStrategy()
    config = GCConfig(plugin=ReachabilityStrategy.name)
    by_id = segment_graph(collection_of(session, config, strategy).figures).by_id
    turns: list[int] = []
    messages: list[str] = []
    for segment_id in dict.fromkeys(segment_ids):
        segment = by_id[segment_id]
        if segment.turn_index is not None:
            turns.append(segment.turn_index)
        else:
            messages.extend(segment.message_ids)
    return sorted(set(turns)), list(dict.fromkeys(messages))
