"""What every strategy shares: removal units, protection, and applying a decision.

A strategy only *chooses* units, oldest first, until the target is met. This module reads what
it needs about the whole history once, as flat per-position lists (where each turn starts, each
message's tokens, policy and creation time, what is protected), and builds units only for the
turns a strategy actually looks at: a collection stops at the target, usually long before the
recent end of a session, and the turns it never reaches cost nothing more.

Removal units:

* a whole turn;
* inside an older turn, a tool exchange: the model message(s) making calls together with every
  message answering them (merged when answers span several calls), so no result is ever left
  without its call or a call without its result;
* inside an older turn, a notice the collector wrote earlier;
* a budget entry outside the conversation (an ephemeral plugin entry, the enrichment source).

A unit takes the most protective policy of its members, so pulling a tool result never drags a
preservable or locked call with it.

Sealed, nothing taken from them: the last ``preserve_recent_turns`` conversation turns and
pinned turns (stable index or message id). A turn holding locked content (the original request)
never goes whole, but an ephemeral exchange inside it may go: the first request often starts
the longest tool loop of a session. Without a budget, the original request is still locked.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress
from typing import TYPE_CHECKING, Any

from gcengine._fast import REVISION_KEY, Revision, construct, entry_maker
from gcengine.budget import (
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    SourceEntry,
    most_protective,
)
from gcengine.conversation import ConversationIndex, index_of, turn_key_of
from gcengine.gc.types import (
    ContextUsage,
    GCRemovalItem,
    GCResult,
    GCTriggerReason,
    RemovalReason,
    RemovalVerdict,
)
from gcengine.messages import (
    Message,
    MessageKind,
    Part,
    Role,
    Turn,
    TurnLayout,
    read_under,
    starts_turn,
    turn_layout,
    uuid_shaped,
)
from gcengine.session import CLOSING_ANSWER_KEY, closing_answer_ids, original_request
from gcengine.tokens import TokenCounter, count_message, load_counter

if TYPE_CHECKING:
    # Policies sit above the machinery that carries them out: named in signatures only.
    from gcengine.config import GCConfig


@dataclass(slots=True)
class Unit:
    """Something a strategy can remove in one piece.

    ``positions`` are the history positions of the messages it removes: the very messages it
    was made of, so a message id that repeats elsewhere in the history takes no other copy.
    """

    source: InstructionSource
    key: str | None
    message_ids: list[str]
    tokens: int
    policy: GCPolicy
    created_at: float
    turn_index: int | None = None
    turn_position: int | None = None
    whole_turn: bool = False
    positions: list[int] = field(default_factory=list)
    verdict: RemovalVerdict | None = None


def _read_as_laid_out(
    history: list[Message], layout: TurnLayout, conversation: SourceEntry
) -> ConversationIndex | None:
    """The index of a conversation entry laid out as ``build_conversation`` lays it out: one
    container per turn and, in history order, one leaf per message naming only that message.

    Read positionally, without the id lookups the general reading needs; None for any other
    layout. With unique history ids (the caller's check) each message is then named by exactly
    one leaf, so this gives what ``_read_by_id`` would.

    Every turn must be PARTIAL, as built: the index holds the leaves' policies, and a turn
    with a policy of its own overrides theirs in the tree's figures.

    The entry keeps the index read: every entry of its tree is stamped with the tree's
    revision (the entry's own, or a new one), so that an edit of any of them drops it. Unless
    an entry counts its edits against another tree's revision already (one tree's entries put
    into another): the index is then used, not kept.
    """
    if not conversation.children:
        return None
    revision = conversation.revision()
    if revision is None:
        revision = Revision()
        conversation.stamp(revision)
    ids = layout.message_ids
    tokens: list[int] = []
    policies: list[GCPolicy] = []
    created: list[float] = []
    position, size = 0, len(ids)
    foreign = False
    stamp, key = dict.setdefault, REVISION_KEY  # bound once: a conversation has a leaf a message
    for turn in conversation.children.values():
        leaves = turn.children
        # A turn whose own policy is not the builder's PARTIAL decides its figures itself
        # (a locked turn has nothing eligible whatever its leaves say): an index of the
        # leaves would tell other figures than the tree, so none is read or kept.
        if not leaves or turn.gc_policy is not GCPolicy.PARTIAL:
            return None
        # Stamped as read (``SourceEntry.stamp``), in the loop that reads every leaf anyway.
        if stamp(turn.__dict__, key, revision) is not revision:
            foreign = True
        for leaf in leaves.values():
            named = leaf.message_ids
            if leaf.children or position == size or len(named) != 1 or named[0] != ids[position]:
                return None
            tokens.append(leaf.tokens)
            policies.append(leaf.gc_policy)
            created.append(leaf.created_at or 0.0)
            if stamp(leaf.__dict__, key, revision) is not revision:
                foreign = True
            position += 1
    if position != size:
        return None
    revisions: dict[Revision, int] = {}
    read_under(history, revision, revisions)
    index = ConversationIndex(history, layout, tokens, policies, created, revisions=revisions)
    if not foreign:
        conversation.keep_index(index)
    return index


def _read_by_id(
    history: list[Message],
    layout: TurnLayout,
    conversation: SourceEntry | None,
    counter: TokenCounter,
) -> tuple[ConversationIndex, int]:
    """The index for a budget of any shape, and the tokens of the messages it covers."""
    leaves: Iterable[BudgetLeaf] = ()
    if conversation is not None:
        leaves = (
            (entry.tokens, entry.gc_policy, entry.created_at, entry.message_ids)
            for _, entry in conversation.walk()
            if not entry.children and entry.message_ids
        )
    return index_by_id(history, layout, leaves, counter, budgeted=conversation is not None)


BudgetLeaf = tuple[int, GCPolicy, float | None, Sequence[str]]
"""A conversation leaf of a budget as an index reads it: tokens, stored policy, creation time
and the messages it names."""


def index_by_id(
    history: list[Message],
    layout: TurnLayout,
    leaves: Iterable[BudgetLeaf],
    counter: TokenCounter,
    *,
    budgeted: bool,
) -> tuple[ConversationIndex, int]:
    """The index of ``history`` from a budget's conversation leaves naming messages, and the
    tokens of the messages it covers (an adapter reading another framework's budget hands its
    leaves in directly).

    Every leaf naming messages shares its tokens among them (the first takes the remainder); a
    message no leaf names is counted, as the budget builder would. Without a budget
    (``budgeted`` false), the original request is locked as the budget builder would lock it.
    """
    tokens: dict[str, int] = {}
    policies: dict[str, GCPolicy] = {}
    created: dict[str, float] = {}
    for leaf_tokens, policy, created_at, message_ids in leaves:
        share, remainder = divmod(leaf_tokens, len(message_ids))
        for position, message_id in enumerate(message_ids):
            tokens[message_id] = share + (remainder if position == 0 else 0)
            policies[message_id] = policy
            created[message_id] = created_at or 0.0
    original = None if budgeted else original_request(history)
    unnamed = set(layout.message_ids).difference(tokens.keys())
    for position, message in enumerate(history if unnamed else ()):
        if message.message_id not in tokens:
            tokens[message.message_id] = count_message(message, counter)
            policies[message.message_id] = (
                GCPolicy.LOCKED
                if position == original
                else GCPolicy.PRESERVABLE
                if message.kind is MessageKind.SUMMARY
                else GCPolicy.EPHEMERAL
            )
            created[message.message_id] = position / 1000
    ids = layout.message_ids
    index = ConversationIndex(
        history,
        layout,
        [tokens[i] for i in ids],
        [policies[i] for i in ids],
        [created[i] for i in ids],
        known=tokens.keys(),
    )
    return index, sum(tokens.values())


def _read_conversation(
    history: list[Message],
    budget: InstructionBudget | None,
    counter: TokenCounter,
    given: ConversationIndex | None,
) -> tuple[ConversationIndex, int]:
    """The conversation's index, and the tokens in context before collecting.

    A built budget's conversation entry keeps its index (``build_conversation``); any other
    budget laid out the same way is read once and kept, so the next collection of the same
    history and budget reads nothing again. An index ``given`` for this history stands for the
    budget's conversation entry.
    """
    conversation = budget.get_entry(InstructionSource.CONVERSATION) if budget else None
    # Only the engine's replay hands an index in: a mismatch is a bug here, not bad input.
    assert given is None or (budget is not None and given.describes(history)), (
        "a conversation index stands for a budget's, of the same history"
    )
    index = given or index_of(conversation)
    if index is None or not index.describes(history):
        layout = turn_layout(history)
        index = None
        if conversation is not None and len(set(layout.message_ids)) == len(history):
            index = _read_as_laid_out(history, layout, conversation)
        if index is None:
            index, covered = _read_by_id(history, layout, conversation, counter)
            return index, budget.total_tokens() if budget is not None else covered
    assert budget is not None  # an index is only ever kept for a budget's conversation
    # The conversation's total is its index's; only the small entries outside it are walked.
    outside = sum(
        entry.total_tokens()
        for source, entry in budget.context_entries()
        if source is not InstructionSource.CONVERSATION
    )
    return index, outside + index.total


@dataclass
class Collection:
    """Everything a strategy needs to decide, computed once per collection.

    Whole-history facts are flat lists by position (``ids``, ``layout``, ``figures``); turns and
    units are built on demand, for the turns a strategy reaches.
    """

    history: list[Message]
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
        return decision.freed < self.to_free + self.notice_reserve + decision.summary_reserve

    @property
    def turn_count(self) -> int:
        return len(self.layout)

    def turn(self, position: int) -> Turn:
        start, end = self.layout.span(position)
        return construct(
            Turn, index=self.layout.indices[position], messages=self.history[start:end]
        )

    def turn_key(self, position: int) -> str:
        first = self.history[self.layout.starts[position]]
        return turn_key_of(self.layout.indices[position], first)

    def turn_unit(
        self, position: int, left: list[int] | None = None, policy: GCPolicy | None = None
    ) -> Unit:
        """Turn ``position`` as one unit; with ``left`` (the positions earlier phases did not
        take of it), only those messages, its policy and time still the whole turn's. A turn's
        messages are a run of the history: its figures are read as slices. ``policy``: the
        turn's, when the caller has just found every message of it has that one."""
        start, end = self.layout.span(position)
        figures = self.figures
        if left is None:
            left = list(range(start, end))
            ids, tokens = self.ids[start:end], figures.tokens[start:end]
        else:
            ids, tokens = [self.ids[p] for p in left], [figures.tokens[p] for p in left]
        return Unit(
            InstructionSource.CONVERSATION,
            self.turn_key(position),
            ids,
            sum(tokens),
            policy or most_protective(figures.policies[start:end]),
            min(figures.created_at[start:end]),
            self.layout.indices[position],
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
        layout, sealed = self.layout, self.sealed
        first = next((p for p in range(len(layout)) if p not in sealed), len(layout))
        conversation, indices = InstructionSource.CONVERSATION, layout.indices
        for turn, positions, key, ids, tokens, policy, created in self.figures.exchanges_from(
            first
        ):
            if turn not in sealed:
                yield Unit(
                    conversation,
                    key,
                    ids,
                    tokens,
                    policy,
                    created,
                    indices[turn],
                    turn,
                    False,
                    positions,
                )

    def ephemeral_units(self) -> Iterator[Unit]:
        """Ephemeral content of the conversation, oldest first, as asked for: a removable turn
        whose every message is ephemeral as one unit, and in any other unsealed turn its
        ephemeral tool exchanges and notices (gc_budget's phase 1b). One pass, turn by turn,
        so a collection that stops early looks at no further turn."""
        policies, layout = self.figures.policies, self.layout
        exchanges = self.inner_units()
        pending = next(exchanges, None)
        for turn in range(len(layout)):
            if turn in self.sealed:
                continue
            start, end = layout.span(turn)
            wholly = (
                turn not in self.protected
                and policies[start:end].count(GCPolicy.EPHEMERAL) == end - start
            )
            if wholly:
                yield self.turn_unit(turn, policy=GCPolicy.EPHEMERAL)
            while pending is not None and pending.turn_position == turn:
                if not wholly and pending.policy is GCPolicy.EPHEMERAL:
                    yield pending
                pending = next(exchanges, None)


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
) -> Collection:
    history = list(history)
    counter = counter or load_counter()
    figures, tokens_before = _read_conversation(history, budget, counter, conversation)
    layout = figures.layout
    ids = layout.message_ids
    if budget is not None:
        limit = budget.context_limit
    else:
        tokens_before, limit = _usage_figures(context_usage, tokens_before)
    chat: Sequence[int] = (
        range(len(layout))
        if layout.kinds.count(MessageKind.CHAT) == len(layout)
        else [p for p, kind in enumerate(layout.kinds) if kind is MessageKind.CHAT]
    )
    recent = set(chat[-preserve_recent:]) if preserve_recent else set()
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
    )


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


