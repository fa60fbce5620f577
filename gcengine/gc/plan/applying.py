"""Applying a decision: the history, budget and result a collection leaves."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import compress, filterfalse
from typing import TYPE_CHECKING, Any

from gcengine._fast import construct, entries_made
from gcengine.foreign import ForeignHistory, originals_of
from gcengine.gc.types import (
    GCResult,
    GCTriggerReason,
)
from gcengine.messages import (
    Message,
    MessageKind,
    read_as_originals,
    starts_turn,
)
from gcengine.session import (
    CLOSING_ANSWER_KEY,
    closing_answer_ids,
)
from gcengine.session.cut import Cut
from gcengine.tokens import TokenCounter, count_message, load_counter

if TYPE_CHECKING:
    # Policies sit above the machinery that carries them out: named in signatures only.
    pass


from gcengine.gc.plan.collection import Collection
from gcengine.gc.plan.decision import Decision, notice_message, touched_turns


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
    history, starts = collection.history, collection.layout.starts
    size = len(starts)
    turns = first
    opener = history[starts[first - 1]] if first else None
    for message in inserts:
        if starts_turn(message, opener):
            turns += 1
            opener = message
    in_step = not inserts  # the split so far ends where the old one did
    turn = first
    for lost in [*(t for t in touched if starts[t] in removed), size]:
        while turn < lost:  # these turns keep their first message
            if in_step:
                turns += lost - turn
                turn = lost
                opener = history[starts[turn - 1]]
                break
            head = history[starts[turn]]
            if starts_turn(head, opener):
                turns += 1
                opener = head
            else:
                turns, opener = _split_rest(collection, turn, removed, turns, opener)
            in_step = opener is head
            turn += 1
        if turn == size:
            break
        if turn not in taken_whole:  # a turn with nothing left has nothing to split
            turns, opener = _split_rest(collection, turn, removed, turns, opener)
        in_step = opener is history[starts[turn]]
        turn += 1
    return turns


def _foreign_turns_after(
    collection: Collection, history: ForeignHistory, at: int, inserts: int, removed: set[int]
) -> int:
    """``_turns_after`` for a foreign history, from its layout, reading no message: its
    messages are conversation carrying no turn, so one of them starts a turn of the new
    history where it starts one of the old (a user message that is no tool result, or the
    first), where it comes first, and right after what the collection inserted at ``at`` (a
    summary or notice starts a turn of its own, and so does what follows one)."""
    starts = collection.layout.starts
    turns = inserts + len(starts) - len(removed.intersection(starts))
    size = len(history)
    heads = {next(filterfalse(removed.__contains__, range(at if inserts else 0, size)), None)}
    heads.add(next(filterfalse(removed.__contains__, range(size)), None))
    turn_of = collection.layout.turn_of
    return turns + sum(1 for p in heads if p is not None and starts[turn_of(p)] != p)


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
    collection: Collection, touched: Sequence[int], removed: set[int], taken_whole: set[int]
) -> dict[int, Message]:
    """The closing answers of the touched turns that stay while messages before them go,
    by position, marked as closing answers (``CLOSING_ANSWER_KEY``): their policy must
    outlive the tool work that told it, or the next run of the same policy would take them.
    ``taken_whole``: the turns a whole-turn unit took, passed over unread."""
    if not touched:
        return {}
    history = collection.history
    flags = collection.figures.closing  # the builder's: no message read to find them
    if flags is None:
        marked = _closing_answers_read(collection, touched, removed, taken_whole)
    else:
        # One pass over the flags from the first touched turn to the end of the last: a
        # closing answer of a turn taken whole is among the positions removed, so only those
        # of turns not touched, when there are any between, need their turn looked up.
        start, end = collection.layout.starts[touched[0]], collection.layout.span(touched[-1])[1]
        flagged: Iterable[int] = compress(range(start, end), flags[start:end])
        if len(touched) != touched[-1] - touched[0] + 1:
            touched_set, turn_of = set(touched), collection.layout.turn_of
            flagged = (p for p in flagged if turn_of(p) in touched_set)
        marked = [
            p
            for p in flagged
            if p not in removed and history[p].metadata.get(CLOSING_ANSWER_KEY) is not True
        ]
    # Copies without pydantic's cost, made in one loop: every field the message's, the mark added.
    originals = list(map(history.__getitem__, marked))
    copies = entries_made(
        Message,
        [
            {**message.__dict__, "metadata": {**message.metadata, CLOSING_ANSWER_KEY: True}}
            for message in originals
        ],
    )
    read_as_originals(copies, originals)
    return dict(zip(marked, copies, strict=True))


def _closing_answers_read(
    collection: Collection, touched: Sequence[int], removed: set[int], taken_whole: set[int]
) -> list[int]:
    """The positions ``_closing_answers_kept`` marks, found by reading the touched turns'
    messages (an index the builder did not make flags no closing answer)."""
    marked: list[int] = []
    history, span = collection.history, collection.layout.span
    for turn in touched:
        if turn in taken_whole:
            continue
        start, end = span(turn)
        if removed.issuperset(range(start, end)):  # a turn taken whole keeps nothing
            continue
        closing = closing_answer_ids(history[start:end])
        for position in range(start, end) if closing else ():
            message = history[position]
            if (
                message.message_id in closing
                and position not in removed
                and message.metadata.get(CLOSING_ANSWER_KEY) is not True
            ):
                marked.append(position)
    return marked


def apply(
    collection: Collection,
    decision: Decision,
    *,
    plugin_name: str,
    reason: GCTriggerReason,
    counter: TokenCounter | None,
    notification: str | None = None,
    write_notice: bool = True,
    at_top: bool = False,
) -> tuple[list[Message], GCResult]:
    """Build the new history and the result; ``notification`` goes into the history as a
    notice when ``write_notice`` (a no-op notice is only reported: it would grow the context).
    ``at_top``: the notice, then the summary, go first in the history, where JAATO's plugins
    put them (JAATO's rules)."""
    removed = decision.removed_positions
    history, layout = collection.history, collection.layout
    inserts = [m for m in (decision.inserted,) if m is not None]
    if notification is not None and write_notice:
        inserts.append(notice_message(collection, decision, notification))
    if at_top:
        inserts.reverse()
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
    taken_whole = decision.turns_taken_whole()
    # The new history is cut from the objects the history stands for: a foreign history's
    # are the framework's own, kept as they are (a closing answer too: its policy is the
    # framework's budget's, so no marked copy of it is made).
    source = originals_of(history)
    if source is history:
        # The kept messages of the touched turns, the marked copies of closing answers in place.
        window = history[start:end]  # a list's slice is a new list: no second copy made
        touched_messages = window if isinstance(window, list) else list(window)
        closing = _closing_answers_kept(collection, touched, removed, taken_whole)
        for position, copy in closing.items():
            touched_messages[position - start] = copy
        kept = list(compress(touched_messages, keep))
    else:
        kept = list(compress(source[start:end], keep))
    if at_top:
        new_history = [*inserts, *source[:start], *kept, *source[end:]]
        first = 0
    else:
        new_history = [*source[:start], *inserts, *kept, *source[end:]]
    if source is history and touched and not inserts:
        collection.cut = Cut(collection.figures, start, end, bytes(keep), frozenset(touched))
    counter = counter or load_counter()
    added = sum(
        count_message(m, counter)
        for m in inserts
        if m.kind is not MessageKind.CHAT and not collection.figures.covers(m.message_id)
    )
    removal_list = decision.removal_items()
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
            "turns_after": (
                _foreign_turns_after(
                    collection, history, 0 if at_top else start, len(inserts), removed
                )
                if isinstance(history, ForeignHistory)
                else _turns_after(collection, first, touched, inserts, removed, taken_whole)
            ),
            "protected_turns": sorted(
                index for p in collection.protected if (index := layout.indices[p]) is not None
            ),
            **decision.details,
            **_agent_summaries_taken(collection, decision),
        },
        error=None,
        removal_list=removal_list,
    )
    return new_history, result


def _agent_summaries_taken(collection: Collection, decision: Decision) -> dict[str, Any]:
    """What a run says when it takes an agent's own compaction summary (only ever under
    pressure): which, and whether into its new summary or for good."""
    starts = collection.layout.starts
    taken = [
        collection.ids[starts[p]]
        for p in sorted(collection.agent_summaries)
        if starts[p] in decision.removed_positions
    ]
    if not taken:
        return {}
    percent = collection.tokens_before * 100 / max(collection.context_limit, 1)
    where = (
        "folded into the new summary"
        if decision.inserted is not None
        else "removed without a summary of it"
    )
    return {
        "agent_summaries_taken": taken,
        "agent_summary_note": (
            f"usage was {percent:.0f}%, at or above the pressure threshold "
            f"({collection.config.pressure_percent:g}%), so the agent's own compaction summary "
            f"was {where}"
        ),
    }


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
