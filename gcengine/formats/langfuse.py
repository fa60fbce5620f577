"""Langfuse exports: a trace as the UI's "Download JSON" gives it (camelCase, ``observations``),
a list of such traces, or observation rows as the blob export writes them (snake_case, one a
line, with the trace's fields on each row).

Each ``GENERATION`` observation is one model call. Its ``input`` is usually the provider's
message list (OpenAI Chat Completions or Anthropic Messages, read by those readers; JSON text
is decoded first) and its ``output`` the reply; calls are put together into the history as
``calls`` describes. Usage (``usageDetails``, ``usage_details`` or the older ``usage``): the
call's context size is ``input`` plus every ``input_*`` / ``*_input_tokens`` figure, since
Langfuse keeps cached input apart. Every other observation (spans, tools, events) and the
trace's own fields are kept in ``Session.metadata["langfuse"]``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from gcengine._json import embedded_json, expect_list, expect_mapping, json_type, text_or_none
from gcengine.errors import JsonPath, SessionFormatError
from gcengine.formats import anthropic, openai
from gcengine.formats.calls import RecordedCall, assemble_calls
from gcengine.formats.common import ParsedSession, record_step
from gcengine.messages import (
    FunctionResponse,
    Message,
    Part,
    Role,
    derive_message_id,
    tool_pair_problems,
)
from gcengine.session import RecordedUsage, SourceFormat

OBSERVATION_TYPES = frozenset(
    {
        "GENERATION",
        "SPAN",
        "EVENT",
        "AGENT",
        "TOOL",
        "CHAIN",
        "RETRIEVER",
        "EVALUATOR",
        "GUARDRAIL",
        "EMBEDDING",
    }
)


def _is_observation(item: Any) -> bool:
    return (
        isinstance(item, Mapping)
        and text_or_none(item.get("type")) in OBSERVATION_TYPES
        and ("traceId" in item or "trace_id" in item)
    )


def _is_trace(item: Any) -> bool:
    return isinstance(item, Mapping) and isinstance(item.get("observations"), list)


def looks_like_langfuse(data: Any) -> bool:
    if isinstance(data, Mapping):
        return _is_trace(data) or _is_observation(data)
    return isinstance(data, list) and any(
        _is_trace(item) or _is_observation(item) for item in data[:50]
    )


def _field(row: Mapping[str, Any], camel: str, snake: str) -> Any:
    return row[camel] if camel in row else row.get(snake)


def read_export(data: Any) -> ParsedSession:
    parsed = ParsedSession(source_format=SourceFormat.LANGFUSE, history=[])
    observations: list[tuple[Mapping[str, Any], JsonPath]] = []
    traces: list[dict[str, Any]] = []
    items = [data] if isinstance(data, Mapping) else expect_list(data, ())
    for position, raw in enumerate(items):
        path: JsonPath = () if isinstance(data, Mapping) else (record_step(items, position),)
        item = expect_mapping(raw, path)
        if _is_trace(item):
            traces.append({k: v for k, v in item.items() if k != "observations"})
            parsed.session_id = parsed.session_id or text_or_none(
                _field(item, "sessionId", "session_id")
            )
            for index, observation in enumerate(item["observations"]):
                observation_path = (*path, "observations", index)
                observations.append(
                    (expect_mapping(observation, observation_path), observation_path)
                )
        else:
            observations.append((item, path))
    ordered = sorted(enumerate(observations), key=lambda entry: (_moment(entry[1][0]), entry[0]))
    calls: list[RecordedCall] = []
    others: list[dict[str, Any]] = []
    for _, (observation, path) in ordered:
        _note_identity(parsed, observation)
        if observation.get("type") == "GENERATION":
            calls.append(_call(parsed, observation, path))
        else:
            others.append(dict(observation))
    if not calls:
        raise SessionFormatError(
            "the export has no GENERATION observation: there is no model call to read"
        )
    assemble_calls(parsed, calls)
    _answer_from_tools(parsed, [o for o in others if o.get("type") == "TOOL"])
    kept: dict[str, Any] = {}
    if traces:
        kept["traces"] = traces
    if others:
        kept["observations"] = others
    if kept:
        parsed.metadata["langfuse"] = kept
    return parsed


def _answer_from_tools(parsed: ParsedSession, tools: list[dict[str, Any]]) -> None:
    """A trace that ends with tool runs holds their results only as TOOL observations (no
    later call sent them): those that answer a call still waiting are added to the history."""
    waiting = {problem.call_id for problem in tool_pair_problems(parsed.history)}
    calls = {c.id: c.name for m in parsed.history for c in m.function_calls if c.id in waiting}
    for tool in tools:
        metadata = tool.get("metadata")
        call_id = (
            _field(metadata, "toolCallId", "tool_call_id")
            if isinstance(metadata, Mapping)
            else None
        )
        if not isinstance(call_id, str) or call_id not in calls:
            continue
        response = FunctionResponse(
            call_id=call_id, name=calls.pop(call_id), result=tool.get("output")
        )
        parts = [Part.from_function_response(response)]
        made = len(parsed.history) + sum(len(c.replaced) for c in parsed.compactions)
        turn = parsed.history[-1].turn_index if parsed.history else None
        parsed.history.append(
            Message(
                role=Role.TOOL,
                parts=parts,
                message_id=derive_message_id(made, Role.TOOL, parts),
                turn_index=turn,
                metadata={"observation": text_or_none(tool.get("id"))},
            )
        )


def _moment(observation: Mapping[str, Any]) -> str:
    """Start times sort as text once both spellings (``T...Z`` and the blob export's space)
    are made alike."""
    start = _field(observation, "startTime", "start_time")
    return start.replace(" ", "T") if isinstance(start, str) else ""


def _note_identity(parsed: ParsedSession, observation: Mapping[str, Any]) -> None:
    parsed.session_id = parsed.session_id or text_or_none(
        _field(observation, "sessionId", "session_id")
    )
    parsed.session_id = parsed.session_id or text_or_none(
        _field(observation, "traceId", "trace_id")
    )
    start = text_or_none(_field(observation, "startTime", "start_time"))
    end = text_or_none(_field(observation, "endTime", "end_time"))
    parsed.created_at = parsed.created_at or start
    parsed.updated_at = end or start or parsed.updated_at


def _call(parsed: ParsedSession, observation: Mapping[str, Any], path: JsonPath) -> RecordedCall:
    model = text_or_none(observation.get("model")) or text_or_none(
        _field(observation, "providedModelName", "provided_model_name")
    )
    parsed.model = model or parsed.model
    call_id = text_or_none(observation.get("id")) or f"generation {len(parsed.recorded_usage)}"
    at = text_or_none(_field(observation, "startTime", "start_time"))
    return RecordedCall(
        call_id=call_id,
        inputs=_messages(parsed, observation.get("input"), (*path, "input"), Role.USER),
        outputs=_messages(parsed, observation.get("output"), (*path, "output"), Role.MODEL),
        at=at,
        usage=_usage(observation, call_id, at),
        record={
            "observation": {k: v for k, v in observation.items() if k not in ("input", "output")}
        },
    )


def _messages(parsed: ParsedSession, value: Any, path: JsonPath, role: Role) -> list[Message]:
    """A generation's input or output as messages, read by the provider's own reader."""
    if isinstance(value, str):
        with contextlib.suppress(SessionFormatError):  # not JSON: plain text, a prompt, a reply
            value = embedded_json(value, path)
    if value is None:
        return []
    if isinstance(value, str):
        return [_text_message(value, role)]
    if isinstance(value, Mapping):
        if isinstance(value.get("messages"), list):
            container: Any = value
        elif "role" in value:
            container = [value]
        else:
            raise SessionFormatError(
                "must be a message, a list of messages or an object with messages", path
            )
    elif isinstance(value, list):
        container = value
    else:
        raise SessionFormatError(f"must be messages or text, not {json_type(value)}", path)
    try:
        if anthropic.looks_like_anthropic(container):
            found = anthropic.read_messages(container)
        else:
            found = openai.read_chat_completions(container)
    except SessionFormatError as error:
        raise SessionFormatError(error.reason, (*path, *error.path)) from None
    for instruction in found.system_instructions:
        if all(known.text != instruction.text for known in parsed.system_instructions):
            parsed.system_instructions.append(
                instruction.model_copy(
                    update={"key": f"{instruction.key}_{len(parsed.system_instructions)}"}
                )
            )
    return found.history


def _text_message(text: str, role: Role) -> Message:
    return Message(role=role, parts=[Part.from_text(text)], message_id="")


def _usage(observation: Mapping[str, Any], call_id: str, at: str | None) -> RecordedUsage | None:
    usage = _field(observation, "usageDetails", "usage_details")
    if not isinstance(usage, Mapping):
        usage = observation.get("usage")
    if not isinstance(usage, Mapping):
        return None
    figures = {
        key: value
        for key, value in usage.items()
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0
    }
    prompt_keys = [
        key
        for key in figures
        if key in ("input", "promptTokens", "prompt_tokens", "input_tokens")
        or key.startswith("input_")
        or key.endswith("_input_tokens")
    ]
    if not prompt_keys:
        return None

    def first(*keys: str) -> int | None:
        return next((figures[key] for key in keys if key in figures), None)

    return RecordedUsage(
        prompt_tokens=sum(figures[key] for key in prompt_keys),
        output_tokens=first("output", "output_tokens", "completionTokens", "completion_tokens"),
        cache_read_tokens=first(
            "input_cached_tokens", "cache_read_input_tokens", "input_cache_read"
        ),
        cache_creation_tokens=first("cache_creation_input_tokens", "input_cache_creation"),
        response_id=call_id,
        at=at,
    )
