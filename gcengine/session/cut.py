"""A history cut from another by a collection (``Cut``), and what the index of the history
before says of it by position (``cut_plan``): its layout, the turns it copies and where each
of its messages was. A budget after a run is then cut from the index before instead of laid
out again from the messages."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import compress, groupby, repeat

from gcengine.conversation import ConversationIndex
from gcengine.messages import MessageKind, TurnLayout


@dataclass(frozen=True, eq=False)
class Cut:
    """How a collection made a history from the one before, nothing inserted: of positions
    ``start`` to ``end`` of the one before (a run of whole turns), those ``keep`` flags (1 for
    kept) stay, in order; every other message stays where it was, less what went before it.
    A message kept is the very one, or (in one of the ``touched`` turns, by position before)
    a copy with other metadata only: the same id, role, kind, turn and parts. ``index`` is the
    index of the history before that the collection read: the positions are its."""

    index: ConversationIndex
    start: int
    end: int
    keep: bytes
    touched: frozenset[int]


@dataclass(frozen=True)
class CutPlan:
    """What ``index_conversation`` otherwise finds by comparing the two histories: the layout
    of the history after, the runs of turns it copies from the index before
    (``index_conversation``'s ``Copied``), the turn before of each of its turns, and the
    position before of each of its messages (``origins``): those of the cut window's kept
    messages are listed (``kept``, from ``start``), the others follow from their position
    after (those after the window are ``removed`` further on before)."""

    layout: TurnLayout
    copied: list[tuple[int, int, int]]
    mapped: list[int]
    start: int
    kept: list[int]
    removed: int

    def origins(self, first: int, end: int) -> list[int]:
        """The positions before of messages ``first`` to ``end`` after: only the few a
        reader of the turns a collection touched asks for are listed."""
        start, window_end = self.start, self.start + len(self.kept)
        low = min(max(first, start), window_end) - start
        high = max(min(end, window_end), start) - start
        return [
            *range(first, min(end, start)),
            *self.kept[low:high],
            *range(max(first, window_end) + self.removed, max(end, window_end) + self.removed),
        ]


def cut_plan(old: ConversationIndex, size: int, cut: Cut) -> CutPlan | None:
    """The plan of the history of ``size`` messages ``cut`` made from ``old``'s, or None when
    the index cannot tell it (it is then laid out from its messages): ``old`` must be the
    very index the collection read.

    Only for a history laid out by its recorded turns (``TurnLayout.by_turn_index``): there a
    turn is a run of messages of one stable index, so the turns after are the turns before
    that keep a message, unless two of them with the same index come together (then None).
    """
    layout, starts = old.layout, old.layout.starts
    old_size, turns = len(old.messages), len(starts)
    if cut.index is not old or not layout.by_turn_index:
        return None
    if size != old_size - cut.keep.count(0):
        return None
    first = layout.turn_starting_at(cut.start)
    last = layout.turn_starting_at(cut.end)
    if first is None or last is None or len(cut.keep) != cut.end - cut.start:
        return None
    indices, keep = layout.indices, cut.keep
    new_starts, new_indices = starts[:first], indices[:first]
    mapped = list(range(first))
    runs: list[tuple[int, int, int]] = []  # the turns after holding their turns before as they were
    _add_run(runs, 0, first, 0)
    position = cut.start
    # Only the turns that keep a message are visited, by the turns of the messages kept (a
    # collection takes most of the window's turns whole): how many each keeps is the length
    # of its run of them.
    kept_positions = list(compress(range(cut.start, cut.end), keep))
    kept_turns = map(bisect_right, repeat(starts), kept_positions)
    for after_start, run in groupby(kept_turns):
        turn = after_start - 1
        kept = len(list(run))
        stop = starts[after_start] if after_start < turns else old_size
        if new_indices and new_indices[-1] == indices[turn]:
            return None  # two turns of one index now together: one turn after
        if turn not in cut.touched and kept == stop - starts[turn]:
            _add_run(runs, len(new_starts), len(new_starts) + 1, turn)
        new_starts.append(position)
        new_indices.append(indices[turn])
        mapped.append(turn)
        position += kept
    if last < turns and new_indices and new_indices[-1] == indices[last]:
        return None
    shift, after = position - cut.end, len(new_starts)
    _add_run(runs, after, after + turns - last, last)
    new_starts += [start + shift for start in starts[last:]]
    new_indices += indices[last:]
    mapped += range(last, turns)
    ids = layout.message_ids
    new_layout = TurnLayout(
        [*ids[: cut.start], *compress(ids[cut.start : cut.end], keep), *ids[cut.end :]],
        new_starts,
        new_indices,
        [MessageKind.CHAT] * len(new_starts),
        by_turn_index=True,
    )
    return CutPlan(new_layout, runs, mapped, cut.start, kept_positions, cut.end - position)


def _add_run(runs: list[tuple[int, int, int]], first: int, end: int, old_first: int) -> None:
    """Add turns ``first`` to ``end`` after, turns ``old_first`` on before, to ``runs``: to the
    last run when they follow it in both histories."""
    if first >= end:
        return
    if runs:
        run_first, run_end, run_old = runs[-1]
        if run_end == first and run_old + first - run_first == old_first:
            runs[-1] = (run_first, end, run_old)
            return
    runs.append((first, end, old_first))
