"""The stash: what a reachability collection took, kept so it can be put back.

"Don't delete it, put it where the agent can get it back." Each stashed segment keeps its
messages, where they stood (the message before each one in the history the run started
from), its score, the sentence saying why it went, its anchors, and the figures the file
recorded for its messages. ``restore`` puts chosen segments back where they were, whole, and
rebuilds the budget, so a restored session is exactly one whose history holds them again:
restoring everything a run stashed gives back the history it started from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field, computed_field

from gcengine._fast import construct
from gcengine.budget import InstructionBudget, InstructionSource, SourceEntry
from gcengine.errors import GCEngineError
from gcengine.gc.segments import SegmentKind, describe
from gcengine.messages import Message, MessageKind, turn_layout, turn_number
from gcengine.session import Session, rebuild_budget, without_needless_marks
from gcengine.tokens import compact_json, counter_by_name


class StashError(GCEngineError):
    """Segments asked for that a stash does not hold, or that are back already."""


class RecordedLeaf(BaseModel):
    """A figure the file recorded for a stashed message: the budget leaf, and the keys leading
    to it from the recorded conversation."""

    path: list[str]
    entry: SourceEntry


class StashedSegment(BaseModel):
    """One segment a run stashed. ``after`` holds, for each message, the id of the message
    before it in the history the run started from (None at the very start); ``positions``
    are those places."""

    segment_id: str
    kind: SegmentKind
    turn_index: int | None
    messages: list[Message]
    positions: list[int]
    after: list[str | None]
    tokens: int
    reachable: bool
    score: float
    reason: str
    anchors: list[str] = Field(default_factory=list)
    recorded: list[RecordedLeaf] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def turn_number(self) -> int | None:
        return turn_number(self.turn_index) if self.turn_index is not None else None

    @property
    def message_ids(self) -> list[str]:
        return [m.message_id for m in self.messages]

    @property
    def text(self) -> str:
        """Everything the segment says, tools' arguments and results included, for searching."""
        lines: list[str] = []
        for message in self.messages:
            for part in message.parts:
                if part.text and part.type.value == "text":
                    lines.append(part.text)
                elif part.function_call is not None:
                    call = part.function_call
                    lines.append(f"{call.name}({compact_json(call.args)})")
                elif part.function_response is not None:
                    lines.append(compact_json(part.function_response.result))
        return "\n".join(lines)

    @property
    def shown_anchors(self) -> list[str]:
        """Its anchors as a sentence shows them."""
        return [describe(anchor) for anchor in self.anchors]


class Stash(BaseModel):
    """What one reachability run stashed, in the order it took it. ``deleted`` holds the place
    of every message the run deleted instead (the id of the message before it), so segments
    can still be put back in order around them; ``notice_id`` is the notice the run wrote, if
    any, and ``summary_id`` the summary of what it stashed, if it wrote one: each goes once
    every stashed segment is back (the summary says which are back before that)."""

    segments: list[StashedSegment] = Field(default_factory=list)
    deleted: dict[str, str | None] = Field(default_factory=dict)
    notice_id: str | None = None
    summary_id: str | None = None
    recorded_prompt_tokens: int | None = Field(
        default=None,
        description="the provider's last prompt size the session recorded before the run: "
        "it describes the whole history, so it comes back once everything is",
    )

    def segment(self, segment_id: str) -> StashedSegment:
        for segment in self.segments:
            if segment.segment_id == segment_id:
                return segment
        raise StashError(f"the stash holds no segment {segment_id!r}")

    def search(self, text: str = "", anchor: str = "") -> list[StashedSegment]:
        """The stashed segments whose text holds ``text`` and one of whose anchors holds
        ``anchor`` (both ignoring case; an empty one matches everything)."""
        text, anchor = text.casefold(), anchor.casefold()
        return [
            segment
            for segment in self.segments
            if (not text or text in segment.text.casefold())
            and (not anchor or any(anchor in a.casefold() for a in segment.anchors))
        ]