def marked_message(kind: MessageKind, text: str, seed: Iterable[str], **metadata: Any) -> Message:
    """A summary or notice: a user-role message (JAATO's shape) that says what it is."""
    digest = hashlib.blake2b(f"{kind.value}:{text}".encode(), digest_size=16)
    for message_id in seed:
        digest.update(message_id.encode())
    return Message(
        role=Role.USER,
        parts=[Part.from_text(text)],
        message_id=uuid_shaped(digest.hexdigest()),
        kind=kind,
        metadata=metadata,
    )


def notice_message(collection: Collection, decision: Decision, notification: str) -> Message:
    """The notice a collection leaves: JAATO's ``[System: ...]`` user message."""
    return marked_message(
        MessageKind.NOTICE,
        f"[System: {notification}]",
        sorted({collection.ids[p] for p in decision.removed_positions}),
    )


@dataclass
class Decision:
    """What a strategy chose; ``apply`` turns it into a history and a result."""

    removed: list[tuple[Unit, str]] = field(default_factory=list)
    inserted: Message | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # Both kept as units are added: strategies ask after every candidate.
    freed: int = 0
    removed_positions: set[int] = field(default_factory=set)
    # The most the summary this decision will write may cost (0 while it writes none).
    summary_reserve: int = 0

    def remove(self, unit: Unit, reason: str) -> None:
        self.removed.append((unit, reason))
        self.freed += unit.tokens
        self.removed_positions.update(unit.positions)

    def turns_taken_whole(self) -> set[int]:
        """The positions of the turns a whole-turn unit took: every message they had left."""
        return {
            unit.turn_position
            for unit, _ in self.removed
            if unit.whole_turn and unit.turn_position is not None
        }

    @property
    def inserted_tokens(self) -> int:
        return int(self.details.get("summary_tokens") or 0) if self.inserted is not None else 0

    def truncate_instead(self, why: str) -> None:
        """Drop the summary and truncate the turns it would have replaced, saying why."""
        self.removed = [
            (unit, RemovalReason.TRUNCATED if reason == RemovalReason.SUMMARIZED else reason)
            for unit, reason in self.removed
        ]
        self.inserted = None
        self.summary_reserve = 0
        summarized = int(self.details.pop("turns_summarized", 0) or 0)
        for key in ("summary_number", "summarizer"):
            self.details.pop(key, None)
        if "turns_truncated" in self.details:
            self.details["turns_truncated"] = int(self.details["turns_truncated"]) + summarized
            self.details["turns_summarized"] = 0
        self.details["summary_tokens"] = 0
        self.details["summary_skipped"] = why


