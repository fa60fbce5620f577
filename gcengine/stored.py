"""A session kept in pieces by whoever stores it, and read back without counting again.

A store (the dashboard) writes a session once and reads it back for every run, replay and
preview, so reading is what must be fast: ``session_record`` is everything but the history,
``message_records`` the history as plain JSON values (a store may keep them in pieces, turn by
turn), and ``budget_figures`` each message's tokens and what made them. Reading back
(``session_from_record``) builds the messages without validating them (they are the engine's
own output) and the budget from the figures kept, so nothing is counted again: the budget is
the one ``rebuild_budget`` gives, figure for figure.

Records are only for values these functions wrote: a file from anywhere else goes through
``load_session``, which checks everything and names what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter

from gcengine._fast import construct, fields_sets_shared
from gcengine.budget import InstructionBudget, InstructionSource
from gcengine.conversation import index_of
from gcengine.messages import (
    FunctionCall,
    FunctionResponse,
    InlineData,
    Message,
    MessageKind,
    OpaquePart,
    Part,
    PartType,
    Role,
)
from gcengine.session import (
    Session,
    message_figure,
    rebuild_budget,
    recorded_message_figures,
    user_inputs_shared,
)
from gcengine.tokens import TokenCounter, counter_by_name

Figure = tuple[int, str]
"""A message's tokens in the budget and what made the figure (``recorded`` or a counter)."""


