"""Messages, parts and turns: the history an agent sends to its model.

The model mirrors JAATO's (``Message`` with ``role``, ``parts`` and ``message_id``) with three
additions that the collector relies on:

* ``message_id`` is always present and stable: files that carry none get ids derived from the
  message's position and content, so importing the same file twice gives the same ids.
* ``turn_index`` records the turn a message belonged to in the session *as uploaded*, so turn
  numbers (and the pins that name them) survive collections that remove earlier turns.
* ``kind`` marks summaries and notices the collector wrote, so they are never mistaken for the
  user's own words (JAATO stores both as plain user messages).

Messages are values: the engine never changes one, and keeps what it reads from one (its
anchors) with the message (``Readings``). Assigning a field of a message drops that, and
counts as an edit of every history index that read it; change its ``parts`` or ``metadata``
on a copy, never in place (that is not seen). Parts and their payloads are frozen: a message's
copy shares them, so a part edited in place would change every message holding it.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import compress, count, islice, repeat
from operator import attrgetter, is_, is_not, ne
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gcengine._fast import Revision, construct


class Role(StrEnum):
    USER = "user"
    MODEL = "model"
    TOOL = "tool"


class PartType(StrEnum):
    TEXT = "text"
    FUNCTION_CALL = "function_call"
    FUNCTION_RESPONSE = "function_response"
    INLINE_DATA = "inline_data"
    THOUGHT = "thought"
    OPAQUE = "opaque"


class MessageKind(StrEnum):
    """Who wrote a message: the conversation itself, or the collector."""

    CHAT = "chat"
    SUMMARY = "summary"
    NOTICE = "notice"


class FunctionCall(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str | None = None
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class FunctionResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    call_id: str | None = None
    name: str = ""
    result: Any = None
    is_error: bool = False
    # Format-specific fields kept for the round trip (JAATO 2.10's ``untrusted``, for instance).
    extra: dict[str, Any] = Field(default_factory=dict)


class InlineData(BaseModel):
    model_config = ConfigDict(frozen=True)

    mime_type: str
    data: str = Field(description="base64 payload, or a reference when the file held only one")
    extra: dict[str, Any] = Field(default_factory=dict)


class OpaquePart(BaseModel):
    model_config = ConfigDict(frozen=True)

    """A part this engine does not interpret (code execution, compaction markers, ...).

    It is carried along unchanged and never shown to anyone as if it were message text.
    """

    kind: str
    data: dict[str, Any] = Field(default_factory=dict)


_PAYLOAD_FIELDS = {
    PartType.TEXT: "text",
    PartType.THOUGHT: "text",
    PartType.FUNCTION_CALL: "function_call",
    PartType.FUNCTION_RESPONSE: "function_response",
    PartType.INLINE_DATA: "inline_data",
    PartType.OPAQUE: "opaque",
}
"""The field holding a part's payload, by its type."""


class Part(BaseModel):
    """One piece of a message; exactly the field matching ``type`` is set."""

    model_config = ConfigDict(frozen=True)

    type: PartType
    text: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: InlineData | None = None
    opaque: OpaquePart | None = None
    # Provider extras that ride along with a part (a thought's signature, for instance).
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _payload_matches_type(self) -> Part:
        # Run for every part read back (30,000 for a long session): one lookup, not a dict
        # of every payload made per part.
        if getattr(self, _PAYLOAD_FIELDS[self.type]) is None:
            raise ValueError(f"a {self.type.value} part needs its payload")
        return self

    @classmethod
    def from_text(cls, text: str) -> Part:
        return _part(PartType.TEXT, text=text)

    @classmethod
    def from_thought(cls, text: str, extra: dict[str, Any] | None = None) -> Part:
        return _part(PartType.THOUGHT, text=text, extra=extra or {})

    @classmethod
    def from_function_call(cls, call: FunctionCall) -> Part:
        return _part(PartType.FUNCTION_CALL, function_call=call)

    @classmethod
    def from_function_response(cls, response: FunctionResponse) -> Part:
        return _part(PartType.FUNCTION_RESPONSE, function_response=response)

    @classmethod
    def from_inline_data(cls, data: InlineData) -> Part:
        return _part(PartType.INLINE_DATA, inline_data=data)

    @classmethod
    def from_opaque(cls, kind: str, data: dict[str, Any]) -> Part:
        return _part(PartType.OPAQUE, opaque=OpaquePart(kind=kind, data=data))


