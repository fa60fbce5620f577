"""JAATO session files (formats 1.x, 2.1, 2.10) and bare budget snapshots.

Writing produces format 2.1, which every JAATO build reads. What 2.1 has no field for travels
where JAATO ignores it: ``message_id``, ``kind`` and ``turn_index`` on each message, thoughts
and opaque parts as ``unknown`` parts (JAATO shows those as "[Unrecognized part: ...]", as it
does for its own), and the rest of the engine's view (system instructions, the recorded budget,
where the session came from) under ``metadata["gcengine"]``. Reading our own output back
therefore gives an equal session.

Fixes over JAATO's reader: message ids that JAATO regenerates on every load are re-attached to
the recorded budget by position (``msg_<i>`` is history index ``i``); summaries and notices
that JAATO stored as user messages are recognised, so neither is taken for the user's request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gcengine._fast import construct, fields_sets_shared, set_fresh
from gcengine._json import (
    default_if_null,
    expect_list,
    expect_mapping,
    expect_str,
    json_type,
    parse_count,
    parse_enum,
    show,
)
from gcengine.budget import (
    DEFAULT_SOURCE_POLICIES,
    InstructionBudget,
    InstructionSource,
    SourceEntry,
)
from gcengine.errors import JsonPath, SessionFormatError
from gcengine.formats.common import ParsedSession, validate_model, validate_models
from gcengine.messages import (
    FunctionCall,
    FunctionResponse,
    InlineData,
    Message,
    MessageKind,
    Part,
    PartType,
    Role,
    derive_message_id,
    split_into_turns,
)
from gcengine.session import (
    ContextLimitOrigin,
    InterruptedTurn,
    ObservedCompaction,
    RecordedUsage,
    Session,
    SourceFormat,
    Subagent,
    SystemInstruction,
    TurnAccounting,
)
from gcengine.session.calibration import ProviderCounting
from gcengine.tokens import scaled_parts

ENGINE_METADATA_KEY = "gcengine"
WRITTEN_VERSION = "2.1"
_VERSION = re.compile(r"^[12]\.\d+$")
SUMMARY_OPENING = "[Context Summary - Previous conversation compressed]"
NOTICE_OPENING = "[System: "

# Top-level fields read into typed ``Session`` fields; every other key is kept in ``extra``.
_TYPED_KEYS = frozenset(
    {
        "version",
        "session_id",
        "description",
        "created_at",
        "updated_at",
        "turn_count",
        "turn_accounting",
        "user_inputs",
        "metadata",
        "history",
        "budget_state",
        "interrupted_turn",
    }
)
_MESSAGE_KEYS = frozenset({"role", "parts", "message_id", "kind", "turn_index"})


def looks_like_session_file(data: Any) -> bool:
    return isinstance(data, Mapping) and "history" in data and "version" in data


def looks_like_history(data: list[Any]) -> bool:
    """A session file's ``history`` on its own (an agent passing the conversation it holds):
    messages made of ``parts``, which no other format this engine reads has."""
    return all(isinstance(m, Mapping) and isinstance(m.get("parts"), list) for m in data)


def read_history(data: list[Any]) -> ParsedSession:
    """The messages of a ``history`` list, read as the session file's are."""
    history = [_read_message(raw, (i,), i) for i, raw in enumerate(data)]
    return ParsedSession(source_format=SourceFormat.JAATO, history=history)


def looks_like_budget_snapshot(data: Any) -> bool:
    return isinstance(data, Mapping) and "entries" in data and "messages" not in data


def read_budget_snapshot(data: Mapping[str, Any]) -> ParsedSession:
    budget = InstructionBudget.from_snapshot(data)
    return ParsedSession(
        source_format=SourceFormat.JAATO_BUDGET_SNAPSHOT,
        history=[],
        session_id=budget.session_id or None,
        file_context_limit=budget.context_limit,
        recorded_budget=budget,
    )