def take_until_target(
    collection: Collection, candidates: Iterable[Unit], reason: str, decision: Decision
) -> None:
    """Take candidates in order until the collection is at or below its target.

    What the run will insert (its summary, the notice) counts: a run stops only once usage
    with those in is at or below the target. Candidates may be generated lazily: none is asked
    for once the target is met.
    """
    if not collection.still_short(decision):
        return
    for unit in candidates:
        decision.remove(unit, reason)
        if not collection.still_short(decision):
            return


def oldest_first(
    collection: Collection,
    entries: list[Unit],
    turn_units: Iterable[Unit],
    key: Callable[[Unit], Any],
) -> Iterable[Unit]:
    """``sorted(entries + list(turn_units), key=key)``, where ``key`` orders by ``created_at``
    first, without building every turn's units when the order is already known.

    ``turn_units`` come oldest turn first, in history order within a turn. When creation times
    increase along the history, that is their sorted order, so they only need merging with the
    budget entries outside the conversation, lazily; the merge is stable (entries first on
    equal keys), exactly as the sort of the concatenation.
    """
    if not collection.figures.created_in_order:
        return sorted([*entries, *turn_units], key=key)
    if not entries:
        return turn_units
    return heapq.merge(sorted(entries, key=key), turn_units, key=key)


