"""A history's conversation laid out flat (``ConversationIndex``), made from its messages or
from the index of another history it shares turns with (``index_conversation``)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import compress, count, repeat
from operator import is_, is_not, itemgetter
from typing import Any

from gcengine._fast import Revision
from gcengine.budget import (
    GCPolicy,
)
from gcengine.conversation import (
    ConversationIndex,
    Exchange,
    ExchangeGroup,
    Figure,
    FigureBasis,
    TrafficMember,
    turn_exchange_figures,
    turn_exchanges,
)
from gcengine.messages import (
    Message,
    TurnLayout,
    read_under,
    relaid_out,
    tool_traffic,
    turn_layout,
)
from gcengine.session.cut import Cut, cut_plan
from gcengine.session.figures import (
    closing_answer_ids,
    counted_figures,
    message_figure,
    message_policy,
    original_request,
    turn_time,
)
from gcengine.tokens import (
    TokenCounter,
)

_new_tuple = tuple.__new__
"""Makes a named tuple of its fields without the class's ``__new__`` (a Python function)."""

Copied = list[tuple[int, int, int]]
"""Runs of turns copied from another index: ``(first turn, end turn, its first turn there)``."""


def index_conversation(
    history: Sequence[Message],
    counter: TokenCounter,
    *,
    recorded_figures: Mapping[str, int] | None = None,
    clarifications: frozenset[str] = frozenset(),
    created_base: float = 0.0,
    figure: Figure | None = None,
    reuse: ConversationIndex | None = None,
    exchange_figures: bool = True,
    revision: Revision | None = None,
    taken: dict[int, Message] | None = None,
    cut: Cut | None = None,
    extends: bool = False,
) -> tuple[ConversationIndex, Copied]:
    """The conversation of a history laid out flat, without building its budget tree, and
    the runs of its turns copied unchanged from ``reuse``.

    Each message's figure is ``message_figure`` with ``counter`` and ``recorded_figures``, or
    what ``figure`` gives: a replay, which lays out windows of the same messages at every
    collection, passes one that works each out once. ``clarifications`` are the messages the
    file recorded as clarifications (``recorded_clarifications``): preservable.

    ``reuse`` is an index this function made, with the same arguments, for another history: a
    shorter one this history extends, or the history a collection started from. Its figures
    stand in for working out those of the messages it holds, and every uploaded turn both
    histories hold alike (the same messages under the same stable index, with the same
    original request) is copied from it, moved to where it stands now; only the other turns
    are read: the few a collection touched, or the turns added since. Turns copied are found
    run by run (see ``_copied_runs``), so what a collection left alone costs next to nothing.

    Every turn's tool exchanges are recorded, with their figures (``exchange_figures``: a
    collection taking thousands of them then only reads them) or as positions only, whose
    figures a collection works out for the few it takes (a replay's small collections).

    The messages read count their edits against ``revision`` (a new one by default; the
    budget builder's is its tree's), unless they count them against one already; the index
    holds while none of those revisions moves on (``ConversationIndex.unedited``).

    ``taken``, when given, is filled with the messages of ``reuse`` whose figures the turns
    read took over, by position here: the message itself, or the copy of it a collection
    marked (the same id, role, kind and parts). The budget builder takes those messages'
    leaves over from ``reuse``'s tree rather than making them again.

    ``cut``, when given, is how a collection made ``history`` from ``reuse``'s (``Cut``): the
    layout, the turns copied and where each message was are then read off ``reuse`` by
    position (``cut_plan``) rather than found by comparing the two histories.

    ``extends`` says that ``history`` is ``reuse``'s history, the very same messages, with
    messages appended (a replay's window grown since its last collection): every turn of
    ``reuse`` but its last, and that one too when nothing joined it, is then copied whole
    without comparing the two histories message by message (``_grown_runs``).
    """
    recorded = recorded_figures or {}
    basis: FigureBasis = (counter.name, recorded, clarifications)
    messages = list(history)
    if reuse is not None and not reuse.unedited():
        reuse = None  # what it says of its messages no longer holds
    if figure is None and reuse is None:
        figure = counted_figures(messages, counter, recorded)
    elif figure is None:

        def figure(message: Message) -> tuple[int, str]:
            return message_figure(message, counter, recorded)

    plan = cut_plan(reuse, len(messages), cut) if cut is not None and reuse is not None else None
    grown_from = _grown_from(reuse, messages) if extends and plan is None else None
    layout = (
        plan.layout
        if plan is not None
        else relaid_out(messages, reuse.messages, reuse.layout, same_start=grown_from)
        if reuse is not None
        else turn_layout(messages)
    )
    request = original_request(messages)
    original = messages[request].message_id if request is not None else None
    old = (
        reuse
        if reuse is not None
        and _can_copy_turns(reuse, basis, original, created_base, exchange_figures)
        else None
    )
    mapped: Sequence[int | None]
    grown = _grown_runs(old, layout) if grown_from is not None and old is not None else None
    if old is not None and plan is not None:
        copied, mapped = plan.copied, plan.mapped
    elif grown is not None:
        copied, mapped = grown
    elif old is not None:
        copied, mapped = _copied_runs(old, messages, layout)
    else:
        copied, mapped = [], []
        if reuse is not None:
            figure = reuse.reusing(basis, figure)
    tokens: list[int] = []
    counted_by: list[str] = []
    policies: list[GCPolicy] = []
    created: list[float] = []
    closing_flags = bytearray()
    revisions: dict[Revision, int] = {}
    messages_revision = revision or Revision()
    exchanges: list[Exchange] = []
    groups: list[ExchangeGroup] = []
    starts, size = layout.starts, len(messages)
    # Where each message was in ``old``'s history is read off the cut, when it says.
    by_position = plan if plan is not None and old is not None else None
    old_messages, old_tokens, old_counted_by = (
        (old.messages, old.tokens, old.counted_by or []) if old is not None else ([], [], [])
    )

    def read(first: int, end: int) -> None:
        """Lay out turns ``first`` to ``end`` from their messages; the figures of messages the
        same turn of ``old`` holds are taken from it (a turn a collection took a part of)."""
        if first >= end:
            return
        last = starts[end] if end < len(starts) else size
        read_under(messages[starts[first] : last], messages_revision, revisions)
        if by_position is not None:
            # Every message was in ``old``: its figure is taken over, for all turns at once.
            begin = starts[first]
            was = by_position.origins(begin, last)
            tokens.extend([old_tokens[p] for p in was])
            counted_by.extend([old_counted_by[p] for p in was])
            if taken is not None:
                taken.update(zip(range(begin, last), [old_messages[p] for p in was], strict=True))
        for turn in range(first, end):
            start = starts[turn]
            stop = starts[turn + 1] if turn + 1 < len(starts) else size
            turn_messages = messages[start:stop]
            closing = closing_answer_ids(turn_messages)
            closing_flags.extend([m.message_id in closing for m in turn_messages])
            clock, width = turn_time(layout.indices, turn)
            step = width / (stop - start)
            if by_position is None:
                read_figures(turn_messages, start, mapped[turn] if mapped else None)
            policies.extend(
                [message_policy(m, original, closing, clarifications) for m in turn_messages]
            )
            created.extend([created_base + clock + offset * step for offset in range(stop - start)])
            traffic: list[TrafficMember] = [
                (start + offset, *made)
                for offset, made in enumerate(map(tool_traffic, turn_messages))
                if made is not None
            ]
            if traffic:
                found = turn_exchanges(traffic)
                if exchange_figures:
                    exchanges.extend(
                        turn_exchange_figures(
                            turn, found, messages, layout, tokens, policies, created
                        )
                    )
                else:
                    groups.extend([(turn, positions) for positions in found])

    def read_figures(turn: list[Message], start: int, old_turn: int | None) -> None:
        """The figures of a turn's messages, at ``start``: those the same turn of ``old``
        holds (``old_turn``), the very message or a marked copy, taken from it."""
        known = _old_positions(old, old_turn) if old_turn is not None else {}
        for offset, message in enumerate(turn):
            was = known.get(id(message)) if known else None
            if was is None or old_messages[was] is not message:
                was = _copy_in(old_messages, known, message) if known else None
            if was is None:
                message_tokens, made_by = figure(message)
            else:
                message_tokens, made_by = old_tokens[was], old_counted_by[was]
                if taken is not None:
                    taken[start + offset] = old_messages[was]
            tokens.append(message_tokens)
            counted_by.append(made_by)

    done = 0
    for first, end, old_first in copied:
        assert old is not None
        read(done, first)
        done = end
        old_layout = old.layout
        old_start = old_layout.starts[old_first]
        old_stop = old_layout.span(old_first + end - first - 1)[1]
        tokens += old.tokens[old_start:old_stop]
        counted_by += (old.counted_by or ())[old_start:old_stop]
        policies += old.policies[old_start:old_stop]
        created += old.created_at[old_start:old_stop]
        assert old.closing is not None  # the builder's own index, as ``_can_copy_turns`` checks
        closing_flags += old.closing[old_start:old_stop]
        for old_revision, edits in old.revisions.items():
            revisions.setdefault(old_revision, edits)
        shift, turn_shift = starts[first] - old_start, first - old_first
        if not shift and not turn_shift:
            # Where nothing moved (a window grown at its end) the exchanges stand as they
            # were: nothing changes an index's exchanges once it is made, so they are shared.
            if exchange_figures:
                exchanges += _in_turns(old.exchanges or [], old_first, end)
            else:
                groups += _in_turns(old.exchange_groups or [], old_first, end)
        elif exchange_figures:
            # Made as tuples of their fields, unpacked by name and without a call of the
            # class: ``_replace`` costs several times as much, and a run copies every exchange
            # of the turns it left alone.
            exchanges += [
                _new_tuple(
                    Exchange,
                    (turn + turn_shift, [p + shift for p in positions], key, ids, cost, policy, at),
                )
                for turn, positions, key, ids, cost, policy, at in _in_turns(
                    old.exchanges or [], old_first, old_first + end - first
                )
            ]
        else:
            groups += [
                (turn + turn_shift, [p + shift for p in positions])
                for turn, positions in _in_turns(
                    old.exchange_groups or [], old_first, old_first + end - first
                )
            ]
    read(done, len(starts))
    index = ConversationIndex(
        messages,
        layout,
        tokens,
        policies,
        created,
        counted_by,
        basis,
        exchanges=exchanges if exchange_figures else None,
        exchange_groups=None if exchange_figures else groups,
        original=original,
        created_base=created_base,
        closing=closing_flags,
        revisions=revisions,
    )
    return index, copied


