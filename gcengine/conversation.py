"""A conversation laid out flat: what a collection reads, by history position.

A collection needs every message's tokens, policy and creation time, where each turn starts and
which messages form each tool exchange; read from a budget tree and a history, that is several
attribute reads on each of tens of thousands of scattered objects, which cost more than the rest
of a collection. The budget
builder knows all of it as it builds, so it keeps a ``ConversationIndex`` with the
conversation entry it makes (``SourceEntry.keep_index``); a collection, and the entry's
``total_tokens``, read that instead. A budget from anywhere else is read once and kept the same
way.

The index describes one conversation entry and one history. The entry drops it when any entry
of its tree is edited; it describes a history only while that is the very same messages, none
of them edited since (``describes``). Both are told by a ``Revision`` (``gcengine._fast``) the
values count their edits against. A copy, an edited budget or another list of messages is read
again.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import islice
from operator import attrgetter, is_, itemgetter, lt
from typing import NamedTuple

from gcengine._fast import Revision
from gcengine.budget import (
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    SourceEntry,
    most_protective,
)
from gcengine.foreign import ForeignHistory
from gcengine.messages import (
    Message,
    MessageKind,
    TurnLayout,
    read_under,
    tool_traffic,
    turn_layout,
)

Figure = Callable[[Message], tuple[int, str]]
"""A message's tokens in the budget and what made the figure (``session.message_figure``)."""

TrafficMember = tuple[int, list[str], list[str]]
"""A message taking part in tool traffic: its position, the call ids it makes and answers."""


class Exchange(NamedTuple):
    """A tool exchange (or a notice) with everything a collection needs to remove it: the
    turn it is in (by position), its messages' history positions and ids, its budget key,
    what it costs, the most protective policy of its messages and its oldest creation time."""

    turn: int
    positions: list[int]
    key: str
    message_ids: list[str]
    tokens: int
    policy: GCPolicy
    created_at: float


ExchangeGroup = tuple[int, list[int]]
"""An exchange as ``turn_exchanges`` finds it: its turn and its messages' positions."""


def turn_key_of(index: int | None, first: Message | None) -> str:
    """Budget key of the turn with stable index ``index`` that begins with ``first``:
    ``turn_<index>`` for uploaded turns; inserted summaries are ``gc_summary_<n>`` (their place
    in the summary chain), inserted notices ``gc_notice_<id>``."""
    if index is not None:
        return f"turn_{index}"
    assert first is not None, "a turn without an index is named by its first message"
    if first.kind is MessageKind.SUMMARY:
        return f"gc_summary_{first.metadata.get('summary_number', first.message_id)}"
    return f"gc_notice_{first.message_id}"


def turn_exchange_figures(
    turn: int,
    groups: Iterable[list[int]],
    messages: Sequence[Message],
    layout: TurnLayout,
    tokens: Sequence[int],
    policies: Sequence[GCPolicy],
    created: Sequence[float],
) -> Iterator[Exchange]:
    """The exchanges of one turn, from its ``turn_exchanges`` groups and the flat figures."""
    index = layout.indices[turn]
    # A turn's own index names it; only a summary or notice is named by its first message.
    key = turn_key_of(index, messages[layout.starts[turn]] if index is None else None)
    ids = layout.message_ids
    for positions in groups:
        yield Exchange(
            turn,
            positions,
            f"{key}/{ids[positions[0]]}",
            [ids[p] for p in positions],
            sum([tokens[p] for p in positions]),
            most_protective([policies[p] for p in positions]),
            min([created[p] for p in positions]),
        )


FigureBasis = tuple[str, Mapping[str, int], frozenset[str]]
"""What a builder's figures and policies depend on besides the message: the counter's name, the
figures the file recorded per message and the messages it recorded as clarifications."""