def touched_turns(collection: Collection, decision: Decision) -> set[int]:
    """The turns a decision takes messages from: a conversation unit's own, and those of the
    messages an entry outside the conversation names."""
    touched: set[int] = set()
    for unit, _ in decision.removed:
        if unit.turn_position is not None:
            touched.add(unit.turn_position)
        else:
            touched.update(map(collection.layout.turn_of, unit.positions))
    return touched


def _turns_after(
    collection: Collection,
    first: int,
    touched: list[int],
    inserts: Sequence[Message],
    removed: set[int],
    taken_whole: set[int],
) -> int:
    """How many turns the new history has, without splitting it again; ``inserts`` go before
    turn ``first``, the first of those ``touched``, if any; ``taken_whole`` are the turns
    none of whose messages is left.

    Splitting depends only on each turn's first message. So while the new history ends a turn
    where the old one did, a turn that keeps its first message stays one turn; only turns that
    lost it, or that follow a place where the split changed, are looked at again.
    """
    history, layout = collection.history, collection.layout
    turns = first
    opener = history[layout.starts[first - 1]] if first else None
    for message in inserts:
        if starts_turn(message, opener):
            turns += 1
            opener = message
    in_step = not inserts  # the split so far ends where the old one did
    turn = first
    for lost in [*(t for t in touched if layout.starts[t] in removed), len(layout)]:
        while turn < lost:  # these turns keep their first message
            if in_step:
                turns += lost - turn
                turn = lost
                opener = history[layout.starts[turn - 1]]
                break
            head = history[layout.starts[turn]]
            if starts_turn(head, opener):
                turns += 1
                opener = head
            else:
                turns, opener = _split_rest(collection, turn, removed, turns, opener)
            in_step = opener is head
            turn += 1
        if turn == len(layout):
            break
        if turn not in taken_whole:  # a turn with nothing left has nothing to split
            turns, opener = _split_rest(collection, turn, removed, turns, opener)
        in_step = opener is history[layout.starts[turn]]
        turn += 1
    return turns