def read_session_file(data: Mapping[str, Any]) -> ParsedSession:
    version = data.get("version")
    if not isinstance(version, str) or not _VERSION.match(version):
        raise SessionFormatError(
            f"unsupported JAATO session version {show(version)} (1.x and 2.x are read)",
            ("version",),
        )
    session_id = expect_str(data.get("session_id"), ("session_id",))
    created_at = _timestamp(data.get("created_at"), ("created_at",))
    updated_at = _timestamp(data.get("updated_at"), ("updated_at",))
    # JAATO writes the number of turns; it is worked out again from the history, but a file
    # whose count is no count is refused rather than read as if it said nothing.
    if data.get("turn_count") is not None:
        parse_count(data["turn_count"], ("turn_count",))
    raw_history = expect_list(data.get("history", []), ("history",))
    history = [_read_message(raw, ("history", i), i) for i, raw in enumerate(raw_history)]
    metadata = dict(expect_mapping(default_if_null(data.get("metadata"), {}), ("metadata",)))
    engine_view = metadata.pop(ENGINE_METADATA_KEY, None)
    parsed = ParsedSession(
        source_format=SourceFormat.JAATO,
        format_version=version,
        history=history,
        session_id=session_id,
        description=expect_str(data.get("description"), ("description",), optional=True),
        created_at=created_at,
        updated_at=updated_at,
        turn_accounting=_turn_accounting(data),
        user_inputs=_read_strings(default_if_null(data.get("user_inputs"), []), ("user_inputs",)),
        interrupted_turn=(
            validate_model(InterruptedTurn, data["interrupted_turn"], ("interrupted_turn",))
            if data.get("interrupted_turn") is not None
            else None
        ),
        metadata=metadata,
        extra={key: value for key, value in data.items() if key not in _TYPED_KEYS},
    )
    parsed.model = _model_name(data, history)
    rendered = data.get("rendered_instructions")
    if isinstance(rendered, str) and rendered:
        parsed.system_instructions.append(
            SystemInstruction(key="rendered_instructions", label="Instructions", text=rendered)
        )
    if data.get("budget_state") is not None:
        parsed.recorded_budget = _read_budget_state(data["budget_state"], history, parsed)
    if engine_view is not None:
        _apply_engine_view(parsed, engine_view)
    return parsed


def _timestamp(value: Any, path: JsonPath) -> str:
    """A time the engine reads (the session's start dates its budget entries): ISO 8601, as
    JAATO writes it."""
    text = expect_str(value, path)
    assert text is not None
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise SessionFormatError(
            f"must be a date and time such as 2026-03-01T10:15:00, not {show(text)}", path
        ) from None
    return text


def _read_strings(value: Any, path: JsonPath) -> list[str]:
    items = expect_list(value, path)
    for position, item in enumerate(items):
        expect_str(item, (*path, position))
    return list(items)


def _model_name(data: Mapping[str, Any], history: list[Message]) -> str | None:
    connection = data.get("connection")
    if isinstance(connection, Mapping) and isinstance(connection.get("model"), str):
        return str(connection["model"])
    for message in reversed(history):
        model = message.metadata.get("model")
        if isinstance(model, str) and model:
            return model
    return None


def _turn_accounting(data: Mapping[str, Any]) -> list[TurnAccounting]:
    raw = expect_list(default_if_null(data.get("turn_accounting"), []), ("turn_accounting",))
    accounting = validate_models(TurnAccounting, raw, ("turn_accounting",))
    fields_sets_shared(accounting)
    return accounting


