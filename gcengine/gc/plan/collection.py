"""A collection under way: what it may take, what is sealed, and how it starts."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, count, islice
from typing import TYPE_CHECKING, Any, NamedTuple

from gcengine._fast import construct
from gcengine.budget import (
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    most_protective,
)
from gcengine.conversation import ConversationIndex, Exchange, turn_key_of
from gcengine.foreign import ForeignHistory
from gcengine.gc.types import (
    ContextUsage,
)
from gcengine.messages import (
    Message,
    MessageKind,
    Role,
    Turn,
    TurnLayout,
    tool_traffic,
)
from gcengine.session import (
    is_agent_summary,
    latest_request,
)
from gcengine.tokens import TokenCounter, load_counter

if TYPE_CHECKING:
    # Policies sit above the machinery that carries them out: named in signatures only.
    from gcengine.config import GCConfig
    from gcengine.gc.plan.decision import Decision
    from gcengine.session.cut import Cut


from gcengine.gc.plan.units import Unit, read_conversation


@dataclass
class Collection:
    """Everything a strategy needs to decide, computed once per collection.

    Whole-history facts are flat lists by position (``ids``, ``layout``, ``figures``); turns and
    units are built on demand, for the turns a strategy reaches.
    """

    history: Sequence[Message]
    ids: list[str]
    config: GCConfig
    layout: TurnLayout
    figures: ConversationIndex
    budget: InstructionBudget | None
    tokens_before: int
    context_limit: int
    preserve_recent: int
    # Turns nothing may be taken from (recent and pinned), and turns that may not go whole:
    # those plus any turn holding locked content, whose other exchanges may still go.
    sealed: set[int] = field(default_factory=set)
    protected: set[int] = field(default_factory=set)
    # The most the notice a collection leaves can cost (0 without notices): taken into the
    # stopping rule, so a run lands at the target with its notice in.
    notice_reserve: int = 0
    # Where the sealed recent exchanges begin (``preserve_recent_exchanges``): no piece of a
    # turn reaching this position is taken. The history's length when nothing is cut so.
    open_before: int = 0
    # The turns an agent's own compaction summary opens (sealed below pressure).
    agent_summaries: frozenset[int] = frozenset()
    # JAATO's plugins' rules (``rules`` "jaato"): recent and pinned turns are sealed whole,
    # locked content stays, and every other turn is taken whatever the target.
    jaato_rules: bool = False
    # How applying the decision cut the history, when it only took messages (set by ``apply``).
    cut: Cut | None = None

    @cached_property
    def target_tokens(self) -> int:
        return int(self.context_limit * self.config.target_percent / 100)

    @cached_property
    def to_free(self) -> int:
        return self.tokens_before - self.target_tokens

    @cached_property
    def under_pressure(self) -> bool:
        """Whether usage before collecting is at or above ``pressure_percent``: only then may
        preservable content (summaries, closing answers, clarifications) go, and never in
        continuous mode (no pressure threshold)."""
        pressure = self.config.pressure_percent
        if pressure is None or not self.context_limit:
            return False
        return self.tokens_before / self.context_limit * 100 >= pressure

    def still_short(self, decision: Decision) -> bool:
        """Whether the decision, with what it will insert (its summary, the notice), still
        leaves usage above the target."""
        return decision.freed < self.enough(decision)

    def enough(self, decision: Decision) -> int:
        """The tokens the decision must free for usage, with what it will insert, to be at or
        below the target."""
        return self.to_free + self.notice_reserve + decision.summary_reserve

    @property
    def turn_count(self) -> int:
        return len(self.layout)

    def turn(self, position: int) -> Turn:
        start, end = self.layout.span(position)
        return construct(
            Turn, index=self.layout.indices[position], messages=self.history[start:end]
        )

    def turn_key(self, position: int) -> str:
        index = self.layout.indices[position]
        return turn_key_of(
            index, self.history[self.layout.starts[position]] if index is None else None
        )

    def turn_unit(
        self, position: int, left: list[int] | None = None, policy: GCPolicy | None = None
    ) -> Unit:
        """Turn ``position`` as one unit; with ``left`` (the positions earlier phases did not
        take of it), only those messages, its policy and time still the whole turn's. A turn's
        messages are a run of the history: its figures are read as slices. ``policy``: the
        turn's, when the caller has just found every message of it has that one."""
        start, end = self.layout.span(position)
        return self._turn_unit(position, start, end, left, policy)

    def _turn_unit(
        self, position: int, start: int, end: int, left: list[int] | None, policy: GCPolicy | None
    ) -> Unit:
        """``turn_unit`` of the turn whose messages are at ``start`` to ``end``."""
        figures = self.figures
        if left is None:
            left = list(range(start, end))
            ids, tokens = self.ids[start:end], sum(figures.tokens[start:end])
        else:
            ids, tokens = [self.ids[p] for p in left], sum([figures.tokens[p] for p in left])
        index = self.layout.indices[position]
        return Unit(
            InstructionSource.CONVERSATION,
            turn_key_of(index, self.history[start] if index is None else None),
            ids,
            tokens,
            policy or most_protective(figures.policies[start:end]),
            min(figures.created_at[start:end]),
            index,
            position,
            True,
            left,
        )

    def open_positions(self, message_ids: Iterable[str]) -> list[int]:
        """Where the messages with these ids are, outside sealed turns and locked messages:
        a budget entry naming messages takes them with it, but never a protected one, nor a
        protected copy of a message whose id repeats."""
        if not message_ids:
            return []
        wanted, layout, policies = set(message_ids), self.layout, self.figures.policies
        return [
            p
            for p, message_id in enumerate(self.ids)
            if message_id in wanted
            and layout.turn_of(p) not in self.sealed
            and policies[p] is not GCPolicy.LOCKED
        ]

    def removable_turns(self) -> Iterator[int]:
        """Positions of turns a strategy may remove whole, oldest first, as it asks for them."""
        return (p for p in range(len(self.layout)) if p not in self.protected)

    def inner_units(self) -> Iterator[Unit]:
        """Tool exchanges and notices inside unsealed turns, oldest first, as asked for.

        A turn holding locked content (the original request) is not sealed: its exchanges are
        units like any other, and a unit with a locked member is itself locked. Units are made
        as a strategy asks for them, so one that stops early makes no more.
        """
        layout, sealed, open_before = self.layout, self.sealed, self.open_before
        starts, indices = layout.starts, layout.indices
        first = next((p for p in range(len(layout)) if p not in sealed), len(layout))
        said = self._model_text
        turn, start, index = -1, 0, None
        for exchange in self.figures.exchanges_from(first):
            at, positions = exchange.turn, exchange.positions
            if at in sealed or positions[-1] >= open_before:
                continue
            if at != turn:  # the first exchange of a turn: the model's text from its start
                turn, start, index = at, starts[at], indices[at]
            if positions[0] > start and said(positions[0] - 1):
                yield self._text_piece(exchange, start)
            yield _exchange_unit(exchange, index)
            start = positions[-1] + 1

    def _text_piece(self, exchange: Exchange, start: int) -> Unit:
        """The model's text just before ``exchange``, back to ``start`` (where its turn or the
        exchange before it ends), as one unit: what the model said leading up to it. Asked for
        only once the message before the exchange is known to be such text (most often a
        request or a result comes just before, and nothing is read back)."""
        text = self._text_before(exchange.positions[0], start)
        return self.piece_unit(exchange.turn, text, f"{exchange.key}/text")

    def _text_before(self, position: int, start: int) -> list[int]:
        """The model's text messages just before ``position``, back to ``start`` or to any
        other message (a request, a result): what the model said leading up to an exchange."""
        said, text, p = self._model_text, [], position - 1
        while p >= start and said(p):
            text.append(p)
            p -= 1
        return text[::-1]

    @cached_property
    def _model_text(self) -> Callable[[int], bool]:
        """Whether the message at a position is the model's text, in no tool traffic. Told
        once a collection whether the history is foreign (which costs more than reading a
        message): its roles and traffic are read already, and no message is made for them."""
        history = self.history
        if isinstance(history, ForeignHistory):
            roles, traffic = history.roles, history.traffic
            return lambda p: roles[p] is Role.MODEL and traffic[p] is None

        def said(p: int) -> bool:
            message = history[p]
            return (
                message.role is Role.MODEL
                and message.kind is MessageKind.CHAT
                and tool_traffic(message) is None
            )

        return said

    def piece_unit(self, turn: int, positions: list[int], key: str) -> Unit:
        """Messages of turn ``turn`` as one unit, with the most protective of their policies."""
        figures = self.figures
        return Unit(
            InstructionSource.CONVERSATION,
            key,
            [self.ids[p] for p in positions],
            sum([figures.tokens[p] for p in positions]),
            most_protective([figures.policies[p] for p in positions]),
            min([figures.created_at[p] for p in positions]),
            self.layout.indices[turn],
            turn,
            False,
            positions,
        )

    def oldest_units(self, kinds: set[MessageKind]) -> Iterator[Unit]:
        """What truncating and summarizing take, oldest first: removable turns of ``kinds``
        whole, then the pieces of the turns that may not go whole (the turn of the current
        task, of the original request, a recent turn reaching back before the sealed
        exchanges). Turns first, so a policy that turns suffice for takes what it always
        took; pieces only while that is not enough. A locked piece never goes, a preservable
        one only under pressure."""
        kept = {GCPolicy.LOCKED} if self.under_pressure else {GCPolicy.LOCKED, GCPolicy.PRESERVABLE}
        kinds_of = self.layout.kinds
        yield from (self.turn_unit(p) for p in self.removable_turns() if kinds_of[p] in kinds)
        yield from (
            unit
            for unit in self.inner_units()
            if unit.turn_position in self.protected and unit.policy not in kept
        )

    def ephemeral_units(self) -> Iterator[Unit | Planned]:
        """Ephemeral content of the conversation, oldest first, as asked for: a removable turn
        whose every message is ephemeral as one unit, and in any other unsealed turn its
        ephemeral tool exchanges and notices (gc_budget's phase 1b), as ``inner_units`` finds
        them. One pass, turn by turn, the exchanges walked beside the turns (a turn's are read
        only when it does not go whole), so a collection that stops early looks at no further
        turn; what it takes is decided on positions (``Planned``), its units made only if
        asked for."""
        figures, layout = self.figures, self.layout
        policies, tokens, created = figures.policies, figures.tokens, figures.created_at
        in_order = figures.created_in_order  # a turn's oldest message is then its first
        sealed, protected, open_before = self.sealed, self.protected, self.open_before
        ephemeral, new, said = GCPolicy.EPHEMERAL, tuple.__new__, self._model_text
        exchanges = figures.exchanges_from(0)
        pending = next(exchanges, None)
        # Where each turn starts and ends, read in one zip rather than a span per turn.
        ends = chain(islice(layout.starts, 1, None), (len(self.ids),))
        for turn, start, end in zip(count(), layout.starts, ends):
            opened = turn not in sealed
            wholly = (
                opened
                and turn not in protected
                and policies[start:end].count(ephemeral) == end - start
            )
            if wholly:
                yield new(
                    Planned,
                    (
                        self,
                        turn,
                        range(start, end),
                        sum(tokens[start:end]),
                        created[start] if in_order else min(created[start:end]),
                        ephemeral,
                        True,
                        None,
                        None,
                    ),
                )
            # The turn's exchanges: passed over when it is sealed or went whole.
            while pending is not None and pending.turn == turn:
                exchange, pending = pending, next(exchanges, None)
                positions = exchange.positions
                if wholly or not opened or positions[-1] >= open_before:
                    continue
                if positions[0] > start and said(positions[0] - 1):
                    text = self._text_piece(exchange, start)
                    if text.policy is ephemeral:
                        yield text
                if exchange.policy is ephemeral:
                    _, _, key, message_ids, cost, _, at = exchange
                    fields = (self, turn, positions, cost, at, ephemeral, False, key, message_ids)
                    yield new(Planned, fields)
                start = positions[-1] + 1