def _split_rest(
    collection: Collection, turn: int, removed: set[int], turns: int, opener: Message | None
) -> tuple[int, Message | None]:
    """Continue splitting through the messages ``turn`` keeps: the turns count and opener."""
    start, end = collection.layout.span(turn)
    for position in range(start, end):
        message = collection.history[position]
        if position not in removed and starts_turn(message, opener):
            turns += 1
            opener = message
    return turns, opener


def _closing_answers_kept(
    collection: Collection, touched: Sequence[int], removed: set[int]
) -> dict[int, Message]:
    """The closing answers of the touched turns that stay while messages before them go,
    by position, marked as closing answers (``CLOSING_ANSWER_KEY``): their policy must
    outlive the tool work that told it, or the next run of the same policy would take them."""
    marked: dict[int, Message] = {}
    history, span = collection.history, collection.layout.span
    for turn in touched:
        start, end = span(turn)
        if removed.issuperset(range(start, end)):  # a turn taken whole keeps nothing
            continue
        closing = closing_answer_ids(history[start:end])
        for position in range(start, end):
            message = history[position]
            if (
                message.message_id in closing
                and position not in removed
                and message.metadata.get(CLOSING_ANSWER_KEY) is not True
            ):
                marked[position] = _new_message(  # a copy without pydantic's cost
                    {**message.__dict__, "metadata": {**message.metadata, CLOSING_ANSWER_KEY: True}}
                )
    return marked