def _read_message(raw: Any, path: JsonPath, position: int) -> Message:
    message = expect_mapping(raw, path)
    role = parse_enum(Role, message.get("role"), (*path, "role"))
    raw_parts = expect_list(message.get("parts"), (*path, "parts"))
    parts = [_read_part(p, (*path, "parts", i)) for i, p in enumerate(raw_parts)]
    message_id = message.get("message_id")
    if message_id is None:
        message_id = derive_message_id(position, role, parts)
    elif not isinstance(message_id, str) or not message_id:
        raise SessionFormatError("must be a non-empty string", (*path, "message_id"))
    kind = (
        parse_enum(MessageKind, message["kind"], (*path, "kind"))
        if "kind" in message
        else _recognise_kind(role, parts)
    )
    turn_index = message.get("turn_index")
    if turn_index is not None:
        turn_index = parse_count(turn_index, (*path, "turn_index"))
    return construct(
        Message,
        role=role,
        parts=parts,
        message_id=message_id,
        kind=kind,
        turn_index=turn_index,
        metadata=(
            {k: v for k, v in message.items() if k not in _MESSAGE_KEYS} if len(message) > 2 else {}
        ),
    )


def _recognise_kind(role: Role, parts: list[Part]) -> MessageKind:
    """JAATO writes its summaries and GC notices as user text; recognise them by their markers."""
    if role is not Role.USER or len(parts) != 1 or parts[0].type is not PartType.TEXT:
        return MessageKind.CHAT
    text = parts[0].text or ""
    if text.startswith(SUMMARY_OPENING):
        return MessageKind.SUMMARY
    if text.startswith(NOTICE_OPENING) and text.rstrip().endswith("]"):
        return MessageKind.NOTICE
    return MessageKind.CHAT


def _read_part(raw: Any, path: JsonPath) -> Part:
    part = expect_mapping(raw, path)
    kind = part.get("type")
    if kind == "text":
        text = part.get("text")
        return _with_written_extra(
            Part.from_text(text if type(text) is str else str(expect_str(text, (*path, "text")))),
            part,
            path,
        )
    if kind == "function_call":
        args = part.get("args")
        return _with_written_extra(
            Part.from_function_call(
                construct(
                    FunctionCall,
                    id=expect_str(part.get("id"), (*path, "id"), optional=True),
                    name=str(expect_str(part.get("name"), (*path, "name"))),
                    args=dict(expect_mapping(args, (*path, "args"))) if args is not None else {},
                )
            ),
            part,
            path,
        )
    if kind == "function_response":
        is_error = part.get("is_error", False)
        if not isinstance(is_error, bool):
            raise SessionFormatError(
                f"must be true or false, not {json_type(is_error)}", (*path, "is_error")
            )
        known = {"type", "call_id", "name", "result", "is_error"}
        return Part.from_function_response(
            construct(
                FunctionResponse,
                call_id=expect_str(part.get("call_id"), (*path, "call_id"), optional=True),
                name=str(expect_str(part.get("name", ""), (*path, "name"))),
                result=part.get("result"),
                is_error=is_error,
                extra={k: v for k, v in part.items() if k not in known},
            )
        )
    if kind == "inline_data":
        known = {"type", "mime_type", "data"}
        return Part.from_inline_data(
            construct(
                InlineData,
                mime_type=str(expect_str(part.get("mime_type"), (*path, "mime_type"))),
                data=str(expect_str(part.get("data"), (*path, "data"))),
                extra={k: v for k, v in part.items() if k not in known},
            )
        )
    if kind == "unknown":
        return _read_unknown_part(part, path)
    if not isinstance(kind, str):
        raise SessionFormatError(f"a part needs a type, not {json_type(kind)}", (*path, "type"))
    # A part type from a newer JAATO: carry it along untouched rather than refuse the session.
    return Part.from_opaque(kind, {k: v for k, v in part.items() if k != "type"})


def _with_written_extra(read: Part, part: Mapping[str, Any], path: JsonPath) -> Part:
    """A part's provider extras, which a dump writes under ``extra`` (JAATO ignores it)."""
    extra = part.get("extra")
    if extra is None:
        return read
    set_fresh(read, "extra", dict(expect_mapping(extra, (*path, "extra"))))
    return read


