"""OpenTelemetry GenAI spans, exported as OTLP JSON (``resourceSpans``) or as a list of spans.

Attributes are read in both spellings: OTLP's ``[{key, value: {stringValue | intValue | ...}}]``
and a plain object. A chat span (``gen_ai.operation.name`` ``chat``, ``generate_content`` or
``text_completion``, or any span carrying messages) is one model call: its
``gen_ai.input.messages`` and ``gen_ai.output.messages`` (JSON text or structured, on the span
or on one of its events) are put together into the history as ``calls`` describes;
``gen_ai.system_instructions`` and system messages become system instructions.

Message parts: ``text``, ``tool_call`` (``arguments`` as JSON or as text holding JSON),
``tool_call_response`` (``response``, or ``result`` as the registry's example spells it),
``reasoning``, ``blob`` and ``uri`` media, and ``compaction`` (its ``content`` is the summary:
kept as text, the message marked a summary); any other part is kept opaque.

Usage per call: ``gen_ai.usage.input_tokens`` (which, by the conventions, includes cached
input) is the call's context size, with the cache reads and writes (``cache_creation`` or
``cache_write``) and the output. A call marked ``gen_ai.conversation.compacted``, or whose
input holds a compaction part, is an observed compaction. Spans that are not model calls
(tools, agents, workflows) are kept in ``Session.metadata["otel"]["spans"]``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from gcengine._fast import construct
from gcengine._json import (
    embedded_json,
    expect_list,
    expect_mapping,
    expect_str,
    json_type,
    text_or_none,
)
from gcengine.errors import JsonPath, SessionFormatError
from gcengine.formats.calls import RecordedCall, assemble_calls
from gcengine.formats.common import ParsedSession, image_part_from_url, record_step
from gcengine.formats.openai import parse_arguments
from gcengine.messages import (
    FunctionCall,
    FunctionResponse,
    InlineData,
    Message,
    MessageKind,
    Part,
    Role,
)
from gcengine.session import RecordedUsage, SourceFormat, SystemInstruction

CHAT_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
INPUT, OUTPUT, SYSTEM = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
)
_ROLES = {"user": Role.USER, "assistant": Role.MODEL, "tool": Role.TOOL}
_MESSAGE_KEYS = (INPUT, OUTPUT, SYSTEM)


def looks_like_otel(data: Any) -> bool:
    if isinstance(data, Mapping):
        return isinstance(data.get("resourceSpans"), list)
    return isinstance(data, list) and any(
        isinstance(item, Mapping)
        and (
            isinstance(item.get("resourceSpans"), list)
            or ("spanId" in item and "traceId" in item and "attributes" in item)
        )
        for item in data[:50]
    )


def read_spans(data: Any) -> ParsedSession:
    spans = _spans(data)
    parsed = ParsedSession(source_format=SourceFormat.OTEL_GENAI, history=[])
    calls: list[RecordedCall] = []
    others: list[dict[str, Any]] = []
    call_names: dict[str, str] = {}
    ordered = sorted(enumerate(spans), key=lambda item: (_start(item[1][0]), item[0]))
    for _, (span, path) in ordered:
        attributes = _attributes(span, path)
        _note_identity(parsed, attributes, span)
        if not _is_call(attributes):
            others.append(dict(span))
            continue
        calls.append(_call(parsed, span, attributes, path, call_names))
    if not calls:
        raise SessionFormatError(
            "no span records a model call with its messages (gen_ai.input.messages or "
            "gen_ai.output.messages): was message content capture off?"
        )
    assemble_calls(parsed, calls)
    if others:
        parsed.metadata["otel"] = {"spans": others}
    return parsed


def _spans(data: Any) -> list[tuple[Mapping[str, Any], JsonPath]]:
    """Every span with where it is, from an OTLP export, a list of exports or a list of spans."""
    exports: list[tuple[Mapping[str, Any], JsonPath]]
    if isinstance(data, Mapping):
        exports = [(data, ())]
    else:
        items = expect_list(data, ())
        exports = []
        spans: list[tuple[Mapping[str, Any], JsonPath]] = []
        for position, raw in enumerate(items):
            path: JsonPath = (record_step(items, position),)
            item = expect_mapping(raw, path)
            if "resourceSpans" in item:
                exports.append((item, path))
            else:
                spans.append((item, path))
        if spans:
            return spans
    found: list[tuple[Mapping[str, Any], JsonPath]] = []
    for export, base in exports:
        resources = expect_list(export.get("resourceSpans"), (*base, "resourceSpans"))
        for r, raw_resource in enumerate(resources):
            resource_path = (*base, "resourceSpans", r)
            resource = expect_mapping(raw_resource, resource_path)
            scopes = expect_list(resource.get("scopeSpans", []), (*resource_path, "scopeSpans"))
            for s, raw_scope in enumerate(scopes):
                scope_path = (*resource_path, "scopeSpans", s)
                scope = expect_mapping(raw_scope, scope_path)
                spans_path = (*scope_path, "spans")
                for i, raw_span in enumerate(expect_list(scope.get("spans", []), spans_path)):
                    found.append((expect_mapping(raw_span, (*spans_path, i)), (*spans_path, i)))
    return found


def _start(span: Mapping[str, Any]) -> int:
    value = span.get("startTimeUnixNano")
    try:
        return int(value) if isinstance(value, int | str) else 0
    except ValueError:
        return 0


def _iso(nanos: Any) -> str | None:
    try:
        value = int(nanos)
    except (TypeError, ValueError):
        return None
    return datetime.fromtimestamp(value / 1e9, UTC).isoformat().replace("+00:00", "Z")


def _attributes(holder: Mapping[str, Any], path: JsonPath) -> dict[str, Any]:
    raw = holder.get("attributes", {})
    if isinstance(raw, Mapping):
        return dict(raw)
    values: dict[str, Any] = {}
    for position, item in enumerate(expect_list(raw, (*path, "attributes"))):
        item_path = (*path, "attributes", position)
        pair = expect_mapping(item, item_path)
        key = str(expect_str(pair.get("key"), (*item_path, "key")))
        values[key] = _any_value(pair.get("value"), (*item_path, "value"))
    return values


def _any_value(raw: Any, path: JsonPath) -> Any:
    """An OTLP ``AnyValue`` as plain JSON (64-bit integers come as text)."""
    if raw is None:
        return None
    value = expect_mapping(raw, path)
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            raise SessionFormatError("must be a whole number", (*path, "intValue")) from None
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        array = expect_mapping(value["arrayValue"], (*path, "arrayValue"))
        items = expect_list(array.get("values", []), (*path, "arrayValue", "values"))
        return [_any_value(v, (*path, "arrayValue", "values", i)) for i, v in enumerate(items)]
    if "kvlistValue" in value:
        listed = expect_mapping(value["kvlistValue"], (*path, "kvlistValue"))
        pairs = expect_list(listed.get("values", []), (*path, "kvlistValue", "values"))
        return {
            str(p.get("key")): _any_value(p.get("value"), (*path, "kvlistValue", "values", i))
            for i, p in enumerate(pairs)
            if isinstance(p, Mapping)
        }
    return value.get("bytesValue")


def _is_call(attributes: Mapping[str, Any]) -> bool:
    operation = attributes.get("gen_ai.operation.name")
    return text_or_none(operation) in CHAT_OPERATIONS or INPUT in attributes or OUTPUT in attributes


def _note_identity(
    parsed: ParsedSession, attributes: Mapping[str, Any], span: Mapping[str, Any]
) -> None:
    conversation = text_or_none(attributes.get("gen_ai.conversation.id"))
    parsed.session_id = parsed.session_id or conversation or text_or_none(span.get("traceId"))
    start, end = _iso(span.get("startTimeUnixNano")), _iso(span.get("endTimeUnixNano"))
    parsed.created_at = parsed.created_at or start
    parsed.updated_at = end or start or parsed.updated_at


def _message_attributes(
    span: Mapping[str, Any], attributes: dict[str, Any], path: JsonPath
) -> tuple[dict[str, Any], dict[str, JsonPath]]:
    """The message attributes of a call, from the span or, failing that, from its events."""
    found = {key: attributes[key] for key in _MESSAGE_KEYS if key in attributes}
    where: dict[str, JsonPath] = {key: (*path, "attributes", key) for key in found}
    events = span.get("events", [])
    for position, raw in enumerate(events if isinstance(events, list) else []):
        event_path = (*path, "events", position)
        event_attributes = _attributes(expect_mapping(raw, event_path), event_path)
        for key in _MESSAGE_KEYS:
            if key in event_attributes and key not in found:
                found[key] = event_attributes[key]
                where[key] = (*event_path, "attributes", key)
    return found, where


def _call(
    parsed: ParsedSession,
    span: Mapping[str, Any],
    attributes: dict[str, Any],
    path: JsonPath,
    call_names: dict[str, str],
) -> RecordedCall:
    found, where = _message_attributes(span, attributes, path)
    if SYSTEM in found:
        for part in _decoded(found[SYSTEM], where[SYSTEM]):
            text = part.get("content") if isinstance(part, Mapping) else part
            if isinstance(text, str):
                _system(parsed, text)
    inputs, summary = _messages(parsed, found.get(INPUT), where.get(INPUT, path), call_names)
    outputs, _ = _messages(parsed, found.get(OUTPUT), where.get(OUTPUT, path), call_names)
    model = text_or_none(attributes.get("gen_ai.response.model")) or text_or_none(
        attributes.get("gen_ai.request.model")
    )
    parsed.model = model or parsed.model
    compacted = attributes.get("gen_ai.conversation.compacted") is True or summary is not None
    return RecordedCall(
        call_id=text_or_none(span.get("spanId")) or f"span {len(parsed.recorded_usage)}",
        inputs=inputs,
        outputs=outputs,
        at=_iso(span.get("startTimeUnixNano")),
        usage=_usage(attributes, span),
        compacted=compacted,
        summary=summary or None,
        record={
            "span": {
                **{k: v for k, v in span.items() if k not in ("attributes", "events")},
                "attributes": {k: v for k, v in attributes.items() if k not in _MESSAGE_KEYS},
            }
        },
    )


def _system(parsed: ParsedSession, text: str) -> None:
    if all(instruction.text != text for instruction in parsed.system_instructions):
        parsed.system_instructions.append(
            SystemInstruction(
                key=f"system_{len(parsed.system_instructions)}", label="System prompt", text=text
            )
        )


def _decoded(value: Any, path: JsonPath) -> list[Any]:
    """A message attribute: structured, or JSON text (as spans record it)."""
    if isinstance(value, str):
        value = embedded_json(value, path)
    return expect_list(value, path)


def _messages(
    parsed: ParsedSession, value: Any, path: JsonPath, call_names: dict[str, str]
) -> tuple[list[Message], str | None]:
    """A call's messages, and the text of the compaction part among them (``""`` when one has
    no readable content, None when there is none)."""
    if value is None:
        return [], None
    messages: list[Message] = []
    summary: str | None = None
    for position, raw in enumerate(_decoded(value, path)):
        message_path = (*path, position)
        message = expect_mapping(raw, message_path)
        role = message.get("role")
        parts: list[Part] = []
        compaction_only = True
        for index, raw_part in enumerate(
            expect_list(message.get("parts"), (*message_path, "parts"))
        ):
            part_path = (*message_path, "parts", index)
            part, compaction = _part(expect_mapping(raw_part, part_path), part_path, call_names)
            if compaction is not None:
                summary = summary or compaction
            else:
                compaction_only = False
            parts.append(part)
        if role == "system":
            _system(parsed, "\n".join(p.text or "" for p in parts))
            continue
        if not isinstance(role, str) or role not in _ROLES:
            raise SessionFormatError(
                f"{json.dumps(role)} is not a message role (system, user, assistant, tool)"
                if isinstance(role, str)
                else f"a message needs a role, not {json_type(role)}",
                (*message_path, "role"),
            )
        metadata = {k: v for k, v in message.items() if k not in ("role", "parts")}
        messages.append(
            construct(
                Message,
                role=_ROLES[role],
                parts=parts,
                message_id="",
                kind=MessageKind.SUMMARY if parts and compaction_only else MessageKind.CHAT,
                turn_index=None,
                metadata=metadata,
            )
        )
    return messages, summary


def _part(
    part: Mapping[str, Any], path: JsonPath, call_names: dict[str, str]
) -> tuple[Part, str | None]:
    kind = part.get("type")
    rest = {k: v for k, v in part.items() if k != "type"}
    if kind == "text":
        return Part.from_text(str(expect_str(part.get("content"), (*path, "content")))), None
    if kind == "tool_call":
        name = str(expect_str(part.get("name"), (*path, "name")))
        call_id = expect_str(part.get("id"), (*path, "id"), optional=True)
        if call_id:
            call_names[call_id] = name
        arguments = part.get("arguments")
        args = (
            parse_arguments(arguments, (*path, "arguments"))
            if isinstance(arguments, str | Mapping)
            else {}
            if arguments is None
            else {"arguments": arguments}
        )
        return Part.from_function_call(FunctionCall(id=call_id, name=name, args=args)), None
    if kind == "tool_call_response":
        call_id = expect_str(part.get("id"), (*path, "id"), optional=True)
        result = part.get("response", part.get("result"))
        response = FunctionResponse(
            call_id=call_id, name=call_names.get(call_id or "", ""), result=result
        )
        return Part.from_function_response(response), None
    if kind == "reasoning":
        text = str(expect_str(part.get("content"), (*path, "content")))
        return Part.from_thought(text, {k: v for k, v in rest.items() if k != "content"}), None
    if kind == "compaction":
        content = expect_str(part.get("content"), (*path, "content"), optional=True)
        if content is None:
            return Part.from_opaque("compaction", rest), ""
        summary = Part.from_text(content).model_copy(
            update={
                "extra": {"type": "compaction", **{k: v for k, v in rest.items() if k != "content"}}
            }
        )
        return summary, content
    if kind == "blob":
        mime = str(
            expect_str(part.get("mime_type", "application/octet-stream"), (*path, "mime_type"))
        )
        data = str(expect_str(part.get("content"), (*path, "content")))
        return Part.from_inline_data(InlineData(mime_type=mime, data=data)), None
    if kind == "uri":
        uri = str(expect_str(part.get("uri"), (*path, "uri")))
        mime = text_or_none(part.get("mime_type")) or "image/*"
        return image_part_from_url(uri, mime), None
    if isinstance(kind, str):
        return Part.from_opaque(kind, rest), None
    raise SessionFormatError(f"a part needs a type, not {json_type(kind)}", (*path, "type"))


def _usage(attributes: Mapping[str, Any], span: Mapping[str, Any]) -> RecordedUsage | None:
    def figure(*keys: str) -> int | None:
        for key in keys:
            value = attributes.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
        return None

    prompt = figure("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
    if prompt is None:
        return None
    return RecordedUsage(
        prompt_tokens=prompt,
        output_tokens=figure("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        cache_read_tokens=figure(
            "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cached_tokens"
        ),
        cache_creation_tokens=figure(
            "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_write.input_tokens"
        ),
        response_id=text_or_none(attributes.get("gen_ai.response.id")),
        at=_iso(span.get("startTimeUnixNano")),
    )