class Planned(NamedTuple):
    """A conversation unit decided on by position: a whole turn (``whole_turn``, its
    ``positions`` a range) or a tool exchange or notice inside one, with what deciding reads
    (tokens, oldest creation time, policy, positions, turn). Its ``Unit`` and removal item are
    made only when asked for: a collection takes thousands, and its result needs only the
    removal items, made straight from this (``Decision.removal_items``).

    An exchange's ``positions``, ``key`` and ``message_ids`` are its own (for a whole turn the
    key and ids are read from the collection when asked for). Made with ``tuple.__new__``
    and every field given: a named tuple's own ``__new__`` is a Python function, costing
    three times as much, as much as a ``Unit``."""

    collection: Collection
    turn_position: int
    positions: Sequence[int]
    tokens: int
    created_at: float
    policy: GCPolicy
    whole_turn: bool
    key: str | None = None
    message_ids: list[str] | None = None

    def unit(self) -> Unit:
        """The ``Unit`` this stands for, as the collection makes it."""
        collection, turn = self.collection, self.turn_position
        if self.whole_turn:
            start, end = collection.layout.span(turn)
            return collection._turn_unit(turn, start, end, None, self.policy)
        assert self.key is not None
        assert self.message_ids is not None
        return Unit(
            InstructionSource.CONVERSATION,
            self.key,
            self.message_ids,
            self.tokens,
            self.policy,
            self.created_at,
            collection.layout.indices[turn],
            turn,
            False,
            self.positions,  # type: ignore[arg-type]  # an exchange's: its list
        )