def _read_unknown_part(part: Mapping[str, Any], path: JsonPath) -> Part:
    """JAATO's ``unknown`` part, or one we wrote for a thought or an opaque part."""
    written_as = part.get("kind")
    if written_as == PartType.THOUGHT.value:
        extra = default_if_null(part.get("extra"), {})
        return Part.from_thought(
            str(expect_str(part.get("text"), (*path, "text"))),
            dict(expect_mapping(extra, (*path, "extra"))),
        )
    if written_as == PartType.OPAQUE.value:
        return Part.from_opaque(
            str(expect_str(part.get("opaque_kind"), (*path, "opaque_kind"))),
            dict(expect_mapping(default_if_null(part.get("data"), {}), (*path, "data"))),
        )
    expect_str(part.get("repr", ""), (*path, "repr"))
    return Part.from_opaque("unknown", {k: v for k, v in part.items() if k != "type"})


def _read_budget_state(
    raw: Any, history: list[Message], parsed: ParsedSession
) -> InstructionBudget:
    entry = SourceEntry.from_dict(
        raw,
        ("budget_state",),
        InstructionSource.CONVERSATION,
        DEFAULT_SOURCE_POLICIES[InstructionSource.CONVERSATION],
    )
    known_ids = {message.message_id for message in history}
    reattached = 0
    for key, child in entry.children.items():
        if all(mid in known_ids for mid in child.message_ids):
            continue
        match = re.fullmatch(r"msg_(\d+)", key)
        if match and int(match.group(1)) < len(history) and len(child.message_ids) <= 1:
            child.message_ids = [history[int(match.group(1))].message_id]
            reattached += 1
    if reattached:
        parsed.warnings.append(
            f"budget_state named {reattached} message ids that are not in the history "
            "(JAATO does not save message ids); they were matched to messages by position"
        )
    return InstructionBudget.model_construct(
        session_id=parsed.session_id or "",
        agent_id="main",
        agent_type=None,
        context_limit=0,
        entries={InstructionSource.CONVERSATION: entry},
    )


def _apply_engine_view(parsed: ParsedSession, view: Any) -> None:
    """Restore what a previous dump kept under ``metadata["gcengine"]``."""
    path: JsonPath = ("metadata", ENGINE_METADATA_KEY)
    view = expect_mapping(view, path)
    parsed.source_format = parse_enum(
        SourceFormat, view.get("source_format"), (*path, "source_format")
    )
    parsed.format_version = expect_str(
        view.get("format_version"), (*path, "format_version"), optional=True
    )
    parsed.model = expect_str(view.get("model"), (*path, "model"), optional=True)
    if view.get("context_limit") is not None:
        parsed.file_context_limit = parse_count(view["context_limit"], (*path, "context_limit"))
        parsed.context_limit_origin = parse_enum(
            ContextLimitOrigin,
            view.get("context_limit_origin", "file"),
            (*path, "context_limit_origin"),
        )
        parsed.context_limit_source = expect_str(
            view.get("context_limit_source"), (*path, "context_limit_source"), optional=True
        )
    if view.get("provider_scale") is not None:
        overheads = expect_list(view.get("context_overheads") or [], (*path, "context_overheads"))
        parsed.provider_counting = ProviderCounting(
            factor=_scale(view["provider_scale"], (*path, "provider_scale")),
            overhead=parse_count(view.get("unseen_overhead") or 0, (*path, "unseen_overhead")),
            overheads=tuple(
                None if value is None else parse_count(value, (*path, "context_overheads", i))
                for i, value in enumerate(overheads)
            ),
        )
    parsed.system_instructions = [
        validate_model(SystemInstruction, raw, (*path, "system_instructions", i))
        for i, raw in enumerate(
            expect_list(
                default_if_null(view.get("system_instructions"), []), (*path, "system_instructions")
            )
        )
    ]
    recorded = view.get("recorded_budget")
    parsed.recorded_budget = (
        InstructionBudget.from_snapshot(recorded, (*path, "recorded_budget"))
        if recorded is not None
        else None
    )
    prompt_tokens = view.get("recorded_prompt_tokens")
    parsed.recorded_prompt_tokens = (
        parse_count(prompt_tokens, (*path, "recorded_prompt_tokens"))
        if prompt_tokens is not None
        else None
    )
    parsed.warnings = _read_strings(default_if_null(view.get("warnings"), []), (*path, "warnings"))
    parsed.recorded_usage = _read_usage(view.get("recorded_usage"), (*path, "recorded_usage"))
    parsed.compactions = [
        _read_compaction(raw, (*path, "compactions", i))
        for i, raw in enumerate(
            expect_list(default_if_null(view.get("compactions"), []), (*path, "compactions"))
        )
    ]
    parsed.subagents = [
        _read_subagent(raw, (*path, "subagents", i))
        for i, raw in enumerate(
            expect_list(default_if_null(view.get("subagents"), []), (*path, "subagents"))
        )
    ]
    for field_name in _read_strings(default_if_null(view.get("absent"), []), (*path, "absent")):
        if field_name in ("created_at", "updated_at"):
            setattr(parsed, field_name, None)


