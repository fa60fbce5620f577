"""Segments, references, roots, marking and scores.

The segments of a history and their references are the same under every policy: they are
worked out once per conversation index (``segment_graph``) and kept on it, so a
second analysis of a session, or a policy tried after another, reads none of it again. Roots,
marks and scores depend on the policy and are worked out for each collection (``Plan``).

A *segment* is a removable unit (``gcengine.gc.plan``): a tool exchange (a call with its
results) or a notice, or the rest of a turn (its request and the agent's words), which can go
only with the whole turn. Summaries a collector wrote are segments of their own.

References point from a later segment to an earlier one:

* explicitly: the rest of a turn (its request and the reply that reports the tool work) to the
  tool exchanges of that turn, and a summary to the turns it covers (a call and its results,
  and a reply and the request it answers, are one segment already);
* implicitly: a segment that *names* an anchor (a file, an identifier, an error code) refers to
  the latest earlier segment that *holds* it. A tool exchange holds everything in it, and is a
  snapshot: it names nothing, so a chain of reads of one file never makes the first read
  reachable from the last. The agent's and user's words hold what they are the first to
  mention, and everything they state as a decision; they name all of it. A file named with a
  line (``src/billing/tax.py:38``) refers to the latest read covering that line.

Roots are marked, and whatever they reach is *reachable*. Every score is in [0, 1], with
bounded terms: recency is measured in turns since the segment was last referred to (a half-life
of ``HALF_LIFE_TURNS``), never in seconds, so a day-old session is not all "old".
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from gcengine.budget import GCPolicy, most_protective
from gcengine.conversation import ConversationIndex, turn_key_of
from gcengine.gc.plan import Collection, pinned_turns
from gcengine.gc.segments import SegmentKind
from gcengine.messages import Message, MessageKind, Role
from gcengine.reachability.anchors import (
    FILE,
    FileSpan,
    MessageAnchors,
    basename_key,
    message_anchors,
)
from gcengine.reachability.kinds import IMPORTANCE
from gcengine.session import latest_request, original_request

HALF_LIFE_TURNS = 10
"""Recency halves every this many turns since a segment was last referred to."""
YOUNG_TURNS = 20
"""A segment is young while newer than this many turns and not yet kept by a collection."""
FULL_REFCOUNT = 5
"""References from this many segments count fully in the score."""
AUTO_DELETE_BELOW = 0.2
"""With ``"action": "auto"``, an unreachable segment scoring below this is deleted, not
stashed."""

REPLY, SUMMARY_OF = "reply", "summary"
"""The two explicit references: a turn's reply to the tool work it reports, a summary to a turn
it covers (an implicit reference is the anchor's key)."""

_CODE_TOOLS = ("read", "view", "open", "cat", "edit", "write", "patch", "replace", "create")
_LOG_TOOLS = ("run", "exec", "bash", "shell", "command", "test", "lint", "build", "terminal")


@dataclass(slots=True)
class Segment:
    """One segment: where it is (``turn`` is its turn's position in the history, ``clock``
    the turn's stable index, or the last one before an inserted turn), what it is, what it
    costs, its messages' ids and the oldest one's creation time, what it holds and the files
    its tools worked on."""

    number: int
    segment_id: str
    kind: SegmentKind
    turn: int
    turn_index: int | None
    clock: int
    positions: list[int]
    tokens: int
    policy: GCPolicy
    exchange: bool
    message_ids: list[str]
    created: float
    tools: tuple[str, ...] = ()
    holds: set[str] = field(default_factory=set)
    acted_on: list[FileSpan] = field(default_factory=list)


class Candidate(NamedTuple):
    """Something the sweep may take: one exchange, or what is left of a turn (``turn`` set).
    Candidates sort in the order the sweep takes them: unreachable first, lowest score first,
    an exchange before the turn holding it, oldest first."""

    reachable: bool
    score: float
    whole_turn: bool
    segment: int
    turn: int | None = None


class SegmentGraph:
    """A history's segments and their references: the same under every policy, so worked out
    once per conversation index and kept on it (``segment_graph``).

    ``references[s]`` maps each segment ``s`` refers to onto how (an anchor, ``reply`` or
    ``summary``); ``referrers`` is the reverse; ``refcounts`` leave out the reply of a
    segment's own turn; ``last_touched`` is the clock of the newest segment referring to each
    (its own if none does); ``last_named`` the last segment naming each anchor; ``worked_on``
    the segments whose tools read or changed each file, oldest first.
    """

    def __init__(self, index: ConversationIndex) -> None:
        # The index is not kept here: it keeps the graph, and values form no reference cycles.
        self.anchors = [message_anchors(message) for message in index.messages]
        self.segments = _segments(index, self.anchors)
        self.by_id = {segment.segment_id: segment for segment in self.segments}
        self.by_turn: dict[int, list[int]] = {}
        for segment in self.segments:
            self.by_turn.setdefault(segment.turn, []).append(segment.number)
        self.references, self.last_named, self.worked_on = _references(
            index, self.segments, self.anchors
        )
        self.referrers: list[list[int]] = [[] for _ in self.segments]
        self.refcounts = [0] * len(self.segments)
        self.last_touched = [segment.clock for segment in self.segments]
        for source, targets in enumerate(self.references):
            clock = self.segments[source].clock
            for target, how in targets.items():
                self.referrers[target].append(source)
                if how != REPLY:
                    self.refcounts[target] += 1
                if clock > self.last_touched[target]:
                    self.last_touched[target] = clock
        self.now = self.segments[-1].clock if self.segments else 0
        self.chat_turns = [p for p, k in enumerate(index.layout.kinds) if k is MessageKind.CHAT]
        policies = index.policies
        self.locked = [
            s.number
            for s in self.segments
            if any(policies[p] is GCPolicy.LOCKED for p in s.positions)
        ]
        # The score's terms that do not depend on the policy.
        self.recency = [0.5 ** ((self.now - t) / HALF_LIFE_TURNS) for t in self.last_touched]
        self.importance = [IMPORTANCE[s.kind] for s in self.segments]
        self.references_term = [min(c / FULL_REFCOUNT, 1.0) for c in self.refcounts]


def segment_graph(index: ConversationIndex) -> SegmentGraph:
    """The graph of the history ``index`` describes, worked out once per index value (an
    index holds while its messages are unedited, and a new one is made otherwise)."""
    if isinstance(index.graph, SegmentGraph):
        return index.graph
    graph = index.graph = SegmentGraph(index)
    return graph


class Plan:
    """Everything a reachability collection decides from: the history's segment graph, and
    under the policy, its roots (each with why it is one, as a sentence's predicate), marks,
    scores and candidates.

    ``reached_from[s]`` is the step by which marking first reached ``s`` (so a shortest path
    from a root); ``candidates`` are what the sweep may take, in the order it takes them.
    ``survivals`` counts, by segment id, the collections each segment survived.
    """

    def __init__(self, collection: Collection, survivals: Mapping[str, int] | None = None) -> None:
        self.collection = collection
        graph = self.graph = segment_graph(collection.figures)
        self.segments, self.by_turn, self.by_id = graph.segments, graph.by_turn, graph.by_id
        self.references, self.referrers = graph.references, graph.referrers
        self.last_named, self.now = graph.last_named, graph.now
        self.pinned = pinned_turns(collection.layout, collection.ids, collection.config)
        self.roots = _roots(collection, self)
        self.reached_from = _mark(self.roots, self.references)
        roots, reached_from = self.roots, self.reached_from
        self.reachable = [
            n in roots or reached_from[n] is not None for n in range(len(graph.segments))
        ]
        self.survivals = dict(survivals or {})
        self.young_ones = [
            self.survivals.get(s.segment_id, 0) == 0 and self.now - s.clock < YOUNG_TURNS
            for s in self.segments
        ]
        self.scores = self._scores()
        self.candidates = self._candidates()

    def last_touched(self, segment: int) -> int:
        """The clock of the newest segment referring to ``segment`` (its own if none does)."""
        return self.graph.last_touched[segment]

    def refcount(self, segment: int) -> int:
        """How many segments refer to ``segment``, not counting the reply of its own turn."""
        return self.graph.refcounts[segment]

    def young(self, segment: int) -> bool:
        return self.young_ones[segment]

    def _scores(self) -> list[float]:
        weights = self.collection.config.weights
        total = weights.recency + weights.importance + weights.refcount + weights.generation
        w_recency, w_importance = weights.recency / total, weights.importance / total
        w_references, w_generation = weights.refcount / total, weights.generation / total
        graph = self.graph
        return [
            min(1.0, w_recency * r + w_importance * i + w_references * c + w_generation * y)
            for r, i, c, y in zip(
                graph.recency, graph.importance, graph.references_term, self.young_ones, strict=True
            )
        ]

    def _candidates(self) -> list[Candidate]:
        """What the sweep may take, unreachable first, lowest score first, oldest first.

        A turn can go only whole, so what is left of it is one candidate, as reachable as
        anything in it and scored as its best part: each exchange in it sorts before it, and
        the turn comes only once its every part would be taken anyway. Preservable content (a
        summary, a closing answer, a clarification) is a candidate only under pressure, as in
        every strategy (``Collection.under_pressure``).
        """
        collection, segments = self.collection, self.segments
        roots, reachable, scores = self.roots, self.reachable, self.scores
        sealed, protected = collection.sealed, collection.protected
        open_before = collection.open_before
        kept = kept_policies(collection)
        found: list[Candidate] = []
        for turn, numbers in self.by_turn.items():
            if turn in sealed:
                continue
            rest = None
            whole = turn not in protected
            for number in numbers:
                segment = segments[number]
                if not segment.exchange:
                    rest = number
                if number in roots or segment.policy in kept:
                    whole = False
                elif segment.exchange and segment.positions[-1] < open_before:
                    found.append(Candidate(reachable[number], scores[number], False, number))
            if whole and rest is not None:
                found.append(
                    Candidate(
                        any(reachable[n] for n in numbers),
                        max([scores[n] for n in numbers]),
                        True,
                        rest,
                        turn,
                    )
                )
        found.sort()
        return found

    def path(self, segment: int) -> list[tuple[int, str]]:
        """The references from a root to ``segment``: ``(referring segment, how)`` steps, the
        root first; empty for a root or a segment nothing reaches."""
        steps: list[tuple[int, str]] = []
        step = self.reached_from[segment]
        while step is not None:
            steps.append(step)
            step = self.reached_from[step[0]]
        return steps[::-1]


def kept_policies(collection: Collection) -> frozenset[GCPolicy]:
    """The policies of the content a collection may not take: locked always, preservable
    below the pressure threshold."""
    if collection.under_pressure:
        return frozenset({GCPolicy.LOCKED})
    return frozenset({GCPolicy.LOCKED, GCPolicy.PRESERVABLE})


def _segments(index: ConversationIndex, anchors: list[MessageAnchors]) -> list[Segment]:
    """The segments in history order: per turn, the rest of the turn first (it starts with the
    request), then its exchanges."""
    layout, history = index.layout, index.messages
    tokens, policies, created = index.tokens, index.policies, index.created_at
    ids = layout.message_ids
    in_exchange = bytearray(len(history))
    exchanges: dict[int, list[tuple[str, list[int]]]] = {}
    for exchange in index.exchanges_from(0):
        exchanges.setdefault(exchange.turn, []).append((exchange.key, exchange.positions))
        for position in exchange.positions:
            in_exchange[position] = 1
    segments: list[Segment] = []
    clock = 0
    for turn in range(len(layout)):
        turn_index = layout.indices[turn]
        clock = turn_index if turn_index is not None else clock
        start, end = layout.span(turn)
        rest = [p for p in range(start, end) if not in_exchange[p]]
        if rest:
            segments.append(
                Segment(
                    len(segments),
                    turn_key_of(turn_index, history[start]),
                    _rest_kind(rest, history, policies, anchors),
                    turn,
                    turn_index,
                    clock,
                    rest,
                    sum([tokens[p] for p in rest]),
                    most_protective([policies[p] for p in rest]),
                    False,
                    [ids[p] for p in rest],
                    min([created[p] for p in rest]),
                )
            )
        for key, positions in exchanges.get(turn, ()):
            first = history[positions[0]]
            tools = tuple(
                dict.fromkeys(
                    p.function_call.name
                    for m in (history[q] for q in positions)
                    for p in m.parts
                    if p.function_call is not None
                )
            )
            segments.append(
                Segment(
                    len(segments),
                    key,
                    SegmentKind.NOTE if first.kind is MessageKind.NOTICE else _tool_kind(tools),
                    turn,
                    turn_index,
                    clock,
                    positions,
                    sum([tokens[p] for p in positions]),
                    most_protective([policies[p] for p in positions]),
                    True,
                    [ids[p] for p in positions],
                    min([created[p] for p in positions]),
                    tools,
                )
            )
    return segments


# Bounded pure memo: a kind per tuple of tool names (a session's tools are few, but the names
# come from the files read, so the memo keeps the most recent).
@functools.lru_cache(maxsize=1024)
def _tool_kind(tools: tuple[str, ...]) -> SegmentKind:
    """An exchange's kind from its tools' names: reading or changing files is code, running
    commands and tests is a log, anything else is tool output."""
    names = " ".join(tools).lower()
    if any(word in names for word in _CODE_TOOLS):
        return SegmentKind.CODE
    if any(word in names for word in _LOG_TOOLS):
        return SegmentKind.LOG
    return SegmentKind.TOOL_OUTPUT


def _rest_kind(
    positions: list[int],
    history: Sequence[Message],
    policies: list[GCPolicy],
    anchors: list[MessageAnchors],
) -> SegmentKind:
    first = history[positions[0]]
    if first.kind is MessageKind.SUMMARY:
        return SegmentKind.SUMMARY
    if first.kind is MessageKind.NOTICE:
        return SegmentKind.NOTE
    for position in positions:
        # Words that state a decision or a constraint, or the user's own answer the agent
        # recorded as settling something (a clarification).
        if anchors[position].decides or (
            policies[position] is GCPolicy.PRESERVABLE and history[position].role is Role.USER
        ):
            return SegmentKind.DECISION
    return SegmentKind.MESSAGE


WorkedOn = dict[str, list[tuple[int, FileSpan]]]


def _references(
    index: ConversationIndex, segments: list[Segment], anchors: list[MessageAnchors]
) -> tuple[list[dict[int, str]], dict[str, int], WorkedOn]:
    """Each segment's references (target segment to how), found walking the history once; the
    last segment naming each anchor; the segments working on each file."""
    history = index.messages
    owner = [0] * len(history)
    rest_of: dict[int, int] = {}
    for segment in segments:
        for position in segment.positions:
            owner[position] = segment.number
        if not segment.exchange:
            rest_of[segment.turn] = segment.number
    references: list[dict[int, str]] = [{} for _ in segments]
    rest_by_index = {
        segment.turn_index: segment.number
        for segment in segments
        if not segment.exchange and segment.turn_index is not None
    }
    for segment in segments:
        rest = rest_of.get(segment.turn)
        if segment.exchange and rest is not None:
            references[rest][segment.number] = REPLY
        if segment.kind is SegmentKind.SUMMARY:
            for turn_index in history[segment.positions[0]].metadata.get("covers_turns") or ():
                target = rest_by_index.get(turn_index)
                if target is not None:
                    references[segment.number].setdefault(target, SUMMARY_OF)
    last_named: dict[str, int] = {}
    latest: dict[str, int] = {}
    worked_on: WorkedOn = {}
    reads = _LineReads()
    holds_everything = [
        s.exchange or s.kind in (SegmentKind.DECISION, SegmentKind.SUMMARY) for s in segments
    ]
    for position, found in enumerate(anchors):
        number = owner[position]
        segment = segments[number]
        if found.acted_on:
            for span in found.acted_on:
                worked_on.setdefault(span.key, []).append((number, span))
            segment.acted_on.extend(found.acted_on)
        if not found.anchors:
            continue
        if holds_everything[number]:
            if not segment.exchange:
                _name(found, number, references[number], last_named, latest, worked_on, reads)
            segment.holds.update(found.anchors)
            latest.update(dict.fromkeys(found.anchors, number))
            latest.update(dict.fromkeys(found.short_names, number))
            continue
        _name(found, number, references[number], last_named, latest, worked_on, reads)
        introduced = [a for a in found.anchors if a not in latest]
        if introduced:
            segment.holds.update(introduced)
            latest.update(dict.fromkeys(introduced, number))
            latest.update(
                (short, number) for a in introduced if (short := basename_key(a)) is not None
            )
    return references, last_named, worked_on


def _name(
    found: MessageAnchors,
    number: int,
    refs: dict[int, str],
    last_named: dict[str, int],
    latest: Mapping[str, int],
    worked_on: WorkedOn,
    reads: _LineReads,
) -> None:
    """The references of a message that names what it carries: each line of a file it names
    to the latest read covering it, each anchor to the segment holding it now."""
    for file_key, line in found.lines:
        target = reads.latest(file_key, line, worked_on.get(file_key))
        if target is not None and target != number:
            refs.setdefault(target, f"{file_key}:{line}")
    for anchor in found.anchors:
        last_named[anchor] = number
        target = _holder(anchor, latest, worked_on, number)
        if target is not None:
            refs.setdefault(target, anchor)


def _holder(anchor: str, latest: Mapping[str, int], worked_on: WorkedOn, number: int) -> int | None:
    """The segment a name refers to: for a file, the latest one that read or changed it, else
    the latest one holding it; never the naming segment itself."""
    spans = worked_on.get(anchor)
    if spans:
        for worker, _ in reversed(spans):
            if worker != number:
                return worker
    holder = latest.get(anchor)
    return holder if holder is not None and holder != number else None


class _LineReads:
    """The latest read covering a line of a file, as the walk goes: a session names the same
    lines again and again, so each answer is kept, and only reads made since are looked at."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, int], tuple[int, int | None]] = {}

    def latest(
        self, file_key: str, line: int, spans: list[tuple[int, FileSpan]] | None
    ) -> int | None:
        if not spans:
            return None
        checked, holder = self._known.get((file_key, line), (0, None))
        newer = _covering(spans[checked:], line)
        if newer is not None:
            holder = newer
        self._known[file_key, line] = (len(spans), holder)
        return holder


def _covering(spans: list[tuple[int, FileSpan]] | None, line: int) -> int | None:
    """The latest segment whose tool read (or changed) the given lines of the file at ``line``."""
    for holder, span in reversed(spans or ()):
        if span.start is not None and span.covers(line):
            return holder
    return None


def _roots(collection: Collection, plan: Plan) -> dict[int, str]:
    """Each root with why it is one, as the predicate of a sentence about it."""
    options = collection.config.roots
    graph = plan.graph
    chat = graph.chat_turns
    roots: dict[int, str] = {}

    def add(numbers: Iterable[int], why: str) -> None:
        for number in numbers:
            roots.setdefault(number, why)

    if options.locked:
        add(graph.locked, "holds locked content")
    if options.current_task:
        request = original_request(collection.history)
        if request is not None:
            add(_segment_at(plan, request), "holds the original request")
        latest = latest_request(collection.history)
        if latest is not None:
            add(_segment_at(plan, latest), "holds the latest user message, the current task")
    if options.pinned:
        for turn in sorted(plan.pinned):
            add(plan.by_turn.get(turn, ()), "is in a pinned turn")
    if options.recent_turns:
        noun = "turn" if options.recent_turns == 1 else f"{options.recent_turns:,} turns"
        add(_recent(plan, chat[-options.recent_turns :]), f"is in the latest {noun}")
    if options.active_file_turns:
        recent = _recent(plan, chat[-options.active_file_turns :])
        _add_active_files(plan, recent, options.active_file_turns, add)
    return roots


def _recent(plan: Plan, turns: list[int]) -> list[int]:
    """The segments of ``turns``, except the exchanges before the sealed recent ones
    (``preserve_recent_exchanges``): a long turn's older work is no root for being recent."""
    open_before = plan.collection.open_before
    return [
        number
        for turn in turns
        for number in plan.by_turn.get(turn, ())
        if not plan.segments[number].exchange or plan.segments[number].positions[0] >= open_before
    ]


def _add_active_files(
    plan: Plan, recent: list[int], count: int, add: Callable[[Iterable[int], str], None]
) -> None:
    """The latest work on each file the ``recent`` segments (of the latest turns) read, edit
    or name, and the latest read of each line they name in one."""
    graph = plan.graph
    files: set[str] = set()
    lines: set[tuple[str, int]] = set()
    for number in recent:
        for position in graph.segments[number].positions:
            found = graph.anchors[position]
            files.update(a for a in found.anchors if a.startswith(FILE))
            lines.update(found.lines)
    turns_do = "turn works on" if count == 1 else f"{count:,} turns work on"
    turns_name = "turn names" if count == 1 else f"{count:,} turns name"
    for file_key in sorted(files):
        spans = graph.worked_on.get(file_key)
        if spans:
            add(
                [spans[-1][0]],
                f"is the latest work on {file_key.partition(':')[2]}, a file the latest {turns_do}",
            )
    for file_key, line in sorted(lines):
        holder = _covering(graph.worked_on.get(file_key), line)
        if holder is not None:
            add(
                [holder],
                f"is the latest read of {file_key.partition(':')[2]}:{line}, a line the "
                f"latest {turns_name}",
            )


def _segment_at(plan: Plan, position: int) -> list[int]:
    turn = plan.collection.layout.turn_of(position)
    return [n for n in plan.by_turn.get(turn, ()) if position in plan.segments[n].positions]


def _mark(
    roots: Mapping[int, str], references: list[dict[int, str]]
) -> list[tuple[int, str] | None]:
    """Breadth first from the roots: for each segment reached, the step that reached it first
    (so following the steps back gives a shortest path to a root); None for roots and for
    segments nothing reaches."""
    reached_from: list[tuple[int, str] | None] = [None] * len(references)
    seen = set(roots)
    queue = deque(sorted(roots))
    while queue:
        source = queue.popleft()
        for target, how in references[source].items():
            if target not in seen:
                seen.add(target)
                reached_from[target] = (source, how)
                queue.append(target)
    return reached_from
