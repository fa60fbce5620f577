"""Removal units and reading a history and its budget into flat per-position lists, once per
collection."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING

from gcengine._fast import REVISION_KEY, Revision
from gcengine.budget import (
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    SourceEntry,
)
from gcengine.conversation import ConversationIndex, index_of
from gcengine.gc.types import (
    RemovalVerdict,
)
from gcengine.messages import (
    Message,
    MessageKind,
    TurnLayout,
    read_under,
    turn_layout,
)
from gcengine.session import (
    original_request,
)
from gcengine.tokens import TokenCounter, count_message

if TYPE_CHECKING:
    # Policies sit above the machinery that carries them out: named in signatures only.
    pass


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
    history: Sequence[Message], layout: TurnLayout, conversation: SourceEntry
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
    history: Sequence[Message],
    layout: TurnLayout,
    conversation: SourceEntry | None,
    counter: TokenCounter,
    lock_original: bool,
) -> tuple[ConversationIndex, int]:
    """The index for a budget of any shape, and the tokens of the messages it covers; without
    a budget, the original request is locked when ``lock_original``."""
    leaves: Iterable[BudgetLeaf] = ()
    if conversation is not None:
        leaves = (
            (entry.tokens, entry.gc_policy, entry.created_at, entry.message_ids)
            for _, entry in conversation.walk()
            if not entry.children and entry.message_ids
        )
    budgeted = conversation is not None or not lock_original
    return index_by_id(history, layout, leaves, counter, budgeted=budgeted)


BudgetLeaf = tuple[int, GCPolicy, float | None, Sequence[str]]
"""A conversation leaf of a budget as an index reads it: tokens, stored policy, creation time
and the messages it names."""


def index_by_id(
    history: Sequence[Message],
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


def index_in_order(
    history: Sequence[Message],
    layout: TurnLayout,
    tokens: list[int],
    policies: list[GCPolicy],
    created: list[float | None],
    named: Sequence[Sequence[str]],
    revisions: dict[Revision, int] | None = None,
    *,
    in_order: bool = False,
) -> tuple[ConversationIndex, int] | None:
    """``index_by_id`` of a budget, for leaves given as parallel lists (each leaf's tokens,
    policy, time and the ids it names), when they are laid out as a session's budget is: each
    leaf naming one message, the leaves naming the history's messages in order, each once. The
    figures are then the leaves' own, position by position, and no message is looked up by
    id; None for any other budget (``index_by_id`` reads it). ``tokens`` and ``policies`` are
    kept by the index: the caller hands over lists it no longer changes. ``revisions``, when
    the caller knows what every message counts its edits against (``ConversationIndex``),
    spares the index reading each message for it. ``in_order`` says the caller checked the
    layout as it read the leaves (the JAATO plugins do): it is not checked again."""
    ids = layout.message_ids
    if not in_order:
        if len(named) != len(ids) or len(set(ids)) != len(ids):
            return None
        flat = list(chain.from_iterable(named))
        # As many ids as leaves, none empty (a leaf naming nothing is not read): one id a leaf.
        if len(flat) != len(ids) or flat != ids:
            return None
    times = [0.0 if c is None else c for c in created] if None in created else list(created)
    index = ConversationIndex(
        history,
        layout,
        tokens,
        policies,
        times,  # type: ignore[arg-type]
        revisions=dict(revisions or {}),
    )
    return index, index.total


def read_conversation(
    history: Sequence[Message],
    budget: InstructionBudget | None,
    counter: TokenCounter,
    given: ConversationIndex | None,
    *,
    lock_original: bool = True,
) -> tuple[ConversationIndex, int]:
    """The conversation's index, and the tokens in context before collecting (without a
    budget, the original request locked as a budget would lock it, when ``lock_original``).

    A built budget's conversation entry keeps its index (``build_conversation``); any other
    budget laid out the same way is read once and kept, so the next collection of the same
    history and budget reads nothing again. An index ``given`` for this history stands for the
    budget's conversation entry.
    """
    conversation = budget.get_entry(InstructionSource.CONVERSATION) if budget else None
    # Only the engine's replay hands an index in: a mismatch is a bug here, not bad input.
    assert given is None or budget is not None, "a conversation index stands for a budget's"
    index = given or index_of(conversation)
    # Asked once: the replay hands an index in for every one of its thousands of collections.
    if index is None or not index.describes(history):
        assert given is None, "a conversation index given is of the same history"
        layout = turn_layout(history)
        index = None
        if conversation is not None and len(set(layout.message_ids)) == len(history):
            index = _read_as_laid_out(history, layout, conversation)
        if index is None:
            index, covered = _read_by_id(history, layout, conversation, counter, lock_original)
            return index, budget.total_tokens() if budget is not None else covered
    assert budget is not None  # an index is only ever kept for a budget's conversation
    # The conversation's total is its index's; only the small entries outside it are walked.
    outside = sum(
        entry.total_tokens()
        for source, entry in budget.context_entries()
        if source is not InstructionSource.CONVERSATION
    )
    return index, outside + index.total