def _part(
    type: PartType,
    *,
    text: str | None = None,
    function_call: FunctionCall | None = None,
    function_response: FunctionResponse | None = None,
    inline_data: InlineData | None = None,
    opaque: OpaquePart | None = None,
    extra: dict[str, Any] | None = None,
) -> Part:
    """A part with every field given, so it is built on ``construct``'s fast path and shares
    its fields-set (a long session holds tens of thousands of parts)."""
    return construct(
        Part,
        type=type,
        text=text,
        function_call=function_call,
        function_response=function_response,
        inline_data=inline_data,
        opaque=opaque,
        extra={} if extra is None else extra,
    )


class Readings:
    """What the engine read from one message value, kept with it until it is edited: its
    anchors (tens of megabytes of text in a long session, read again by every replay and
    analysis otherwise), and the ``Revision`` the message counts its edits against once an
    index of a history holding it has read it (``ConversationIndex``), which tells the index
    whether it still describes the history. Kept outside the message's fields (a slot), so a
    copy starts without them and they take no part in equality, dumps or pickles.
    """

    __slots__ = ("anchors", "revision")

    def __init__(self) -> None:
        self.anchors: object = None
        self.revision: Revision | None = None


class Message(BaseModel):
    __slots__ = ("__weakref__", "_readings")

    role: Role
    parts: list[Part]
    message_id: str
    kind: MessageKind = MessageKind.CHAT
    turn_index: int | None = Field(
        default=None, description="the turn this message belonged to in the session as uploaded"
    )
    # Per-message fields a format carries that the engine does not use (``model``, ``provider``).
    metadata: dict[str, Any] = Field(default_factory=dict)

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            readings: Readings | None = _READINGS.__get__(self)
        except AttributeError:  # nothing was read from it
            readings = None
        if readings is not None:  # what was read from it no longer holds
            if readings.revision is not None:
                readings.revision.edits += 1
            _READINGS.__set__(self, None)
        super().__setattr__(name, value)

    def readings(self) -> Readings:
        """What has been read from this message value (new, if nothing was yet)."""
        try:
            known: Readings | None = _READINGS.__get__(self)
        except AttributeError:  # a message nothing was read from yet
            known = None
        if known is None:
            known = Readings()
            _READINGS.__set__(self, known)
        return known

    @property
    def function_calls(self) -> list[FunctionCall]:
        return [p.function_call for p in self.parts if p.function_call is not None]

    @property
    def function_responses(self) -> list[FunctionResponse]:
        return [p.function_response for p in self.parts if p.function_response is not None]

    @property
    def is_function_response(self) -> bool:
        """JAATO's rule: a tool message, or a user message that carries a tool result."""
        # A list of the part types, not ``any`` over a generator: this is asked of every
        # message when a budget is built, and most messages have one part.
        return self.role is Role.TOOL or PartType.FUNCTION_RESPONSE in [p.type for p in self.parts]

    @property
    def text(self) -> str:
        """The visible text of the message (thoughts and opaque parts excluded)."""
        return "\n".join(p.text for p in self.parts if p.type is PartType.TEXT and p.text)

    @property
    def is_text_only(self) -> bool:
        types = [p.type for p in self.parts]  # as in ``is_function_response``
        return bool(types) and types.count(PartType.TEXT) == len(types)


# The slot holding a message's readings, read and set without pydantic's attribute handling
# (which takes every name starting with "_" for a private attribute).
_READINGS = Message.__dict__["_readings"]