def message_records(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The messages as JSON values, defaults left out (``messages_from_records`` reads them)."""
    return [_message_record(message) for message in messages]


def _message_record(message: Message) -> dict[str, Any]:
    record: dict[str, Any] = {
        "role": message.role.value,
        "id": message.message_id,
        "parts": [_part_record(part) for part in message.parts],
    }
    if message.kind is not MessageKind.CHAT:
        record["kind"] = message.kind.value
    if message.turn_index is not None:
        record["turn"] = message.turn_index
    if message.metadata:
        record["metadata"] = message.metadata
    return record


def _part_record(part: Part) -> dict[str, Any]:
    record: dict[str, Any] = {"type": part.type.value}
    if part.text is not None:
        record["text"] = part.text
    if part.function_call is not None:
        call = part.function_call
        record["call"] = {"id": call.id, "name": call.name, "args": call.args}
    if part.function_response is not None:
        response = part.function_response
        record["response"] = {
            "call_id": response.call_id,
            "name": response.name,
            "result": response.result,
            "is_error": response.is_error,
            "extra": response.extra,
        }
    if part.inline_data is not None:
        data = part.inline_data
        record["inline"] = {"mime_type": data.mime_type, "data": data.data, "extra": data.extra}
    if part.opaque is not None:
        record["opaque"] = {"kind": part.opaque.kind, "data": part.opaque.data}
    if part.extra:
        record["extra"] = part.extra
    return record


_ROLES = {role.value: role for role in Role}
_KINDS = {kind.value: kind for kind in MessageKind}
_PART_TYPES = {kind.value: kind for kind in PartType}


def messages_from_records(records: Sequence[Mapping[str, Any]]) -> list[Message]:
    """The messages ``message_records`` wrote, built without validation."""
    return [
        construct(
            Message,
            role=_ROLES[record["role"]],
            parts=[_part(part) for part in record["parts"]],
            message_id=record["id"],
            kind=_KINDS[record.get("kind", "chat")],
            turn_index=record.get("turn"),
            metadata=record.get("metadata", {}),
        )
        for record in records
    ]


def _part(record: Mapping[str, Any]) -> Part:
    values: dict[str, Any] = {
        "type": _PART_TYPES[record["type"]],
        "text": record.get("text"),
        "function_call": None,
        "function_response": None,
        "inline_data": None,
        "opaque": None,
        "extra": record.get("extra", {}),
    }
    if (call := record.get("call")) is not None:
        values["function_call"] = construct(FunctionCall, **call)
    if (response := record.get("response")) is not None:
        values["function_response"] = construct(FunctionResponse, **response)
    if (inline := record.get("inline")) is not None:
        values["inline_data"] = construct(InlineData, **inline)
    if (opaque := record.get("opaque")) is not None:
        values["opaque"] = construct(OpaquePart, **opaque)
    return construct(Part, **values)


def budget_figures(session: Session) -> list[Figure]:
    """Each history message's tokens and what made them, as the session's budget holds them
    (worked out again, with the session's counter, for a budget that does not describe the
    history)."""
    index = index_of(session.budget.get_entry(InstructionSource.CONVERSATION))
    if index is not None and index.counted_by is not None and index.describes(session.history):
        return list(zip(index.tokens, index.counted_by, strict=True))
    counter = counter_by_name(session.token_counter)
    recorded = recorded_message_figures(session.recorded_budget)
    return [message_figure(message, counter, recorded) for message in session.history]


# What a record leaves out: the history is kept apart, the budget follows from the rest.
_NOT_RECORDED = frozenset({"history", "budget"})
_RECORDED_FIELDS = tuple(name for name in Session.model_fields if name not in _NOT_RECORDED)

UserInputRecord = str | list[int]
"""A user input as a record holds it: ``[position, part]`` of the history's user message part
whose text it is (JAATO keeps every prompt twice, in the history and in ``user_inputs``: 8.5
MB of a 10,000-turn session's 10 MB record), or the text itself when no such part holds it."""


def user_input_records(session: Session) -> list[UserInputRecord]:
    """The session's user inputs as a record holds them."""
    where = {
        part.text: [position, number]
        for position, message in enumerate(session.history)
        if message.role is Role.USER
        for number, part in enumerate(message.parts)
        if part.text
    }
    return [where.get(text, text) for text in session.user_inputs]


def session_record(session: Session) -> dict[str, Any]:
    """Everything of the session but its history and its budget (which follows from the
    rest), as JSON values; the user inputs the history holds as places in it
    (``UserInputRecord``)."""
    record = session.model_dump(mode="json", exclude={*_NOT_RECORDED, "user_inputs"})
    return {**record, "user_inputs": user_input_records(session)}


def same_record(one: Session, other: Session) -> bool:
    """Whether two sessions' records hold the same (the user inputs compared as texts, as their
    places move with the history). A collected session shares every value its collection left
    alone with the session it came from, so this compares references, not megabytes of JSON."""
    return all(getattr(one, name) == getattr(other, name) for name in _RECORDED_FIELDS)


def session_record_json(session: Session) -> bytes:
    """``session_record`` as JSON text, written straight from the session: a long session's
    record is megabytes (its accounting), and building its values first, then their text,
    held both."""
    written = _SESSION_JSON.dump_json(session, exclude={*_NOT_RECORDED, "user_inputs"})
    inputs = _USER_INPUTS_JSON.dump_json(user_input_records(session))
    # The dump is one object with fields (a session always has its id): one more goes last.
    return b'%s,"user_inputs":%s}' % (written.removesuffix(b"}"), inputs)


_SESSION_JSON = TypeAdapter(Session)  # bytes straight from pydantic-core, with no text between
_USER_INPUTS_JSON = TypeAdapter(list[UserInputRecord])


def session_from_record(
    record: Mapping[str, Any],
    history: list[Message],
    figures: Sequence[Figure],
    counter: TokenCounter | None = None,
) -> Session:
    """The session ``session_record`` wrote, with its history and each message's figure (as
    ``budget_figures`` gave them): its budget is built from those figures, counting nothing
    but what lies outside the conversation (system instructions)."""
    recorded = record.get("user_inputs") or []
    session = Session.model_validate({**record, "user_inputs": [], "budget": InstructionBudget()})
    fields_sets_shared(session.turn_accounting)
    session = session.model_copy(update={"user_inputs": _user_inputs_of(recorded, history)})
    return session_with_history(session, history, figures, counter)


def session_with_history(
    session: Session,
    history: list[Message],
    figures: Sequence[Figure],
    counter: TokenCounter | None = None,
) -> Session:
    """``session`` with another history (a collection's, whose record is the session's), each
    message's figure given: its budget is built from those figures, as ``session_from_record``
    builds it."""
    if len(figures) != len(history):
        raise ValueError(f"{len(figures)} figures for {len(history)} messages")
    session = session.model_copy(update={"history": history})
    known = {id(message): figure for message, figure in zip(history, figures, strict=True)}
    session.budget = rebuild_budget(
        session,
        counter or counter_by_name(session.token_counter),
        figure=lambda message: known[id(message)],
    )
    return session


def _user_inputs_of(recorded: list[UserInputRecord], history: list[Message]) -> list[str]:
    """The user inputs a record holds, each the very string of the history part it names; a
    record written with every input as text (before inputs were recorded as places) is matched
    to the history by text."""
    texts = [item for item in recorded if isinstance(item, str)]
    if len(texts) == len(recorded):
        return user_inputs_shared(texts, history)
    return [
        item if isinstance(item, str) else (history[item[0]].parts[item[1]].text or "")
        for item in recorded
    ]