def _old_positions(old: ConversationIndex | None, turn: int) -> dict[int, int]:
    """Where the messages of ``old``'s turn ``turn`` are in ``old``, by message identity."""
    assert old is not None
    start, stop = old.layout.span(turn)
    messages = old.messages
    return {id(messages[p]): p for p in range(start, stop)}


def _copy_in(old: Sequence[Message], known: dict[int, int], message: Message) -> int | None:
    """Where the message ``known`` holds that ``message`` is a copy of is in ``old``, a copy
    with other metadata only (a closing answer a collection kept and marked as one): the same
    id, role and kind, and the very same parts, so the same figure. None for none."""
    for position in known.values():
        was = old[position]
        if (
            was.parts is message.parts
            and was.message_id == message.message_id
            and was.role is message.role
            and was.kind is message.kind
        ):
            return position
    return None


def _in_turns[T: tuple[Any, ...]](found: Sequence[T], first: int, end: int) -> Sequence[T]:
    """The exchanges (or groups) of turns ``first`` to ``end``: they are in turn order."""
    key = itemgetter(0)
    return found[bisect_left(found, first, key=key) : bisect_left(found, end, key=key)]


def _can_copy_turns(
    old: ConversationIndex,
    basis: FigureBasis,
    original: str | None,
    created_base: float,
    exchange_figures: bool,
) -> bool:
    """Whether ``old`` holds what copying its turns needs: the builder's figures on the same
    basis, the same original request (it decides a policy) and the same start of the session
    (times follow from it), exchanges recorded the same way."""
    recorded = old.exchanges if exchange_figures else old.exchange_groups
    return (
        old.counted_by is not None
        and old.closing is not None
        and old.basis == basis
        and old.original == original
        and old.created_base == created_base
        and recorded is not None
    )