def _exchange_unit(exchange: Exchange, index: int | None) -> Unit:
    """An exchange (or notice) as a unit, its turn's stable index ``index``."""
    return Unit(
        InstructionSource.CONVERSATION,
        exchange.key,
        exchange.message_ids,
        exchange.tokens,
        exchange.policy,
        exchange.created_at,
        index,
        exchange.turn,
        False,
        exchange.positions,
    )


def pinned_turns(layout: TurnLayout, ids: Sequence[str], config: GCConfig) -> set[int]:
    """Positions of the turns the policy pins, by stable index or by a message's id."""
    pinned_indices = set(config.pinned_turn_indices)
    pinned_ids = set(config.pinned_message_ids)
    turns: set[int] = set()
    if pinned_indices:
        turns.update(
            turn
            for turn, index in enumerate(layout.indices)
            if index is not None and index in pinned_indices
        )
    if pinned_ids:
        turns.update(layout.turn_of(p) for p, i in enumerate(ids) if i in pinned_ids)
    return turns


def jaato_rules(config: GCConfig, plugin_options: Mapping[str, Any]) -> bool:
    """Whether a collection follows JAATO's plugins' rules (``rules`` "jaato"): the plugin's
    own option, else ``plugin_config``'s, else the policy's, as JAATO's plugins read every
    option over their ``GCConfig``."""
    rules = plugin_options.get("rules", config.plugin_config.get("rules", config.rules))
    return bool(rules == "jaato")


