"""Replaying a session as the agent lived it, turn by turn, under a policy.

Before each turn is sent (``pre_message``, when ``check_before_send``) and after it (the
post-turn check), the strategy's ``should_collect`` decides; a collection runs on the history
as it stands then. Where the file recorded the agent's model calls, it decides before each of
them too (``pre_call``), as an agent checks before every request: a long autonomous turn of
hundreds of calls is collected inside it, and each such step names its call, so the policy's
size at a call can be read beside the size the agent's own call recorded. The series this
returns draws the sawtooth of threshold mode (climb to the threshold, fall to the target) and
the ripple of continuous mode (a small collection whenever usage passes the target).

It is incremental: usage is a running total of per-message figures (the same figures the budget
builder uses), and the conversation is laid out (``index_conversation``) only when a collection
runs, over the history then in the window, never over the whole session again; the turns laid
out at the last collection are kept. No budget tree is built for the window (the engine's own
strategies read the layout), and each message's figure is worked out once per replay.

Along the way it records each request the agent sent (before each model message that follows
another kind) with the prefix it shares with the request before, for the prompt-cache cost
model (``gcengine.quality.prompt_cache``), and, when asked, scores each collection's anchor
retention (``gcengine.quality.retention``) with one scorer kept along the replay, told the run
of turns a collection took when that is all it did (``AnchorScorer.score_taken``): its own
scorer, a ``ReplayScorer`` (``gcengine.quality.replay_scoring``), then counts the score from
that run's anchors alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import compress, count, islice
from operator import is_, is_not
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from gcengine._fast import construct
from gcengine.budget import InstructionBudget, InstructionSource
from gcengine.config import GCConfig
from gcengine.conversation import ConversationIndex, index_of
from gcengine.gc.strategy import Strategy
from gcengine.gc.types import GCPlugin, GCResult, GCTriggerReason, context_usage
from gcengine.messages import Message, Role, turn_number
from gcengine.quality.prompt_cache import PromptRequest
from gcengine.quality.reading import AnchorCache
from gcengine.quality.replay_scoring import ReplayScorer
from gcengine.quality.retention import AnchorRetention, AnchorScorer, session_corpus
from gcengine.running.run import plugin_for, without_entries
from gcengine.session import (
    Session,
    call_timeline,
    conversation_tree,
    index_conversation,
    iso_to_epoch,
    message_figure,
    rebuild_budget,
    recorded_clarifications,
    recorded_message_figures,
)
from gcengine.session.cut import Cut
from gcengine.tokens import TokenCounter, counter_by_name

Point = Literal["pre_message", "pre_call", "post_turn"]


class SimulationStep(BaseModel):
    """Context usage at one check point; ``tokens_after`` differs only when GC ran there.

    ``turn_index`` is the turn's stable index; ``turn_number`` what a person reads (from 1).
    """

    turn_index: int | None
    point: Point
    tokens_before: int
    tokens_after: int
    collected: bool = False
    call_number: int | None = Field(
        default=None,
        description="at a pre_call check, the recorded model call (``call_timeline``'s "
        "number) about to be made",
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def turn_number(self) -> int | None:
        return turn_number(self.turn_index) if self.turn_index is not None else None


class SimulationEvent(BaseModel):
    """A collection during a replay: when (``point``) and why (``reason``: the trigger,
    ``threshold``, ``continuous`` or ``turn_limit``)."""

    turn_index: int | None
    point: Point
    reason: GCTriggerReason
    result: GCResult
    retention: AnchorRetention | None = Field(
        default=None,
        description="what the collection kept in view of the anchors of the window before it, "
        "beside the tokens after",
    )
    call_number: int | None = Field(
        default=None, description="at a pre_call check, the recorded model call about to be made"
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def turn_number(self) -> int | None:
        return turn_number(self.turn_index) if self.turn_index is not None else None


class Simulation(BaseModel):
    plugin: str
    context_limit: int
    threshold_percent: float
    target_percent: float
    pressure_percent: float | None
    continuous_mode: bool
    steps: list[SimulationStep] = Field(default_factory=list)
    events: list[SimulationEvent] = Field(default_factory=list)
    requests: list[PromptRequest] = Field(default_factory=list)

    def percent(self, tokens: int) -> float:
        return tokens / self.context_limit * 100 if self.context_limit else 0.0

    @property
    def peak_percent(self) -> float:
        return max((self.percent(s.tokens_before) for s in self.steps), default=0.0)


class _Figures:
    """Each message's budget figure (``message_figure``), worked out once per replay.

    Windows of the same messages are laid out again at every collection, and working their
    figures out (serialising tool payloads to count them) was most of it.
    """

    def __init__(
        self, counter: TokenCounter, recorded: Mapping[str, int], budget: InstructionBudget
    ) -> None:
        self._counter = counter
        self._recorded = recorded
        self._known: dict[str, tuple[Message, tuple[int, str]]] = {}
        # The session's budget holds every message's figure already, made on the same basis
        # when its counter is the replay's: a replay in a worker that has counted nothing yet
        # (a stored session read back) counts nothing again.
        index = index_of(budget.get_entry(InstructionSource.CONVERSATION))
        if (
            index is not None
            and index.basis is not None
            and index.basis[:2] == (counter.name, recorded)
            and index.unedited()
        ):
            for message, tokens, made_by in zip(
                index.messages, index.tokens, index.counted_by or (), strict=False
            ):
                self._known[message.message_id] = (message, (tokens, made_by))

    def __call__(self, message: Message) -> tuple[int, str]:
        known = self._known.get(message.message_id)
        if known is None or known[0] is not message:
            figure = message_figure(message, self._counter, self._recorded)
            known = self._known[message.message_id] = (message, figure)
        return known[1]


def simulate(
    session: Session,
    config: GCConfig,
    plugin: GCPlugin | str | None = None,
    *,
    score_anchors: bool = False,
    scorer: AnchorScorer | None = None,
    anchor_cache: AnchorCache | None = None,
) -> Simulation:
    """The usage series (per turn, and per model call where the file recorded them), GC
    events and requests of ``session`` replayed under ``config``; with ``score_anchors``, each
    collection's anchor retention too, scored by ``scorer`` when given (``replay_scorer``
    of the same session: replays of one session under several configs then read each
    message's anchors once for all of them), else by a scorer reading the session into
    ``anchor_cache`` when one is given (``anchor_cache(session)``, kept from an earlier score
    of it: a replay then reads no message that score read)."""
    plugin = plugin_for(config, plugin)
    return _Replay(session, config, plugin, score_anchors, scorer, anchor_cache).run()


def replay_scorer(session: Session, cache: AnchorCache | None = None) -> AnchorScorer:
    """The scorer a scored replay of ``session`` makes for itself, for several replays of the
    session to share (``simulate``'s ``scorer``): it counts a message as a replay does. With
    ``cache``, what an earlier reading of the same corpus (``session_corpus(session)``) read
    is not read again."""
    figures = _Figures(
        counter_by_name(session.token_counter),
        recorded_message_figures(session.recorded_budget),
        session.budget,
    )
    corpus = session_corpus(session) if cache is None else cache
    return ReplayScorer(corpus, lambda m: figures(m)[0], session.history)


def requests_without_gc(session: Session) -> list[PromptRequest]:
    """The requests of ``session`` replayed with nothing ever collected: each starts with the
    whole request before it, so the prompt cache reads all of that (the baseline a policy's
    cost is weighed against)."""
    return simulate(session, GCConfig(auto_trigger=False)).requests


def _outside_entries(budget: InstructionBudget) -> list[tuple[InstructionSource, int]]:
    """The prompt's entries before the conversation, in the order they are sent."""
    return [
        (source, entry.total_tokens())
        for source, entry in budget.context_entries()
        if source is not InstructionSource.CONVERSATION
    ]


def _outside_conversation(budget: InstructionBudget) -> int:
    """What is in context besides the conversation: a budget built without history holds the
    conversation the file recorded, which the window stands for in a replay."""
    return sum(tokens for _, tokens in _outside_entries(budget))


class _Replay:
    """The replay's state: the window (the history as the agent would have it now), its
    conversation index, and the budget outside the conversation.

    No budget tree is built for the window: a collection by one of the engine's strategies
    reads the index, and only another plugin gets a tree made from it. After a collection the
    new window is laid out again from figures already known.
    """

    def __init__(
        self,
        session: Session,
        config: GCConfig,
        plugin: GCPlugin,
        score_anchors: bool,
        scorer: AnchorScorer | None = None,
        anchor_cache: AnchorCache | None = None,
    ) -> None:
        self.session, self.config, self.plugin = session, config, plugin
        self.counter = counter_by_name(session.token_counter)
        # Collections never change a message, only which are in the window; nor the recorded
        # conversation, so what it recorded (figures, clarifications) holds for the whole replay.
        self.recorded = recorded_message_figures(session.recorded_budget)
        self.clarifications = recorded_clarifications(session.recorded_budget)
        self.figures = _Figures(self.counter, self.recorded, session.budget)
        self.created_base = iso_to_epoch(session.created_at) or 0.0
        self.state = session.model_copy(update={"history": []})
        self.outside = rebuild_budget(self.state, self.counter)
        self.base = _outside_conversation(self.outside)
        self.window: list[Message] = []
        self.window_tokens = 0
        # The recorded call each message of the history opened (its response's first message).
        self.calls = {
            call.message_id: call.number
            for call in call_timeline(session).calls
            if call.message_id is not None
        }
        # The index of the window as it was laid out last (at or after the last collection).
        self.index: ConversationIndex | None = None
        self.turns_done = 0
        # Tokens at the start of the window that the last request sent and the next one will
        # still start with: all of that request until a collection rewrites part of it.
        self.shared_prefix = 0
        self.scorer = (
            scorer
            or ReplayScorer(
                anchor_cache or session_corpus(session),
                lambda m: self.figures(m)[0],
                session.history,
            )
            if score_anchors
            else None
        )
        self.simulation = Simulation(
            plugin=plugin.name,
            context_limit=session.context_limit,
            threshold_percent=config.threshold_percent,
            target_percent=config.target_percent,
            pressure_percent=config.pressure_percent,
            continuous_mode=config.continuous_mode,
        )

    def run(self) -> Simulation:
        for turn in self.session.turns():
            if self.config.check_before_send:
                self.check(turn.index, "pre_message")
            for message in turn.messages:
                call = self.calls.get(message.message_id)
                if call is not None:
                    self.check(turn.index, "pre_call", call)
                previous = self.window[-1] if self.window else None
                if message.role is Role.MODEL and (previous is None or previous.role != Role.MODEL):
                    self.request(turn.index)
                self.window.append(message)
                self.window_tokens += self.figures(message)[0]
            self.turns_done += 1
            self.check(turn.index, "post_turn")
        return self.simulation

    def request(self, turn_index: int | None) -> None:
        """The agent asks the model for its next message with the window as it stands."""
        tokens = self.base + self.window_tokens
        # Made without validation: both figures are sums of token counts, never negative.
        self.simulation.requests.append(
            construct(
                PromptRequest,
                turn_index=turn_index,
                tokens=tokens,
                shared_prefix_tokens=min(self.shared_prefix, tokens),
            )
        )
        self.shared_prefix = tokens

    def prefix_kept(
        self, outside_before: InstructionBudget, index_before: ConversationIndex
    ) -> int:
        """Tokens at the start of the prompt a collection left as they were: the entries
        outside the conversation up to the first it changed, then, if it changed none, the
        messages up to the first it removed or replaced, counted off the index of the window
        before (``index_before``)."""
        kept = 0
        if outside_before is not self.outside:  # most collections leave it as it was
            entries_before, entries_after = map(_outside_entries, (outside_before, self.outside))
            for old, new in zip(entries_before, entries_after, strict=False):
                if old != new:
                    return kept
                kept += old[1]
            if len(entries_before) != len(entries_after):
                return kept
        else:
            kept = self.base
        before, after = index_before.messages, self.window
        size, same = min(len(before), len(after)), 0
        while True:  # the very same messages are passed over in C; an equal copy is kept too
            unlike = map(is_not, islice(before, same, None), islice(after, same, None))
            same = next(compress(count(same), unlike), size)
            if same == size or not _equal(before[same], after[same]):
                return kept + sum(islice(index_before.tokens, same))
            same += 1

    def lay_out(self, cut: Cut | None = None, *, grown: bool = False) -> ConversationIndex:
        """Index the window, copying from the last index the turns it still holds whole: all of
        them but the new ones before a collection (``grown``: the window is the last index's
        messages with those appended since, so nothing is compared), all but those it
        touched after one, read off the last index by position when the collection says how
        it cut (``cut``)."""
        index, _ = index_conversation(
            self.window,
            self.counter,
            recorded_figures=self.recorded,
            clarifications=self.clarifications,
            created_base=self.created_base,
            figure=self.figures,
            reuse=self.index,
            exchange_figures=False,
            cut=cut,
            extends=grown,
        )
        self.index = index
        return index

    def check(self, turn_index: int | None, point: Point, call: int | None = None) -> None:
        tokens = self.base + self.window_tokens
        usage = {
            "total_tokens": tokens,
            "context_limit": self.session.context_limit,
            "percent_used": self.simulation.percent(tokens),
            "turns": self.turns_done,
        }
        wanted, reason = self.plugin.should_collect(usage, self.config)
        # Steps and events are made from values the replay made itself: not validated again
        # (a step is made at every check, 20,000 of them in a 10,000-turn replay).
        step = construct(
            SimulationStep,
            turn_index=turn_index,
            point=point,
            tokens_before=tokens,
            tokens_after=tokens,
            collected=False,
            call_number=call,
        )
        self.simulation.steps.append(step)
        if not wanted or reason is None:
            return
        # The reason is the trigger (threshold, continuous, turn_limit); ``point`` says when.
        result, retention = self.collect(reason)
        self.simulation.events.append(
            construct(
                SimulationEvent,
                turn_index=turn_index,
                point=point,
                reason=reason,
                result=result,
                retention=retention,
                call_number=call,
            )
        )
        if result.success:
            step.tokens_after = self.base + self.window_tokens
            step.collected = True

    def collect(self, reason: GCTriggerReason) -> tuple[GCResult, AnchorRetention | None]:
        """What ``run_gc`` does to the window, without building its budget before or after,
        and what it kept of the anchors it took out (when scoring)."""
        index = self.lay_out(grown=True)
        total = self.base + index.total
        budget = self.outside
        usage = context_usage(budget, len(index.layout), total)
        cut: Cut | None = None
        if isinstance(self.plugin, Strategy):
            history, result, cut = self.plugin.collect_cut(
                self.window,
                usage,
                self.config,
                reason,
                budget,
                counter=self.counter,
                conversation=index,
            )
        else:
            tree = conversation_tree(index, self.created_base)
            entries = {**budget.entries, InstructionSource.CONVERSATION: tree}
            budget = budget.model_copy(update={"entries": entries})
            history, result = self.plugin.collect(self.window, usage, self.config, reason, budget)
        if not result.success:
            return result, None
        window_before, outside_before = self.window, self.outside
        recorded = without_entries(self.state.recorded_budget, result.removal_list)
        if recorded is not self.state.recorded_budget:
            self.state = self.state.model_copy(update={"recorded_budget": recorded})
            self.outside = rebuild_budget(self.state, self.counter)
            self.base = _outside_conversation(self.outside)
        self.window = list(history)
        self.window_tokens = self.lay_out(cut).total
        self.shared_prefix = min(self.shared_prefix, self.prefix_kept(outside_before, index))
        retention = None
        if self.scorer is not None:
            taken = _taken_run(window_before, self.window)
            retention = (
                self.scorer.score_change(window_before, self.window)
                if taken is None
                else self.scorer.score_taken(window_before, self.window, *taken)
            )
        if not isinstance(self.plugin, Strategy):  # another plugin's result is left as it is
            result = result.model_copy()
        # An engine strategy's result is its own, made by this collection: set, not copied.
        result.tokens_before, result.tokens_after = total, self.base + self.window_tokens
        return result, retention


def _equal(one: Message, other: Message) -> bool:
    """Whether two messages are equal: those with different ids never are, and telling that
    costs far less than comparing two models field by field (pydantic's ``==``)."""
    return one.message_id == other.message_id and one == other


def _taken_run(before: list[Message], after: list[Message]) -> tuple[int, int] | None:
    """Where the run of messages a collection took out of ``before`` was (a truncation takes
    the oldest turns but the original request), when ``after`` is the rest of it, the very
    same objects; None when the collection did anything else (put a summary in, marked or
    took messages in several places)."""
    first = next(compress(count(), map(is_not, before, after)), len(after))
    end = first + len(before) - len(after)
    if end < first or not all(map(is_, islice(before, end, None), islice(after, first, None))):
        return None
    return first, end