def restore(session: Session, stash: Stash, segment_ids: Iterable[str]) -> Session:
    """A new session: ``session`` (the one the run left, or one derived from it) with the
    chosen stashed segments back where they stood, whole, and its budget rebuilt.

    Each message goes back right after the message that stood before it, or, when that one is
    gone too (stashed and not restored, or deleted), after the nearest one before it that is
    here; where the history was changed otherwise, after the last message of an earlier or
    the same turn. The notice and the summary the run wrote go once every stashed segment is
    back; until then the summary's ``restored_segments`` name those that are (what it says
    of them is in view again, as written). The figures the file recorded for the messages
    come back with them; the provider's last prompt size once the history is the one the run
    started from.
    """
    wanted = list(dict.fromkeys(segment_ids))
    if not wanted:
        raise StashError("choose at least one stashed segment to restore")
    chosen = [stash.segment(segment_id) for segment_id in wanted]
    present = {message.message_id for message in session.history}
    back = [s.segment_id for s in chosen if any(i in present for i in s.message_ids)]
    if back:
        raise StashError(f"segment {back[0]!r} is in the session already")
    history = _unmarked(_put_back(session.history, stash, chosen), chosen)
    restored = {segment.segment_id for segment in chosen}
    back_now = {
        s.segment_id
        for s in stash.segments
        if s.segment_id in restored or all(i in present for i in s.message_ids)
    }
    everything_back = len(back_now) == len(stash.segments)
    if everything_back:
        written = {stash.notice_id, stash.summary_id}
        history = [m for m in history if m.message_id not in written]
    elif stash.summary_id is not None:
        history = _summary_marked(history, stash.summary_id, back_now)
    leaves = [leaf for segment in chosen for leaf in segment.recorded]
    # The history the run started from, whole again only when the run deleted nothing.
    whole = everything_back and not stash.deleted
    updated = session.model_copy(
        update={
            "history": history,
            "recorded_budget": _with_recorded(session.recorded_budget, leaves),
            "recorded_prompt_tokens": stash.recorded_prompt_tokens if whole else None,
        }
    )
    updated.budget = rebuild_budget(
        updated, counter_by_name(session.token_counter), reuse=session.budget
    )
    return updated


def _summary_marked(history: list[Message], summary_id: str, back: set[str]) -> list[Message]:
    """The history with the run's summary naming the stashed segments back in view."""
    return [
        m.model_copy(update={"metadata": {**m.metadata, "restored_segments": sorted(back)}})
        if m.message_id == summary_id
        else m
        for m in history
    ]


def _unmarked(history: list[Message], chosen: list[StashedSegment]) -> list[Message]:
    """The history with the closing answers of the turns that got their tool work back as
    they were before the run marked them (``without_needless_marks``)."""
    back = {message_id for segment in chosen for message_id in segment.message_ids}
    layout = turn_layout(history)
    result: list[Message] = []
    for position in range(len(layout)):
        start, end = layout.span(position)
        turn = history[start:end]
        if any(message.message_id in back for message in turn):
            turn = without_needless_marks(turn)
        result.extend(turn)
    return result


def _put_back(
    history: Sequence[Message], stash: Stash, chosen: list[StashedSegment]
) -> list[Message]:
    """The history with the chosen segments' messages in place, built in one pass."""
    before: dict[str, str | None] = dict(stash.deleted)
    for segment in stash.segments:
        before.update(zip(segment.message_ids, segment.after, strict=True))
    last_at = {message.message_id: position for position, message in enumerate(history)}
    moving = sorted(
        (
            (position, message)
            for segment in chosen
            for position, message in zip(segment.positions, segment.messages, strict=True)
        ),
        key=lambda item: item[0],
    )
    # Each message follows an anchor: a message of the history (by id), None for the start.
    following: dict[str | None, list[Message]] = {}
    anchor_of: dict[str, str | None] = {}
    for _, message in moving:
        anchor = _anchor(message, before, last_at, anchor_of, history)
        anchor_of[message.message_id] = anchor
        following.setdefault(anchor, []).append(message)
    result = list(following.get(None, []))
    for position, message in enumerate(history):
        result.append(message)
        if last_at[message.message_id] == position:
            result.extend(following.get(message.message_id, ()))
    return result