def _copied_runs(
    old: ConversationIndex, messages: list[Message], layout: TurnLayout
) -> tuple[Copied, list[int | None]]:
    """The runs of uploaded turns ``messages`` holds as ``old``'s history does, and for every
    turn the turn of ``old`` with its stable index (None for none).

    A turn is copied when it holds the same messages (equal, and most often the very same
    objects) under the same stable index: its figures, policies and times depend only on its
    own messages, its index and the original request. Turns whose stable indices follow each
    other in both histories are compared as one span of messages; where the span differs, the
    turn holding the first difference is left out and the rest compared again. A collection
    changes a few places of a long history, so that is a few comparisons of long spans.
    """
    old_layout, old_messages = old.layout, old.messages
    old_turn_of: dict[int | None, int] = dict(zip(old_layout.indices, count(), strict=False))
    mapped: list[int | None] = list(map(old_turn_of.get, layout.indices))
    if None in old_turn_of:  # inserted turns have no stable index: nothing to map them to
        for turn in compress(count(), map(is_, layout.indices, repeat(None))):
            mapped[turn] = None
    size, old_size = len(messages), len(old_messages)
    starts, old_starts = layout.starts, old_layout.starts

    def stop(turn: int) -> int:
        return starts[turn + 1] if turn + 1 < len(starts) else size

    def old_stop(turn: int) -> int:
        return old_starts[turn + 1] if turn + 1 < len(old_starts) else old_size

    def same(first: int, end: int, old_first: int) -> bool:
        """Whether turns ``first`` to ``end`` are old turns ``old_first`` on: the same messages
        in spans of the same length, which then split into turns alike (both begin a turn, and
        whether a message starts one depends only on it and the turn's first, ``starts_turn``)."""
        if end <= first:
            return True
        start, old_start = starts[first], old_starts[old_first]
        span, old_end = stop(end - 1) - start, old_stop(old_first + end - first - 1)
        return old_end - old_start == span and (
            _first_unequal(messages, start, old_messages, old_start, span) == span
        )

    def first_different(first: int, end: int, old_first: int) -> int | None:
        """The first of turns ``first`` to ``end`` that is not old turn ``old_first`` on
        (None when all are): the turn holding the first message that differs, or the one before
        it when that message begins a turn here and not there."""
        if same(first, end, old_first):
            return None
        start, old_start = starts[first], old_starts[old_first]
        old_span = old_stop(old_first + end - first - 1) - old_start
        span = stop(end - 1) - start
        offset = _first_unequal(messages, start, old_messages, old_start, min(span, old_span))
        turn = layout.turn_of(start + offset) if offset < span else end - 1
        turn = min(max(turn, first), end - 1)
        while not same(first, turn, old_first):
            turn -= 1
        return turn

    runs: Copied = []
    turn, turns = 0, len(mapped)
    while turn < turns:
        old_first = mapped[turn]
        if old_first is None:
            turn += 1
            continue
        end = turn + 1
        while end < turns and mapped[end] == old_first + end - turn:
            end += 1
        first = turn
        while first < end:
            # A turn that lost or gained messages (most of those a collection took a part
            # of) differs by its length alone: no search needed to find it.
            there = old_first + first - turn
            if stop(first) - starts[first] != old_stop(there) - old_starts[there]:
                first += 1
                continue
            different = first_different(first, end, there)
            if different is None:
                runs.append((first, end, there))
                break
            if different > first:
                runs.append((first, different, there))
            first = different + 1
        turn = end
    return runs, mapped