@dataclass(eq=False)
class ConversationIndex:
    """Each history message's tokens, policy and creation time, by position, with the layout.

    ``counted_by`` and ``basis`` are set when the budget builder made the index: the figures
    are then the builder's own and can stand in for counting the same messages again. The
    builder also records every turn's tool exchanges (``turn_exchanges``), with their figures
    or as ``exchange_groups`` whose figures are worked out when a collection reaches them, and
    the id of the original request; any other index finds the exchanges in the messages.
    ``closing`` flags the closing answers when the builder made the index.
    ``known`` holds every message id the figures cover when that is more than the history's
    (a budget naming messages the history no longer has). ``revisions`` are those the messages
    count their edits against, with their counts when the index was made (given by a builder,
    else the messages are read under a new one: ``read_under``); ``graph`` is the history's
    segment graph once worked out
    (``reachability.graph.segment_graph``): it holds while the index does.
    """

    messages: Sequence[Message]
    layout: TurnLayout
    tokens: list[int]
    policies: list[GCPolicy]
    created_at: list[float]
    counted_by: list[str] | None = None
    basis: FigureBasis | None = None
    known: Container[str] | None = None
    exchanges: list[Exchange] | None = None
    exchange_groups: list[ExchangeGroup] | None = None
    original: str | None = None
    created_base: float = 0.0
    # By position, whether the message is its turn's closing answer (``closing_answer_ids``),
    # when the builder recorded it as it read each turn: a collection keeping such an answer
    # while taking the tool work before it then reads no message to find it.
    closing: bytearray | None = None
    revisions: dict[Revision, int] = field(default_factory=dict, repr=False)
    graph: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.messages and not self.revisions:
            read_under(self.messages, Revision(), self.revisions)

    def exchanges_from(self, turn: int) -> Iterator[Exchange]:
        """The tool exchanges (and notices) of every turn from ``turn`` on, in history order."""
        if self.exchanges is not None:
            first = bisect_left(self.exchanges, turn, key=attrgetter("turn"))
            return islice(self.exchanges, first, None)
        if self.exchange_groups is not None:
            first = bisect_left(self.exchange_groups, turn, key=itemgetter(0))
            groups = islice(self.exchange_groups, first, None)
            return (e for group, positions in groups for e in self._figured(group, [positions]))
        return self._find_exchanges(turn)

    def _figured(self, turn: int, groups: Iterable[list[int]]) -> Iterator[Exchange]:
        return turn_exchange_figures(
            turn, groups, self.messages, self.layout, self.tokens, self.policies, self.created_at
        )

    def _find_exchanges(self, turn: int) -> Iterator[Exchange]:
        """``exchanges_from`` for an index the builder did not make: one pass over the
        messages, lazily; a turn's exchanges come once the pass has left the turn."""
        layout = self.layout
        if turn >= len(layout):
            return
        end = layout.starts[turn]
        members: list[TrafficMember] = []
        # A foreign history's traffic is read already: its messages are not made for it.
        known = self.messages.traffic if isinstance(self.messages, ForeignHistory) else None
        for position in range(end, len(self.messages)):
            traffic = tool_traffic(self.messages[position]) if known is None else known[position]
            if traffic is None:
                continue
            if position >= end:
                yield from self._figured(turn, turn_exchanges(members))
                turn = layout.turn_of(position)
                end = layout.span(turn)[1]
                members = []
            members.append((position, *traffic))
        yield from self._figured(turn, turn_exchanges(members))

    @cached_property
    def total(self) -> int:
        return sum(self.tokens)

    @cached_property
    def tier_tokens(self) -> dict[GCPolicy, int]:
        """The tokens of the messages of each policy: a built conversation and its turns are
        PARTIAL containers, so these are its locked, preservable and eligible (ephemeral)
        tokens, which walking its tree adds up from a leaf per message."""
        totals = dict.fromkeys(GCPolicy, 0)
        for tokens, policy in zip(self.tokens, self.policies, strict=True):
            totals[policy] += tokens
        return totals

    @cached_property
    def ids(self) -> set[str]:
        return set(self.layout.message_ids)

    def covers(self, message_id: str) -> bool:
        """Whether the figures already count the message with this id."""
        return message_id in (self.known if self.known is not None else self.ids)

    @cached_property
    def created_in_order(self) -> bool:
        """Whether creation times strictly increase along the history (as the budget builder
        lays them out). Units of a later turn are then always younger than those of an earlier
        one, so "oldest first" is simply history order and needs no sort over every turn."""
        return all(map(lt, self.created_at, islice(self.created_at, 1, None)))

    @cached_property
    def locked_turns(self) -> frozenset[int]:
        """Turns holding locked content. A session locks a message or two (its original
        request): they are found by the list's own search, which compares in C, and kept
        where the entry is the policy itself (an equal string is not)."""
        policies, locked, position = self.policies, GCPolicy.LOCKED, -1
        turns: set[int] = set()
        while True:
            try:
                position = policies.index(locked, position + 1)
            except ValueError:
                return frozenset(turns)
            if policies[position] is locked:
                turns.add(self.layout.turn_of(position))

    def describes(self, history: Sequence[Message]) -> bool:
        """Whether this is the index of ``history``: the very same messages, in order, none of
        them edited since it was made."""
        return (
            history is self.messages
            or (len(history) == len(self.messages) and all(map(is_, history, self.messages)))
        ) and self.unedited()

    def unedited(self) -> bool:
        """Whether none of the messages was edited since the index was made: what it says of
        them (their layout, tool exchanges, figures) still holds."""
        return all(revision.edits == edits for revision, edits in self.revisions.items())

    def reusing(self, basis: FigureBasis, figure: Figure) -> Figure:
        """``figure``, answered from this index for the messages it holds, when its figures
        were made on the same ``basis``: a budget rebuilt after a collection, or for a replay's
        next window, holds mostly messages whose figures are already known, and working them
        out again (serialising every tool payload to count it) was most of a rebuild."""
        if self.counted_by is None or self.basis != basis:
            return figure
        messages, tokens, counted_by = self.messages, self.tokens, self.counted_by
        positions: dict[int, int] = {}

        def known_figure(message: Message) -> tuple[int, str]:
            if not positions:  # made when the first message is asked for
                positions.update((id(m), position) for position, m in enumerate(messages))
            position = positions.get(id(message))
            if position is not None and messages[position] is message:
                return tokens[position], counted_by[position]
            return figure(message)

        return known_figure