_new_message = entry_maker(Message)  # every field given: the message's, the mark added


def apply(
    collection: Collection,
    decision: Decision,
    *,
    plugin_name: str,
    reason: GCTriggerReason,
    counter: TokenCounter | None,
    notification: str | None = None,
    write_notice: bool = True,
) -> tuple[list[Message], GCResult]:
    """Build the new history and the result; ``notification`` goes into the history as a
    notice when ``write_notice`` (a no-op notice is only reported: it would grow the context)."""
    removed = decision.removed_positions
    history, layout = collection.history, collection.layout
    inserts = [m for m in (decision.inserted,) if m is not None]
    if notification is not None and write_notice:
        inserts.append(notice_message(collection, decision, notification))
    # Inserts go before the first turn anything was taken from: at a turn boundary, so they
    # never split a turn that keeps some of its messages. Turns before it and after the last
    # one touched are kept as they are, by slicing. A notice that nothing could be taken goes
    # first, where JAATO puts it.
    touched = sorted(touched_turns(collection, decision))
    if touched:
        first = touched[0]
        start, end = layout.starts[first], layout.span(touched[-1])[1]
    elif inserts:
        first, start, end = 0, 0, 0
    else:
        first, start, end = len(layout), len(history), len(history)
    keep = bytearray(b"\x01") * (end - start)
    for position in removed:
        keep[position - start] = 0
    marked = _closing_answers_kept(collection, touched, removed)
    if marked:
        kept = [marked.get(p) or history[p] for p in compress(range(start, end), keep)]
    else:
        kept = list(compress(history[start:end], keep))
    new_history = [*history[:start], *inserts, *kept, *history[end:]]
    counter = counter or load_counter()
    added = sum(
        count_message(m, counter)
        for m in inserts
        if m.kind is not MessageKind.CHAT and not collection.figures.covers(m.message_id)
    )
    removal_list = [
        GCRemovalItem(
            unit.source,
            unit.key,
            unit.tokens,
            why,
            list(unit.message_ids),
            unit.turn_index,
            unit.verdict,
        )
        for unit, why in decision.removed
    ]
    tokens_after = collection.tokens_before - decision.freed + added
    # Every figure here is the engine's own: the result is made without validating it again.
    result = construct(
        GCResult,
        success=True,
        items_collected=len(removal_list),
        tokens_before=collection.tokens_before,
        tokens_after=tokens_after,
        plugin_name=plugin_name,
        trigger_reason=reason,
        notification=notification,
        details={
            "target_tokens": collection.target_tokens,
            "tokens_to_free": max(0, collection.to_free),
            "turns_before": len(layout),
            "turns_after": _turns_after(
                collection, first, touched, inserts, removed, decision.turns_taken_whole()
            ),
            "protected_turns": sorted(
                index for p in collection.protected if (index := layout.indices[p]) is not None
            ),
            **decision.details,
        },
        error=None,
        removal_list=removal_list,
    )
    return new_history, result


def failed(
    collection: Collection, plugin_name: str, reason: GCTriggerReason, error: str
) -> GCResult:
    return GCResult(
        success=False,
        items_collected=0,
        tokens_before=collection.tokens_before,
        tokens_after=collection.tokens_before,
        plugin_name=plugin_name,
        trigger_reason=reason,
        error=error,
    )