def read_under(messages: Iterable[Message], revision: Revision, seen: dict[Revision, int]) -> None:
    """Have each message count its edits against ``revision``, unless it counts them against
    one already, and note in ``seen`` every revision the messages count against, with its count
    now: a fact read from them holds while those counts do. Messages an index read before (a
    budget rebuilt, or read again) are looked at C speed."""
    messages = list(messages)
    try:
        known = list(map(_READINGS.__get__, messages))
    except AttributeError:  # one was never read
        known = [None]
    if None in known or None in (found := set(map(_REVISION_OF, known))):  # one not read yet
        found = {_counting_against(message, revision) for message in messages}
    for own in found:
        seen.setdefault(own, own.edits)


_REVISION_OF = attrgetter("revision")


def read_new(messages: Iterable[Message], revision: Revision) -> None:
    """``read_under`` for messages just made, nothing read from them yet (a converter making
    thousands at once): each counts its edits against ``revision`` from now, without the
    checks ``read_under`` makes a message at a time to find whether it was read before."""
    _fresh_readings(messages, revision)


def readings_made(messages: Iterable[Message]) -> None:
    """Give each of ``messages``, just made and nothing read from them yet (a store's history
    read back, thousands at once), the empty ``Readings`` it would be given when first read.

    Nothing changes but when they are made: the first index of a history reads every message
    (``read_under``), and finding one at a time that a message has none (reading an unset
    slot raises) took a tenth of building a 10,000-turn session's budget; this makes them
    all in one loop. Unlike ``read_new`` the messages count their edits against no revision
    yet: the index that reads them gives them its own, as it would have."""
    _fresh_readings(messages, None)


def _fresh_readings(messages: Iterable[Message], revision: Revision | None) -> None:
    """Empty ``Readings`` counting against ``revision`` for each of ``messages``, made through
    the slots in one loop (thousands of messages at once)."""
    make, put = Readings.__new__, _READINGS.__set__
    for message in messages:
        readings = make(Readings)
        readings.anchors, readings.revision = None, revision
        put(message, readings)


def read_as_originals(copies: Iterable[Message], originals: Iterable[Message]) -> None:
    """Have each copy count its edits against the revision its original counts against, when
    an index has read the original: a collection's marked copy of a message it keeps (a mark
    in its metadata, nothing else changed) is then read by the index after at C speed with the
    messages kept as they are (``read_under``), rather than making all of them be looked at one
    by one. An edit to either then counts for both, which only ever makes an index read again.
    Its anchors are not carried over: they are read from the copy when asked."""
    make, put = Readings.__new__, _READINGS.__set__
    for copy, original in zip(copies, originals, strict=True):
        try:
            revision = _READINGS.__get__(original).revision
        except AttributeError:  # never read
            continue
        if revision is not None:
            readings = make(Readings)
            readings.anchors, readings.revision = None, revision
            put(copy, readings)


def _counting_against(message: Message, revision: Revision) -> Revision:
    """The revision ``message`` counts its edits against: its own, or ``revision`` from now."""
    readings = message.readings()
    if readings.revision is None:
        readings.revision = revision
    return readings.revision


def turn_number(index: int) -> int:
    """What a person reads for the turn with stable index ``index``: JAATO's number, counted
    from 1 (its budget labels say ``turn_1`` for the first turn)."""
    return index + 1


def turn_label(index: int | None) -> str:
    """``turn 1`` for the turn with stable index 0, as every label the engine writes says it;
    ``inserted`` for a summary or notice a collector put in (it has no index)."""
    return f"turn {turn_number(index)}" if index is not None else "inserted"


class Turn(BaseModel):
    """A user request and everything the agent did for it.

    ``index`` is the turn's position in the session as uploaded, from 0, and never changes (it
    is what pins and budget keys use); it is None only for summaries and notices a collector
    inserted after the upload. ``number`` is what a person reads: JAATO's, from 1.
    """

    index: int | None
    messages: list[Message]

    @property
    def number(self) -> int | None:
        return turn_number(self.index) if self.index is not None else None

    @property
    def message_ids(self) -> list[str]:
        return [m.message_id for m in self.messages]

    @property
    def kind(self) -> MessageKind:
        return self.messages[0].kind


ToolTraffic = tuple[list[str], list[str]]
"""The call ids a message makes and the call ids it answers."""