def _grown_from(reuse: ConversationIndex | None, messages: list[Message]) -> int | None:
    """How many messages ``messages`` starts with as ``reuse``'s history, when the caller says
    it is that history grown at its end (``extends``): all of ``reuse``'s. Only its ends are
    checked (a replay's window is never compared whole); None when they differ."""
    if reuse is None:
        return None
    old = reuse.messages
    if len(messages) < len(old) or (
        old and (messages[0] is not old[0] or messages[len(old) - 1] is not old[-1])
    ):
        return None
    return len(old)


def _grown_runs(
    old: ConversationIndex, layout: TurnLayout
) -> tuple[Copied, list[int | None]] | None:
    """``_copied_runs`` for a history that is ``old``'s with messages appended (laid out in
    ``layout``): the turns both lay out alike (the same starts and stable indices; splitting
    is causal, so all but the last of ``old``'s, and that one too when it ended where ``old``
    did) are the very same messages, copied as one run; the turns after are read, each mapped
    to the turn of ``old`` with its stable index, if any, as ``_copied_runs`` maps them."""
    old_layout = old.layout
    old_size, turns = len(old.messages), len(old_layout)
    whole = turns
    if turns and (len(layout) == turns or layout.starts[turns] != old_size):
        whole -= 1  # the last turn of ``old`` may have grown: it is read again
    if (
        layout.starts[:whole] != old_layout.starts[:whole]
        or layout.indices[:whole] != old_layout.indices[:whole]
    ):
        return None
    old_turn_of: dict[int | None, int] = {
        index: turn
        for turn, index in zip(range(whole, turns), old_layout.indices[whole:], strict=True)
        if index is not None
    }
    mapped: list[int | None] = [*range(whole), *map(old_turn_of.get, layout.indices[whole:])]
    return ([(0, whole, 0)] if whole else []), mapped


def _first_unequal(
    new: Sequence[Message], new_start: int, old: Sequence[Message], old_start: int, size: int
) -> int:
    """How many messages from ``new_start`` and ``old_start`` are equal (most often the very
    same objects), compared in chunks that double: what it costs follows the answer, not the
    length of the histories. Messages are compared by identity first, then by id: comparing
    two models field by field (pydantic's ``==``) cost more than the rest of the search, and
    messages with different ids are never equal."""
    done, chunk = 0, 8
    while done < size:
        end = min(size, done + chunk)
        others = compress(
            count(done),
            map(
                is_not,
                new[new_start + done : new_start + end],
                old[old_start + done : old_start + end],
            ),
        )
        for offset in others:
            one, other = new[new_start + offset], old[old_start + offset]
            if one.message_id != other.message_id or one != other:
                return offset
        done, chunk = end, chunk * 2
    return size