def turn_exchanges(members: Sequence[TrafficMember]) -> list[list[int]]:
    """Group one turn's tool traffic into exchanges: calls with every message answering them;
    notices stand alone.

    Messages joined through a shared call id end up in one group, so a parallel batch answered
    across several messages is one exchange. An exchange is complete only when every call in
    it is answered and every answer has its call in this turn; anything else is left to
    whole-turn removal. Exchanges are given as history positions, ordered by first message.
    """
    if len(members) == 2:  # most turns with tools: one message calling, one answering
        (first, calls, answered), (second, other_calls, answers) = members
        if calls and not answered and not other_calls and set(calls) == set(answers):
            return [[first, second]]
    return [
        [members[i][0] for i in group]
        for group in _linked(members)
        if {c for i in group for c in members[i][1]} == {a for i in group for a in members[i][2]}
    ]


def _linked(members: Sequence[TrafficMember]) -> list[list[int]]:
    """Indices of ``members`` grouped by shared call ids (a union over call ids), each group in
    order, groups in order of their first member."""
    if len(members) < 3:  # most turns: nothing, a notice, or one call and its answer
        if len(members) < 2:
            return [[0]] if members else []
        (_, calls, answers), (_, other_calls, other_answers) = members
        shared = not {*calls, *answers}.isdisjoint([*other_calls, *other_answers])
        return [[0, 1]] if shared else [[0], [1]]
    owner: dict[str, int] = {}
    parent = list(range(len(members)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for index, (_, calls, answers) in enumerate(members):
        for call_id in calls + answers:
            if call_id in owner:
                parent[find(index)] = find(owner[call_id])
            else:
                owner[call_id] = index
    # Members are visited in order, so each group is in order and groups come by first member.
    groups: dict[int, list[int]] = {}
    for index in range(len(members)):
        groups.setdefault(find(index), []).append(index)
    return list(groups.values())


def index_of(entry: SourceEntry | None) -> ConversationIndex | None:
    """The index kept for a conversation entry, if its tree is unedited since (whether it
    describes a history is ``describes``)."""
    return entry.kept_index() if entry is not None else None


def budget_index(budget: InstructionBudget | None) -> ConversationIndex | None:
    if budget is None:
        return None
    return index_of(budget.get_entry(InstructionSource.CONVERSATION))


def history_layout(history: Sequence[Message], budget: InstructionBudget | None) -> TurnLayout:
    """``turn_layout(history)``, from the budget's index when it describes this history."""
    index = budget_index(budget)
    if index is not None and index.describes(history):
        return index.layout
    return turn_layout(history)
