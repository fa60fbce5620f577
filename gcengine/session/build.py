"""The budget the engine builds for a session (``build_budget``, ``rebuild_budget``).

Budget layout built from a history::

    conversation (PARTIAL)
      turn_<index>               one container per turn, keyed by its stable index
        <message_id>             one leaf per message, holding that message's id
    system                       one LOCKED child per system instruction the file carried,
      unseen_overhead            and one for the prompt the file does not hold, when measured
    thinking                     the reasoning tokens the file recorded (not in the context)

Each message's figure and policy are ``gcengine.session.figures``'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gcengine._fast import REVISION_KEY, Revision, construct, entry_maker, set_fresh
from gcengine.budget import (
    DEFAULT_SOURCE_POLICIES,
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    SourceEntry,
)
from gcengine.conversation import (
    ConversationIndex,
    Figure,
    index_of,
    turn_key_of,
)
from gcengine.errors import CompactionNotFoundError
from gcengine.messages import (
    Message,
    MessageKind,
    Role,
    turn_number,
)
from gcengine.session.cut import Cut
from gcengine.session.figures import (
    RECORDED,
    recorded_clarifications,
    recorded_message_figures,
    role_label,
)
from gcengine.session.index import Copied, index_conversation
from gcengine.session.model import ObservedCompaction, Session, SystemInstruction, iso_to_epoch
from gcengine.tokens import (
    TokenCounter,
    counter_by_name,
    load_counter,
)

UNSEEN_OVERHEAD_KEY = "unseen_overhead"
UNSEEN_OVERHEAD_LABEL = (
    "Not in the file: system prompt, tool definitions, injected context "
    "(the recorded prompt of the context's first call less the messages it saw)"
)


def build_conversation(
    history: Sequence[Message],
    counter: TokenCounter,
    *,
    recorded_figures: Mapping[str, int] | None = None,
    clarifications: frozenset[str] = frozenset(),
    created_base: float = 0.0,
    reuse: SourceEntry | None = None,
    figure: Figure | None = None,
    cut: Cut | None = None,
) -> SourceEntry:
    """The CONVERSATION entry for a history: one container per turn, one leaf per message.

    The arguments are ``index_conversation``'s; ``reuse`` is an entry this function made (with
    the same arguments) for another history, whose index is reused, and whose tree gives the
    turns the two histories hold alike: the very same entries, so a budget after a collection
    costs what the collection changed. The entry keeps its index, which a collection reads
    instead of the tree, until an entry of the tree is edited: every entry of the tree, and
    every message read, counts its edits against one ``Revision``, the one of ``reuse`` when
    entries are taken from it. ``cut`` is how a collection made the history from ``reuse``'s
    (``index_conversation``'s).
    """
    known = index_of(reuse)
    revision = (reuse.revision() if reuse is not None and known is not None else None) or Revision()
    taken: dict[int, Message] = {}
    index, copied = index_conversation(
        history,
        counter,
        recorded_figures=recorded_figures,
        clarifications=clarifications,
        created_base=created_base,
        reuse=known,
        figure=figure,
        revision=revision,
        taken=taken,
        cut=cut,
    )
    kept: Mapping[str, SourceEntry] = {}
    if reuse is not None and known is not None and len(reuse.children) == len(known.layout):
        kept = reuse.children  # one entry per turn of ``known``, in order
    conversation = conversation_tree(
        index,
        created_base,
        copied if kept else [],
        kept,
        revision,
        _Kept(kept, taken) if kept and taken else None,
    )
    conversation.keep_index(index)
    return conversation


def conversation_tree(
    index: ConversationIndex,
    created_base: float = 0.0,
    copied: Copied | None = None,
    kept: Mapping[str, SourceEntry] | None = None,
    revision: Revision | None = None,
    taken: _Kept | None = None,
) -> SourceEntry:
    """The CONVERSATION entry of an index: one container per turn and one leaf per message,
    except the runs of turns ``copied`` from another index, whose entries are that index's
    tree's (``kept``: its turns by key, in order). Every entry made is stamped with
    ``revision`` (a new one by default): the kept ones must have it already.

    ``taken`` is what was taken over from that other index's messages (``_Kept``): in a
    turn a collection took a part of, their leaves are the ones its tree has, with the
    policy and time they have now."""
    revision = revision or Revision()
    children: dict[str, SourceEntry] = {}
    done = 0
    # Keys and entries in two lists, sliced for each run: a list of (key, entry) pairs of
    # every turn cost a new pair per turn.
    keys, entries = (list(kept), list(kept.values())) if copied and kept else ([], [])
    for first, end, old_first in copied or ():
        _turn_entries(index, done, first, children, revision, taken)
        last = old_first + end - first
        children.update(zip(keys[old_first:last], entries[old_first:last], strict=True))
        done = end
    _turn_entries(index, done, len(index.layout), children, revision, taken)
    conversation = construct(
        SourceEntry,
        source=InstructionSource.CONVERSATION,
        tokens=index.total,
        gc_policy=DEFAULT_SOURCE_POLICIES[InstructionSource.CONVERSATION],
        label="Conversation",
        children=children,
        metadata={},
        created_at=created_base,
        message_ids=[],
    )
    conversation.stamp(revision)
    return conversation


def turn_name(index: int | None, kind: MessageKind) -> str:
    """A turn's label in the budget tree: JAATO's ``turn_1`` for the turn with stable index 0,
    the kind (``summary``, ``notice``) for one a collector inserted."""
    return f"turn_{turn_number(index)}" if index is not None else kind.value


def _turn_entries(
    index: ConversationIndex,
    first: int,
    end: int,
    children: dict[str, SourceEntry],
    revision: Revision,
    old: _Kept | None = None,
) -> None:
    """Add the entries of turns ``first`` to ``end`` of the index to ``children``, each
    stamped with ``revision``; the leaves of messages ``old`` took over are its tree's.

    A conversation has an entry per message, so this is the budget builder's inner loop: it
    reads the index's flat lists by position and builds each entry straight from its fields
    (``entry_maker``), with nothing worked out twice (labels, keys, spans).
    """
    messages, layout = index.messages, index.layout
    tokens, policies, created, counted_by = (
        index.tokens,
        index.policies,
        index.created_at,
        index.counted_by,
    )
    assert counted_by is not None, "only an index the builder made says what made each figure"
    ids, starts, indices, kinds = layout.message_ids, layout.starts, layout.indices, layout.kinds
    size, turns = len(messages), len(starts)
    entry = entry_maker(SourceEntry)
    conversation = InstructionSource.CONVERSATION
    taken: Mapping[int, Message] = old.taken if old is not None else {}
    for turn in range(first, end):
        start = starts[turn]
        stop = starts[turn + 1] if turn + 1 < turns else size
        turn_index, kind = indices[turn], kinds[turn]
        name = turn_name(turn_index, kind)
        # JAATO's label: ``turn_1`` for the first turn (the key keeps the stable index).
        turn_label = name if turn_index is not None else "inserted"
        key = turn_key_of(turn_index, messages[start])
        leaves: dict[str, SourceEntry] = {}
        old_leaves = old.leaves(key) if old is not None and turn_index is not None else None
        for position in range(start, stop):
            message_id = ids[position]
            if old_leaves is not None and position in taken:
                leaf = old_leaves.get(message_id)
                if leaf is not None:
                    leaves[message_id] = _leaf_now(
                        leaf, policies[position], created[position], revision
                    )
                    continue
            message = messages[position]
            leaves[message_id] = entry(
                {
                    "source": conversation,
                    "tokens": tokens[position],
                    "gc_policy": policies[position],
                    "label": f"{turn_label} {role_label(message)}",
                    "children": {},
                    "metadata": {
                        "counted_by": counted_by[position],
                        "role": _ROLE_VALUES[message.role],
                    },
                    "created_at": created[position],
                    "message_ids": [message_id],
                    REVISION_KEY: revision,
                }
            )
        children[key] = entry(
            {
                "source": conversation,
                "tokens": sum(tokens[start:stop]),
                "gc_policy": GCPolicy.PARTIAL,
                "label": name,
                "children": leaves,
                "metadata": {"turn_index": turn_index, "kind": _KIND_VALUES[kind]},
                "created_at": created[start],
                "message_ids": ids[start:stop],
                REVISION_KEY: revision,
            }
        )


class _Kept:
    """The tree a budget is rebuilt from, as its leaves are taken over: its turns by key, and
    the positions of the messages whose figures the new index took from its index
    (``index_conversation``'s ``taken``)."""

    def __init__(self, turns: Mapping[str, SourceEntry], taken: Mapping[int, Message]) -> None:
        self.turns, self.taken = turns, taken

    def leaves(self, key: str) -> dict[str, SourceEntry] | None:
        """The leaves of the uploaded turn ``key`` by message id, when it names each of its
        messages once (so each leaf is the one of the message its id names)."""
        turn = self.turns.get(key)
        if turn is None or len(turn.children) != len(turn.message_ids):
            return None
        return turn.children


_make_leaf = entry_maker(SourceEntry)


def _leaf_now(
    leaf: SourceEntry, policy: GCPolicy, created_at: float, revision: Revision
) -> SourceEntry:
    """The leaf of a message whose figure was taken over, in a turn that lost other messages:
    its label, figure and metadata are the same (they depend on the message, its turn's
    stable index and its figure), its policy and time may not be (a turn's closing answer and
    its messages' times follow the turn's messages). The very leaf when nothing changed; else
    a new one sharing its metadata and ids, as a copy does (entries are values: neither is
    changed in place)."""
    if (
        leaf.gc_policy is policy
        and leaf.created_at == created_at
        and leaf.__dict__.get(REVISION_KEY) is revision
    ):
        return leaf
    return _make_leaf(
        {
            "source": leaf.source,
            "tokens": leaf.tokens,
            "gc_policy": policy,
            "label": leaf.label,
            "children": {},
            "metadata": leaf.metadata,
            "created_at": created_at,
            "message_ids": leaf.message_ids,
            REVISION_KEY: revision,
        }
    )


_ROLE_VALUES = {role: role.value for role in Role}
_KIND_VALUES = {kind: kind.value for kind in MessageKind}
"""Enum values by member: a dict read costs a fraction of ``.value`` on an inner loop."""


def build_budget(
    history: Sequence[Message],
    counter: TokenCounter | None = None,
    *,
    session_id: str = "",
    agent_id: str = "main",
    context_limit: int,
    system_instructions: Sequence[SystemInstruction] = (),
    recorded_budget: InstructionBudget | None = None,
    thinking_tokens: int | None = None,
    unseen_overhead: int | None = None,
    created_base: float = 0.0,
    reuse: SourceEntry | None = None,
    figure: Figure | None = None,
    cut: Cut | None = None,
) -> InstructionBudget:
    """Build the budget of a history; sources the history cannot tell come from the recording.

    With no history (a bare budget snapshot) the recorded conversation is all there is, so it is
    kept as recorded. ``unseen_overhead`` is the prompt the file does not hold
    (``Session.unseen_overhead``): a locked system entry of its own. ``reuse``, ``figure``
    and ``cut`` are ``build_conversation``'s.
    """
    counter = counter or load_counter()
    budget = InstructionBudget.create_default(
        session_id=session_id, agent_id=agent_id, context_limit=context_limit
    )
    if recorded_budget is not None:
        budget.agent_type = recorded_budget.agent_type
        for source, entry in recorded_budget.entries.items():
            # A history's conversation is built from it below: the recorded one (a tree of
            # every message the file counted) would be copied only to be replaced.
            if not (history and source is InstructionSource.CONVERSATION):
                budget.entries[source] = entry.model_copy(deep=True)
    if system_instructions:
        # The budget is new and nobody holds it yet: filled in place, not edited.
        system = budget.entries[InstructionSource.SYSTEM]
        for position, instruction in enumerate(system_instructions):
            system.children[instruction.key] = construct(
                SourceEntry,
                source=InstructionSource.SYSTEM,
                tokens=counter.count(instruction.text),
                gc_policy=GCPolicy.LOCKED,
                label=instruction.label,
                children={},
                metadata={"counted_by": counter.name},
                created_at=created_base + position / 1000,
                message_ids=[],
            )
        set_fresh(system, "tokens", sum(child.tokens for child in system.children.values()))
    if unseen_overhead:
        system = budget.entries[InstructionSource.SYSTEM]
        system.children[UNSEEN_OVERHEAD_KEY] = construct(
            SourceEntry,
            source=InstructionSource.SYSTEM,
            tokens=unseen_overhead,
            gc_policy=GCPolicy.LOCKED,
            label=UNSEEN_OVERHEAD_LABEL,
            children={},
            metadata={"counted_by": RECORDED},
            created_at=created_base,
            message_ids=[],
        )
        set_fresh(system, "tokens", sum(child.tokens for child in system.children.values()))
    if history or recorded_budget is None or not _has_conversation(recorded_budget):
        budget.entries[InstructionSource.CONVERSATION] = build_conversation(
            history,
            counter,
            recorded_figures=recorded_message_figures(recorded_budget),
            clarifications=recorded_clarifications(recorded_budget),
            created_base=created_base,
            reuse=reuse,
            figure=figure,
            cut=cut,
        )
    if thinking_tokens is not None and not _has_thinking(recorded_budget):
        set_fresh(budget.entries[InstructionSource.THINKING], "tokens", thinking_tokens)
    return budget


def _has_conversation(budget: InstructionBudget) -> bool:
    return InstructionSource.CONVERSATION in budget.entries


def _has_thinking(budget: InstructionBudget | None) -> bool:
    return budget is not None and InstructionSource.THINKING in budget.entries


def rebuild_budget(
    session: Session,
    counter: TokenCounter | None = None,
    *,
    reuse: InstructionBudget | None = None,
    figure: Figure | None = None,
    cut: Cut | None = None,
) -> InstructionBudget:
    """The budget the session's history implies now (after an edit or a collection).

    ``reuse`` is a budget this function made, with the same counter and recording, for a
    session with another history (a shorter one, or the one a collection started from): what
    the two histories share is taken from it rather than worked out again (see
    ``index_conversation``). ``figure`` gives each message's figure where the caller kept
    them (``gcengine.stored``). ``cut``, with ``reuse``, is how the collection that made this
    history from ``reuse``'s cut it (``gcengine.session.cut``): what the two share is then read
    by position. The result is exactly the budget rebuilt from scratch.
    """
    thinking = [t.thinking for t in session.turn_accounting if t.thinking is not None]
    return build_budget(
        session.history,
        counter,
        session_id=session.session_id,
        context_limit=session.context_limit,
        system_instructions=session.system_instructions,
        recorded_budget=session.recorded_budget,
        thinking_tokens=sum(thinking) if thinking else None,
        unseen_overhead=session.unseen_overhead,
        created_base=iso_to_epoch(session.created_at) or 0.0,
        reuse=reuse.get_entry(InstructionSource.CONVERSATION) if reuse is not None else None,
        figure=figure,
        cut=cut,
    )


def history_before(session: Session, compaction: ObservedCompaction | str) -> Session:
    """The session as it stood just before one of its observed compactions (given or named by
    ``compaction_id``): the context the agent compacted, with the compactions, sub-agents and
    recorded usage that came before, and its budget counted with the session's counter.

    A policy replayed on it shows what the policy would have done where the agent compacted.
    Messages keep their ids and stable turn indices. Raises ``CompactionNotFoundError`` for a
    compaction the session does not hold.
    """
    wanted = compaction if isinstance(compaction, str) else compaction.compaction_id
    position = next(
        (i for i, c in enumerate(session.compactions) if c.compaction_id == wanted), None
    )
    if position is None:
        raise CompactionNotFoundError(f"the session has no compaction {wanted!r}")
    chosen = session.compactions[position]
    earlier = session.compactions[:position]
    pool = {m.message_id: m for m in session.history}
    for other in session.compactions:
        pool.update((m.message_id, m) for m in other.replaced)
    context = [pool[mid] for mid in chosen.context_before if mid in pool]
    seen = {m.message_id for m in context}
    seen.update(m.message_id for c in earlier for m in c.replaced)
    usage = [u for u in session.recorded_usage if u.message_id in seen]
    overheads = session.context_overheads
    overhead = overheads[position] if position < len(overheads) else None
    before = session.model_copy(
        update={
            "session_id": f"{session.session_id}@{chosen.compaction_id}",
            "unseen_overhead": overhead if overhead is not None else session.unseen_overhead,
            "context_overheads": overheads[: position + 1],
            "history": context,
            "compactions": earlier,
            "recorded_usage": usage,
            "recorded_prompt_tokens": (
                chosen.tokens_before
                if chosen.tokens_before is not None
                else (usage[-1].prompt_tokens if usage else None)
            ),
            "interrupted_turn": None,
        }
    )
    before.budget = rebuild_budget(before, counter_by_name(session.token_counter))
    return before