def tool_traffic(message: Message) -> ToolTraffic | None:
    """What a message takes part in of tool traffic, or None when it calls nothing, answers
    nothing and is not a notice (which the collector removes like an exchange)."""
    calls: list[str] = []
    answers: list[str] = []
    for part in message.parts:
        call = part.function_call
        if call is not None and call.id:
            calls.append(call.id)
        response = part.function_response
        if response is not None and response.call_id:
            answers.append(response.call_id)
    if calls or answers or message.kind is MessageKind.NOTICE:
        return calls, answers
    return None


def starts_turn(message: Message, opener: Message | None) -> bool:
    """Whether ``message`` begins a new turn when the current one began with ``opener`` (None
    before the first turn).

    Only a turn's first message matters, so a history can be split from any turn boundary on,
    which is what lets a collection count the turns it changed without splitting it all again.
    """
    if opener is None:
        return True
    if message.kind is not MessageKind.CHAT or opener.kind is not MessageKind.CHAT:
        return True
    recorded, ongoing = message.turn_index, opener.turn_index
    if recorded is not None and ongoing is not None:
        return recorded != ongoing
    return message.role is Role.USER and not message.is_function_response


@dataclass(frozen=True)
class TurnLayout:
    """A history's message ids and where each of its turns starts, with the turn's stable
    index and kind.

    ``split_into_turns`` without building the turns, read in one pass over the messages: a
    collection needs the shape of the whole history but looks inside only the turns it
    removes, usually the oldest few.
    """

    message_ids: list[str]
    starts: list[int]
    indices: list[int | None]
    kinds: list[MessageKind]
    # Whether every message is conversation carrying its turn, so a turn is a run of messages
    # of one recorded index (what ``gcengine.session.cut`` relies on); not part of equality.
    by_turn_index: bool = field(default=False, compare=False)

    def __len__(self) -> int:
        return len(self.starts)

    def span(self, turn: int) -> tuple[int, int]:
        """The history positions of turn ``turn``'s messages, as ``range`` bounds."""
        end = self.starts[turn + 1] if turn + 1 < len(self.starts) else len(self.message_ids)
        return self.starts[turn], end

    def turn_of(self, position: int) -> int:
        """The turn holding the message at ``position``."""
        return bisect_right(self.starts, position) - 1

    def turn_starting_at(self, position: int) -> int | None:
        """The turn whose first message is at ``position`` (the number of turns at the end of
        the history); None when ``position`` is inside a turn."""
        if position == len(self.message_ids):
            return len(self.starts)
        turn = bisect_left(self.starts, position)
        return turn if turn < len(self.starts) and self.starts[turn] == position else None


_ROLE = attrgetter("role")
_TURN_INDEX = attrgetter("turn_index")
_MESSAGE_ID = attrgetter("message_id")
_KIND = attrgetter("kind")


def turn_layout(history: Sequence[Message]) -> TurnLayout:
    """The layout of ``history`` (the rule is in ``split_into_turns``)."""
    ids = list(map(_MESSAGE_ID, history))
    kinds = list(map(_KIND, history))
    recorded = list(map(_TURN_INDEX, history))
    if kinds.count(MessageKind.CHAT) == len(kinds) and None not in recorded:
        # Every message is conversation and carries its turn: a turn starts exactly where the
        # recorded index changes, which C-level iteration finds without a call per message.
        changes = compress(count(1), map(ne, recorded, islice(recorded, 1, None)))
        starts = [0, *changes] if history else []
        chat = [MessageKind.CHAT] * len(starts)
        return TurnLayout(ids, starts, [recorded[s] for s in starts], chat, by_turn_index=True)
    if history and kinds.count(MessageKind.CHAT) == len(kinds) == recorded.count(None):
        return untagged_layout(
            ids, list(map(_ROLE, history)), lambda p: history[p].is_function_response
        )
    starts = []
    opener: Message | None = None
    for position, message in enumerate(history):
        if starts_turn(message, opener):
            starts.append(position)
            opener = message
    indices: list[int | None] = []
    next_free = 0
    for turn, start in enumerate(starts):
        index = recorded[start]
        if index is not None:
            next_free = max(next_free, index + 1)
        elif kinds[start] is MessageKind.CHAT:
            index = max(next_free, turn)
            next_free = index + 1
        indices.append(index)
    return TurnLayout(ids, starts, indices, [kinds[s] for s in starts])