def preserve_count(config: GCConfig, plugin_options: Mapping[str, Any]) -> int:
    """``preserve_recent_turns`` from the plugin's own options, else the policy's (as JAATO)."""
    value = plugin_options.get("preserve_recent_turns", config.preserve_recent_turns)
    return int(value)


def start_collection(
    history: Sequence[Message],
    context_usage: ContextUsage,
    config: GCConfig,
    budget: InstructionBudget | None,
    counter: TokenCounter | None,
    preserve_recent: int,
    conversation: ConversationIndex | None = None,
    *,
    jaato_rules: bool = False,
) -> Collection:
    """What a collection of ``history`` may take. Under JAATO's rules (``jaato_rules``) the
    last ``preserve_recent`` turns, whatever they hold, and pinned turns are sealed whole, and
    only locked content is protected beyond them: without a budget nothing is locked, as
    JAATO's plugins lock nothing (the engine's own rules lock the original request)."""
    # A foreign history makes its messages as they are read: it is not read whole to copy it.
    history = history if isinstance(history, ForeignHistory) else list(history)
    counter = counter or load_counter()
    figures, tokens_before = read_conversation(
        history, budget, counter, conversation, lock_original=not jaato_rules
    )
    layout = figures.layout
    ids = layout.message_ids
    if budget is not None:
        limit = budget.context_limit
    else:
        tokens_before, limit = _usage_figures(context_usage, tokens_before)
    if jaato_rules:
        return _jaato_collection(
            history, ids, config, figures, budget, tokens_before, limit, preserve_recent
        )
    only_chat = layout.kinds.count(MessageKind.CHAT) == len(layout)
    chat: Sequence[int] = (
        range(len(layout))
        if only_chat
        else [p for p, kind in enumerate(layout.kinds) if kind is MessageKind.CHAT]
    )
    recent = list(chat[-preserve_recent:]) if preserve_recent else []
    open_before = _recent_exchanges_start(figures, recent, config.preserve_recent_exchanges)
    # A recent turn that begins before the sealed exchanges is not sealed: its older pieces
    # may go, though never the turn whole.
    unsealed_recent = {p for p in recent if layout.starts[p] < open_before}
    sealed = set(recent) - unsealed_recent | pinned_turns(layout, ids, config)
    task = latest_request(history)
    current = {layout.turn_of(task)} if task is not None else set()
    # A history of chat turns only (most) holds no summary: its turns are not gone through.
    agent = frozenset(
        ()
        if only_chat
        else (
            p
            for p, kind in enumerate(layout.kinds)
            if kind is MessageKind.SUMMARY and is_agent_summary(history[layout.starts[p]])
        )
    )
    collection = Collection(
        history=history,
        ids=ids,
        config=config,
        layout=layout,
        figures=figures,
        budget=budget,
        tokens_before=tokens_before,
        context_limit=limit,
        preserve_recent=preserve_recent,
        sealed=sealed,
        protected=sealed | unsealed_recent | current | figures.locked_turns,
        open_before=open_before,
        agent_summaries=agent,
    )
    if agent and not collection.under_pressure:
        # The agent's own summary is the only record of what it compacted: like every
        # preservable message it may go only under pressure, and never into a summary of it.
        collection.sealed |= agent
        collection.protected |= agent
    return collection