def _anchor(
    message: Message,
    before: dict[str, str | None],
    last_at: dict[str, int],
    anchor_of: dict[str, str | None],
    history: Sequence[Message],
) -> str | None:
    """The message of ``history`` (or the start, None) that ``message`` goes right after."""
    previous = before.get(message.message_id)
    seen: set[str] = set()
    while previous is not None and previous not in last_at:
        if previous in anchor_of:  # going back in this same call: follow it
            return anchor_of[previous]
        if previous not in before or previous in seen:
            return _by_turn(message, history)
        seen.add(previous)
        previous = before[previous]
    return previous


def _by_turn(message: Message, history: Sequence[Message]) -> str | None:
    """For a history changed otherwise: after the last message of an earlier or the same turn."""
    if message.turn_index is None:
        return None
    anchor = None
    for other in history:
        if other.turn_index is not None and other.turn_index > message.turn_index:
            break
        if other.kind is MessageKind.CHAT:
            anchor = other.message_id
    return anchor


def with_recorded_leaves(stash: Stash, recorded: InstructionBudget | None) -> Stash:
    """The stash with, for each segment, the leaves of the session's recorded conversation that
    name only its messages (what a run's session no longer records)."""
    owners = {
        message_id: number
        for number, segment in enumerate(stash.segments)
        for message_id in segment.message_ids
    }
    found = _recorded_leaves(recorded, owners)
    if not found:
        return stash
    segments = [
        segment.model_copy(update={"recorded": found[number]}) if number in found else segment
        for number, segment in enumerate(stash.segments)
    ]
    return stash.model_copy(update={"segments": segments})


def _recorded_leaves(
    recorded: InstructionBudget | None, owners: dict[str, int]
) -> dict[int, list[RecordedLeaf]]:
    """The leaves of a recorded conversation whose messages all belong to one stashed segment
    (``owners`` maps message ids to segments), by segment."""
    found: dict[int, list[RecordedLeaf]] = {}
    conversation = recorded.get_entry(InstructionSource.CONVERSATION) if recorded else None
    if conversation is None or not owners:
        return found
    stack: list[tuple[list[str], SourceEntry]] = [
        ([key], child) for key, child in conversation.children.items()
    ]
    while stack:
        path, entry = stack.pop()
        if entry.children:
            stack.extend(([*path, key], child) for key, child in entry.children.items())
            continue
        segments = {owners.get(message_id) for message_id in entry.message_ids}
        if len(segments) == 1 and None not in segments:
            (segment,) = segments
            assert segment is not None
            found.setdefault(segment, []).append(construct(RecordedLeaf, path=path, entry=entry))
    return found


def _with_recorded(
    recorded: InstructionBudget | None, leaves: list[RecordedLeaf]
) -> InstructionBudget | None:
    """The recording with the leaves back in their places (a container that went with them is
    made again), each container's figure what it holds."""
    conversation = recorded.get_entry(InstructionSource.CONVERSATION) if recorded else None
    if recorded is None or conversation is None or not leaves:
        return recorded
    for leaf in leaves:
        conversation = _inserted(conversation, leaf.path, leaf.entry)
    entries = {**recorded.entries, InstructionSource.CONVERSATION: conversation}
    return recorded.model_copy(update={"entries": entries})


def _inserted(entry: SourceEntry, path: list[str], leaf: SourceEntry) -> SourceEntry:
    key, rest = path[0], path[1:]
    if not rest:
        if key in entry.children:
            return entry
        children = {**entry.children, key: leaf}
    else:
        child = entry.children.get(key) or construct(
            SourceEntry,
            source=InstructionSource.CONVERSATION,
            tokens=0,
            gc_policy=leaf.gc_policy,
            label=key,
            children={},
            metadata={},
            created_at=leaf.created_at,
            message_ids=[],
        )
        children = {**entry.children, key: _inserted(child, rest, leaf)}
    tokens = sum(child.total_tokens() for child in children.values())
    return entry.model_copy(update={"children": children, "tokens": tokens})