def untagged_layout(
    ids: list[str], roles: Sequence[Role], answers_call: Callable[[int], bool]
) -> TurnLayout:
    """The layout of a conversation carrying no turn (a JAATO history), from its messages'
    ids and roles, and whether the message at a position answers a tool call
    (``is_function_response``): a turn starts at the first message and at each user message
    that is no tool result, numbered in order. Only the user messages are asked about."""
    if not ids:
        return TurnLayout(ids, [], [], [])
    users = compress(count(), map(is_, roles, repeat(Role.USER)))
    starts = [0, *(p for p in users if p and not answers_call(p))]
    chat = [MessageKind.CHAT] * len(starts)
    return TurnLayout(ids, starts, list(range(len(starts))), chat)


def relaid_out(
    messages: Sequence[Message],
    old_messages: Sequence[Message],
    old: TurnLayout,
    *,
    same_start: int | None = None,
) -> TurnLayout:
    """``turn_layout(messages)``, from ``old``, the layout of ``old_messages``: the turns both
    histories share at their start and at their end are taken from it (the end's moved), and
    only the messages between are split. A history a collection changed, or one grown by a
    few turns, shares nearly all of its turns with the one before, so this costs what changed.

    Splitting is causal (``starts_turn``): the turns before the first message that differs are
    split alike, and so is a shared end that begins a turn after the part between. A
    conversation message between that carries no stable index would be numbered by its
    position: then everything is split again.

    ``same_start``, when the caller knows it, is how many messages both histories start with,
    the very same (all of ``old_messages`` for a history grown at its end): not looked for.
    """
    size, old_size = len(messages), len(old_messages)
    limit = min(size, old_size)
    if same_start is None:
        same_start = next(compress(count(), map(is_not, messages, old_messages)), limit)
    same_end = next(
        compress(count(), map(is_not, reversed(messages), reversed(old_messages))),
        limit - same_start,
    )
    same_end = min(same_end, limit - same_start)
    # From the turn before the one holding the first difference: where it ends may change.
    head = max(bisect_right(old.starts, same_start) - 2, 0)
    start = old.starts[head] if head < len(old.starts) else 0
    # To the first old turn starting in the shared end.
    first_old = bisect_left(old.starts, old_size - same_end)
    old_stop = old.starts[first_old] if first_old < len(old.starts) else old_size
    stop = old_stop - old_size + size
    if stop < start:
        return turn_layout(messages)
    middle = messages[start:stop]
    # Most often every message carries its turn: found in C, with no call per message.
    if None in map(_TURN_INDEX, middle) and any(
        m.turn_index is None and m.kind is MessageKind.CHAT for m in middle
    ):
        return turn_layout(messages)
    between = turn_layout(middle)
    if (
        stop < size
        and between.starts
        and not starts_turn(messages[stop], middle[between.starts[-1]])
    ):
        return turn_layout(messages)
    shift = stop - old_stop
    return TurnLayout(
        [*old.message_ids[:start], *between.message_ids, *old.message_ids[old_stop:]],
        [
            *old.starts[:head],
            *[position + start for position in between.starts],
            *[position + shift for position in old.starts[first_old:]],
        ],
        [*old.indices[:head], *between.indices, *old.indices[first_old:]],
        [*old.kinds[:head], *between.kinds, *old.kinds[first_old:]],
        by_turn_index=old.by_turn_index and between.by_turn_index,
    )


def split_into_turns(history: Sequence[Message]) -> list[Turn]:
    """Group a history into turns.

    A turn starts at a user message that is not a tool result (JAATO's rule), so tool calls and
    their results stay in the turn that asked for them; leading model messages form a turn of
    their own. Messages that carry ``turn_index`` keep the turn they were uploaded in even when
    earlier messages of that turn were collected, and summaries and notices stand alone.
    """
    layout = turn_layout(history)
    messages = list(history)
    turns: list[Turn] = []
    for turn, index in enumerate(layout.indices):
        start, end = layout.span(turn)
        turns.append(construct(Turn, index=index, messages=messages[start:end]))
    return turns