def _read_usage(raw: Any, path: JsonPath) -> list[RecordedUsage]:
    return validate_models(RecordedUsage, expect_list(default_if_null(raw, []), path), path)


def _read_history(raw: Any, path: JsonPath) -> list[Message]:
    return [_read_message(m, (*path, i), i) for i, m in enumerate(expect_list(raw, path))]


def _read_compaction(raw: Any, path: JsonPath) -> ObservedCompaction:
    written = expect_mapping(raw, path)
    replaced = _read_history(default_if_null(written.get("replaced"), []), (*path, "replaced"))
    rest = {k: v for k, v in written.items() if k not in _COMPUTED_COMPACTION_FIELDS}
    compaction = validate_model(ObservedCompaction, {**rest, "replaced": []}, path)
    return compaction.model_copy(update={"replaced": replaced})


def _read_subagent(raw: Any, path: JsonPath) -> Subagent:
    written = expect_mapping(raw, path)
    history = _read_history(default_if_null(written.get("history"), []), (*path, "history"))
    agent = validate_model(Subagent, {**written, "history": []}, path)
    return agent.model_copy(update={"history": history})


_COMPUTED_COMPACTION_FIELDS = frozenset({"replaced_message_ids", "replaced_count"})


def _write_compaction(compaction: ObservedCompaction) -> dict[str, Any]:
    written = compaction.model_dump(mode="json", exclude={"replaced", *_COMPUTED_COMPACTION_FIELDS})
    written["replaced"] = [_write_message(m) for m in compaction.replaced]
    return written


def _write_subagent(agent: Subagent) -> dict[str, Any]:
    written = agent.model_dump(mode="json", exclude={"history"})
    written["history"] = [_write_message(m) for m in agent.history]
    return written


def _write_part(part: Part) -> dict[str, Any]:
    match part.type:
        case PartType.TEXT:
            if part.extra:
                return {"type": "text", "text": part.text, "extra": part.extra}
            return {"type": "text", "text": part.text}
        case PartType.FUNCTION_CALL:
            call = part.function_call
            assert call is not None
            written_call: dict[str, Any] = {
                "type": "function_call",
                "id": call.id,
                "name": call.name,
                "args": call.args,
            }
            if part.extra:
                written_call["extra"] = part.extra
            return written_call
        case PartType.FUNCTION_RESPONSE:
            response = part.function_response
            assert response is not None
            return {
                "type": "function_response",
                "call_id": response.call_id,
                "name": response.name,
                "result": response.result,
                "is_error": response.is_error,
                **response.extra,
            }
        case PartType.INLINE_DATA:
            data = part.inline_data
            assert data is not None
            return {
                "type": "inline_data",
                "mime_type": data.mime_type,
                "data": data.data,
                **data.extra,
            }
        case PartType.THOUGHT:
            written: dict[str, Any] = {
                "type": "unknown",
                "repr": f"Part(thought={part.text!r})",
                "kind": PartType.THOUGHT.value,
                "text": part.text,
            }
            if part.extra:
                written["extra"] = part.extra
            return written
        case PartType.OPAQUE:
            opaque = part.opaque
            assert opaque is not None
            if opaque.kind == "unknown":
                return {"type": "unknown", **opaque.data}
            return {
                "type": "unknown",
                "repr": f"Part({opaque.kind}=...)",
                "kind": PartType.OPAQUE.value,
                "opaque_kind": opaque.kind,
                "data": opaque.data,
            }