def _jaato_collection(
    history: Sequence[Message],
    ids: list[str],
    config: GCConfig,
    figures: ConversationIndex,
    budget: InstructionBudget | None,
    tokens_before: int,
    limit: int,
    preserve_recent: int,
) -> Collection:
    """A collection under JAATO's rules: the last ``preserve_recent`` turns (JAATO counts a
    summary or notice as a turn too) and pinned turns sealed whole, turns holding locked
    content protected; nothing inside a turn is ever a unit on its own."""
    layout = figures.layout
    recent = set(range(max(0, len(layout) - preserve_recent), len(layout)))
    sealed = recent | pinned_turns(layout, ids, config)
    return Collection(
        history=history,
        ids=ids,
        config=config,
        layout=layout,
        figures=figures,
        budget=budget,
        tokens_before=tokens_before,
        context_limit=limit,
        preserve_recent=preserve_recent,
        sealed=sealed,
        protected=sealed | figures.locked_turns,
        open_before=0,
        jaato_rules=True,
    )


def _recent_exchanges_start(
    figures: ConversationIndex, recent: Sequence[int], exchanges: int | None
) -> int:
    """Where the latest ``exchanges`` tool exchanges of the ``recent`` turns begin: the
    history's length when ``exchanges`` is None or 0 is kept of more, the start of the recent
    turns when they hold no more than that many."""
    history_end = len(figures.messages)
    if not recent or exchanges is None:
        return history_end if not recent else figures.layout.starts[recent[0]]
    first = figures.layout.starts[recent[0]]
    starts = [e.positions[0] for e in figures.exchanges_from(recent[0])]
    if len(starts) <= exchanges:
        return first
    return starts[-exchanges] if exchanges else history_end


def _usage_figures(usage: ContextUsage, counted: int) -> tuple[int, int]:
    """Tokens in context and the context limit, without a budget: the caller's usage, as JAATO
    hands it to a plugin (``total_tokens``, ``context_limit``, ``percent_used``, any of them
    absent), else the history as counted here.

    The usage covers what the history does not (system prompt, tools), so a collection frees
    history tokens against the usage the agent reported, not against the history alone.
    """
    total = _positive(usage.get("total_tokens"))
    limit = _positive(usage.get("context_limit"))
    percent = _positive(usage.get("percent_used"))
    if total is None:
        total = round(percent * limit / 100) if percent and limit else counted
    if limit is None:
        limit = round(total * 100 / percent) if percent else total
    return int(total), max(int(limit), 1)


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value) if value > 0 else None