def derive_message_id(position: int, role: Role, parts: Sequence[Part]) -> str:
    """A stable id for a message whose file carries none: same file, same ids.

    It digests the position, the role, the text and the identities of tool calls and results
    (not their arguments and results, which would mean serialising every payload again). That
    keeps ids of different sessions apart, so a pin by message id does not leak into another
    session, and keeps the ids of a session's unchanged beginning when it is uploaded again
    with more turns.
    """
    digest = hashlib.blake2b(f"{position}:{role.value}".encode(), digest_size=16)
    for part in parts:
        if part.text is not None:
            digest.update(b"\x00t")
            digest.update(part.text.encode())
        elif part.function_call is not None:
            digest.update(f"\x00c{part.function_call.id}:{part.function_call.name}".encode())
        elif part.function_response is not None:
            response = part.function_response
            digest.update(f"\x00r{response.call_id}:{response.name}".encode())
        elif part.inline_data is not None:
            digest.update(
                f"\x00i{part.inline_data.mime_type}:{len(part.inline_data.data)}".encode()
            )
        elif part.opaque is not None:
            digest.update(f"\x00o{part.opaque.kind}".encode())
    return uuid_shaped(digest.hexdigest())


def uuid_shaped(hex_digest: str) -> str:
    """A 32-hex-digit digest shaped like a UUID (JAATO's ids are UUID strings); formatted by
    hand because this runs for every message of every upload."""
    h = hex_digest
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{h[16:20]}-{h[20:32]}"


class ToolPairProblemKind(StrEnum):
    ORPHAN_RESULT = "orphan_result"
    UNANSWERED_CALL = "unanswered_call"


class ToolPairProblem(BaseModel):
    """A tool result without its call, or a call without its result: providers refuse both.

    ``turn`` is the stable index of the turn holding the message (None for a summary or notice
    a collector inserted), ``position`` its place in the history it was found in, ``agent_id``
    the sub-agent whose conversation it is in (None for the session's own).
    """

    kind: ToolPairProblemKind
    call_id: str
    tool_name: str
    message_id: str
    turn: int | None
    position: int
    agent_id: str | None = None


def tool_pair_problems(
    history: Sequence[Message], agent_id: str | None = None
) -> list[ToolPairProblem]:
    """Every broken tool pair of a history, in history order.

    Results are matched to calls in order: each result answers the earliest call before it with
    its id that no other result answered yet. A result with none is an orphan; a call no result
    answered is unanswered. Calls and results that carry no id cannot be matched and are left
    alone (a legacy OpenAI ``function_call``, say).
    """
    layout = turn_layout(history)
    waiting: dict[str, list[tuple[int, FunctionCall]]] = {}
    found: list[tuple[int, ToolPairProblem]] = []

    def problem(kind: ToolPairProblemKind, position: int, call_id: str, name: str) -> None:
        turn = layout.indices[layout.turn_of(position)]
        found.append(
            (
                position,
                ToolPairProblem(
                    kind=kind,
                    call_id=call_id,
                    tool_name=name,
                    message_id=history[position].message_id,
                    turn=turn,
                    position=position,
                    agent_id=agent_id,
                ),
            )
        )

    for position, message in enumerate(history):
        for part in message.parts:
            response = part.function_response
            if response is not None and response.call_id:
                calls = waiting.get(response.call_id)
                if calls:
                    calls.pop(0)
                else:
                    problem(
                        ToolPairProblemKind.ORPHAN_RESULT,
                        position,
                        response.call_id,
                        response.name,
                    )
            call = part.function_call
            if call is not None and call.id:
                waiting.setdefault(call.id, []).append((position, call))
    for calls in waiting.values():
        for position, call in calls:
            assert call.id is not None
            problem(ToolPairProblemKind.UNANSWERED_CALL, position, call.id, call.name)
    found.sort(key=lambda item: item[0])
    return [item for _, item in found]