def _write_message(message: Message) -> dict[str, Any]:
    written: dict[str, Any] = {
        "role": message.role.value,
        "parts": [_write_part(part) for part in message.parts],
        **message.metadata,
        "message_id": message.message_id,
    }
    if message.kind is not MessageKind.CHAT:
        written["kind"] = message.kind.value
    if message.turn_index is not None:
        written["turn_index"] = message.turn_index
    return written


def _provider_scale(session: Session) -> dict[str, Any]:
    """The factor and unseen overhead a session's figures were scaled by, when they were: a
    file read back counts alike even when its history no longer holds what they were
    measured from (a collected session's)."""
    scaled = scaled_parts(session.token_counter)
    if scaled is None:
        return {}
    return {
        "provider_scale": scaled[0],
        "unseen_overhead": session.unseen_overhead or 0,
        "context_overheads": list(session.context_overheads),
    }


def _scale(value: Any, path: JsonPath) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 100:
        raise SessionFormatError("must be a positive number below 100", path)
    return float(value)


def write_session_file(session: Session) -> dict[str, Any]:
    """The session as a JAATO 2.1 file (a JSON-ready dict)."""
    absent = [name for name in ("created_at", "updated_at") if getattr(session, name) is None]
    view: dict[str, Any] = {
        "source_format": session.source_format.value,
        "format_version": session.format_version,
        "model": session.model,
        "context_limit": session.context_limit,
        "context_limit_origin": session.context_limit_origin.value,
        **(
            {"context_limit_source": session.context_limit_source}
            if session.context_limit_source is not None
            else {}
        ),
        **_provider_scale(session),
        "system_instructions": [i.model_dump() for i in session.system_instructions],
        "recorded_budget": session.recorded_budget.snapshot() if session.recorded_budget else None,
        "recorded_prompt_tokens": session.recorded_prompt_tokens,
        "warnings": list(session.warnings),
        "absent": absent,
    }
    if session.recorded_usage:
        view["recorded_usage"] = [u.model_dump(mode="json") for u in session.recorded_usage]
    if session.compactions:
        view["compactions"] = [_write_compaction(c) for c in session.compactions]
    if session.subagents:
        view["subagents"] = [_write_subagent(a) for a in session.subagents]
    conversation = session.budget.get_entry(InstructionSource.CONVERSATION)
    written: dict[str, Any] = {
        "version": WRITTEN_VERSION,
        "session_id": session.session_id,
        "description": session.description,
        # JAATO requires both times; a session imported without them gets the epoch, and the
        # engine view remembers that they were absent.
        "created_at": session.created_at or "1970-01-01T00:00:00",
        "updated_at": session.updated_at or "1970-01-01T00:00:00",
        "turn_count": len(split_into_turns(session.history)),
        "turn_accounting": [t.model_dump(exclude_unset=True) for t in session.turn_accounting],
        "user_inputs": list(session.user_inputs),
        "metadata": {**session.metadata, ENGINE_METADATA_KEY: view},
        "history": [_write_message(message) for message in session.history],
        # Only for a session whose file recorded a budget: JAATO rebuilds a missing one at its
        # next model response, and a tree the engine drew for a file without one would add a
        # quarter to the export, enough to keep a large session from being uploaded again.
        "budget_state": (
            conversation.to_dict()
            if conversation is not None and session.recorded_budget is not None
            else None
        ),
        "interrupted_turn": (
            session.interrupted_turn.model_dump(exclude_unset=True)
            if session.interrupted_turn
            else None
        ),
    }
    for key, value in session.extra.items():
        written.setdefault(key, value)
    return written
