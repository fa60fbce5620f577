"""OpenHands event streams: a JSON list of events (or an evaluation record whose ``history``
is one), each ``{id, timestamp, source, action | observation, args | extras, cause,
tool_call_metadata}``.

* ``message`` actions are the user's and the agent's words; ``system`` actions are the system
  prompt.
* Every other action of the agent is a tool call, a model message of its own with its
  ``thought`` as text: named and identified by its ``tool_call_metadata``, or, without it, by
  the action and ``event-<id>``.
* An observation answers the call its ``tool_call_metadata`` names, or the action its
  ``cause`` points at; other events (state changes, recalls, the user's own commands) are
  kept in ``Session.metadata["openhands"]["events"]``, never as messages.
* Usage: each model response's ``usage`` (``prompt_tokens``, which includes cached input),
  once however many of its calls carry it.

A ``condensation`` action is an observed compaction: the events it forgets
(``forgotten_event_ids``, or the range ``forgotten_events_start_id`` to
``forgotten_events_end_id``) leave the context, and its ``summary``, if any, stands at
``summary_offset`` in what is left, replacing an earlier condensation's summary, as OpenHands
lays out its view. Events keep their message's ``metadata["source"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gcengine._fast import construct
from gcengine._json import (
    expect_list,
    expect_mapping,
    json_type,
    parse_count,
    show,
    text_or_none,
)
from gcengine.errors import JsonPath, SessionFormatError
from gcengine.formats.common import (
    ParsedSession,
    image_part_from_url,
    record_step,
    stamp_turn_indices,
)
from gcengine.messages import (
    FunctionCall,
    FunctionResponse,
    Message,
    MessageKind,
    Part,
    Role,
    derive_message_id,
)
from gcengine.session import ObservedCompaction, RecordedUsage, SourceFormat, SystemInstruction

_NOT_CALLS = frozenset(
    {"message", "system", "condensation", "recall", "change_agent_state", "null"}
)


def _is_event(item: Any) -> bool:
    return (
        isinstance(item, Mapping)
        and "source" in item
        and ("action" in item or "observation" in item)
    )


def looks_like_openhands(data: Any) -> bool:
    if isinstance(data, Mapping):
        history = data.get("history")
        return isinstance(history, list) and any(_is_event(e) for e in history[:50])
    return isinstance(data, list) and any(_is_event(e) for e in data[:50])


@dataclass
class _Condensed:
    event_id: int | None
    at: str | None
    args: Mapping[str, Any]
    context_before: list[str]
    replaced: list[Message]
    summary: Message | None
    made: int


@dataclass
class _Reading:
    parsed: ParsedSession
    context: list[tuple[int | None, Message]] = field(default_factory=list)
    everything: list[Message] = field(default_factory=list)
    calls: dict[int, tuple[str, str]] = field(default_factory=dict)
    responses: set[str] = field(default_factory=set)
    condensed: list[_Condensed] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    summary_id: str | None = None


def read_events(data: Any) -> ParsedSession:
    parsed = ParsedSession(source_format=SourceFormat.OPENHANDS, history=[])
    if isinstance(data, Mapping):
        events = expect_list(data.get("history"), ("history",))
        base: JsonPath = ("history",)
        parsed.metadata["openhands"] = {"record": {k: v for k, v in data.items() if k != "history"}}
        parsed.session_id = text_or_none(data.get("instance_id"))
    else:
        events, base = expect_list(data, ()), ()
    reading = _Reading(parsed)
    for position, raw in enumerate(events):
        step = record_step(events, position)
        path: JsonPath = (*base, step) if base else (step,)
        event = expect_mapping(raw, path)
        event_id = event.get("id")
        if event_id is not None:
            event_id = parse_count(event_id, (*path, "id"))
        at = text_or_none(event.get("timestamp"))
        parsed.created_at = parsed.created_at or at
        parsed.updated_at = at or parsed.updated_at
        if "action" in event:
            _read_action(reading, event, event_id, path)
        else:
            _read_observation(reading, event, event_id, path)
    if not reading.everything:
        raise SessionFormatError("the event stream has no messages, tool calls or results")
    _settle(reading)
    if reading.events:
        parsed.metadata.setdefault("openhands", {})["events"] = reading.events
    return parsed


def _add(
    reading: _Reading,
    event_id: int | None,
    role: Role,
    parts: list[Part],
    event: Mapping[str, Any],
    kind: MessageKind = MessageKind.CHAT,
) -> Message:
    message = construct(
        Message,
        role=role,
        parts=parts,
        message_id=derive_message_id(len(reading.everything), role, parts),
        kind=kind,
        turn_index=None,
        metadata={"source": [_without_content(event)]},
    )
    reading.everything.append(message)
    reading.context.append((event_id, message))
    return message


def _without_content(event: Mapping[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in event.items() if k not in ("message", "content")}
    args = event.get("args")
    if isinstance(args, Mapping) and "content" in args:
        kept["args"] = {k: v for k, v in args.items() if k != "content"}
    return kept


def _read_action(
    reading: _Reading, event: Mapping[str, Any], event_id: int | None, path: JsonPath
) -> None:
    action = event.get("action")
    if not isinstance(action, str):
        raise SessionFormatError(
            f"an action must be named, not {json_type(action)}", (*path, "action")
        )
    args = event.get("args", {})
    args = expect_mapping(args if args is not None else {}, (*path, "args"))
    source = event.get("source")
    if action == "system":
        text = text_or_none(args.get("content")) or text_or_none(event.get("message")) or ""
        reading.parsed.system_instructions.append(
            SystemInstruction(
                key=f"system_{len(reading.parsed.system_instructions)}",
                label="System prompt",
                text=text,
            )
        )
        return
    if action == "condensation":
        _condense(reading, event, event_id, args, path)
        return
    if action == "message":
        content = args.get("content", event.get("message"))
        if not isinstance(content, str):
            raise SessionFormatError(
                f"must be a string, not {json_type(content)}", (*path, "args", "content")
            )
        parts = [Part.from_text(content)] if content else []
        images = args.get("image_urls") or []
        for index, url in enumerate(expect_list(images, (*path, "args", "image_urls"))):
            if not isinstance(url, str):
                raise SessionFormatError("must be a string", (*path, "args", "image_urls", index))
            parts.append(image_part_from_url(url))
        if source not in ("user", "agent"):
            raise SessionFormatError(
                f"a message comes from the user or the agent, not {show(source)}",
                (*path, "source"),
            )
        _add(reading, event_id, Role.USER if source == "user" else Role.MODEL, parts, event)
        _record_usage(reading, event, path)
        return
    if action in _NOT_CALLS or source != "agent":
        reading.events.append(dict(event))
        return
    metadata = event.get("tool_call_metadata")
    metadata = (
        expect_mapping(metadata, (*path, "tool_call_metadata")) if metadata is not None else {}
    )
    call_id = text_or_none(metadata.get("tool_call_id")) or f"event-{event_id}"
    name = text_or_none(metadata.get("function_name")) or action
    if event_id is not None:
        reading.calls[event_id] = (call_id, name)
    call = Part.from_function_call(
        FunctionCall(id=call_id, name=name, args={k: v for k, v in args.items() if k != "thought"})
    )
    thought = text_or_none(args.get("thought"))
    _add(
        reading, event_id, Role.MODEL, [Part.from_text(thought), call] if thought else [call], event
    )
    _record_usage(reading, event, path)


def _record_usage(reading: _Reading, event: Mapping[str, Any], path: JsonPath) -> None:
    metadata = event.get("tool_call_metadata")
    response = metadata.get("model_response") if isinstance(metadata, Mapping) else None
    usage = response.get("usage") if isinstance(response, Mapping) else None
    response_id = text_or_none(response.get("id")) if isinstance(response, Mapping) else None
    if not isinstance(usage, Mapping) or usage.get("prompt_tokens") is None:
        return
    if response_id is not None:
        if response_id in reading.responses:
            return  # another call of a response already counted
        reading.responses.add(response_id)
    at: JsonPath = (*path, "tool_call_metadata", "model_response", "usage")
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    reading.parsed.recorded_usage.append(
        RecordedUsage(
            prompt_tokens=parse_count(usage["prompt_tokens"], (*at, "prompt_tokens")),
            output_tokens=(
                parse_count(usage["completion_tokens"], (*at, "completion_tokens"))
                if usage.get("completion_tokens") is not None
                else None
            ),
            cache_read_tokens=cached
            if isinstance(cached, int) and not isinstance(cached, bool)
            else None,
            message_id=reading.context[-1][1].message_id,
            response_id=response_id,
            at=text_or_none(event.get("timestamp")),
        )
    )
    model = response.get("model") if isinstance(response, Mapping) else None
    if isinstance(model, str):
        reading.parsed.model = model


def _read_observation(
    reading: _Reading, event: Mapping[str, Any], event_id: int | None, path: JsonPath
) -> None:
    observation = event.get("observation")
    if not isinstance(observation, str):
        raise SessionFormatError(
            f"an observation must be named, not {json_type(observation)}", (*path, "observation")
        )
    metadata = event.get("tool_call_metadata")
    metadata = (
        expect_mapping(metadata, (*path, "tool_call_metadata")) if metadata is not None else {}
    )
    cause = event.get("cause")
    call = (
        reading.calls.get(cause) if isinstance(cause, int) and not isinstance(cause, bool) else None
    )
    call_id = text_or_none(metadata.get("tool_call_id")) or (call[0] if call else None)
    if call_id is None:
        reading.events.append(dict(event))
        return
    name = text_or_none(metadata.get("function_name")) or (call[1] if call else observation)
    content = event.get("content", event.get("message", ""))
    extras = event.get("extras")
    response = FunctionResponse(
        call_id=call_id,
        name=name,
        result=content,
        is_error=observation == "error",
        extra={"observation": observation, **({"extras": extras} if extras is not None else {})},
    )
    _add(reading, event_id, Role.TOOL, [Part.from_function_response(response)], event)


def _condense(
    reading: _Reading,
    event: Mapping[str, Any],
    event_id: int | None,
    args: Mapping[str, Any],
    path: JsonPath,
) -> None:
    ids = args.get("forgotten_event_ids")
    if ids is not None:
        forgotten = {
            parse_count(v, (*path, "args", "forgotten_event_ids", i))
            for i, v in enumerate(expect_list(ids, (*path, "args", "forgotten_event_ids")))
        }
    else:
        start, end = args.get("forgotten_events_start_id"), args.get("forgotten_events_end_id")
        if start is None or end is None:
            raise SessionFormatError(
                "a condensation names the events it forgets: forgotten_event_ids, or "
                "forgotten_events_start_id and forgotten_events_end_id",
                (*path, "args"),
            )
        first = parse_count(start, (*path, "args", "forgotten_events_start_id"))
        last = parse_count(end, (*path, "args", "forgotten_events_end_id"))
        forgotten = set(range(first, last + 1))
    summary_text = args.get("summary")
    if summary_text is not None and not isinstance(summary_text, str):
        raise SessionFormatError(
            f"must be a string or null, not {json_type(summary_text)}", (*path, "args", "summary")
        )
    before = [message.message_id for _, message in reading.context]
    new_summary = bool(summary_text)
    kept: list[tuple[int | None, Message]] = []
    replaced: list[Message] = []
    for source_id, message in reading.context:
        stale_summary = new_summary and message.message_id == reading.summary_id
        if (source_id is not None and source_id in forgotten) or stale_summary:
            replaced.append(message)
        else:
            kept.append((source_id, message))
    summary: Message | None = None
    if summary_text:
        part = Part.from_text(summary_text)
        summary = construct(
            Message,
            role=Role.USER,
            parts=[part],
            message_id=derive_message_id(len(reading.everything), Role.USER, [part]),
            kind=MessageKind.SUMMARY,
            turn_index=None,
            metadata={"source": [dict(event)]},
        )
        offset = args.get("summary_offset")
        at = parse_count(offset, (*path, "args", "summary_offset")) if offset is not None else 0
        at = min(at, len(kept))
        kept.insert(at, (event_id, summary))
        reading.everything.append(summary)
        reading.summary_id = summary.message_id
    reading.context = kept
    reading.condensed.append(
        _Condensed(
            event_id,
            text_or_none(event.get("timestamp")),
            args,
            before,
            replaced,
            summary,
            len(reading.everything),
        )
    )


def _settle(reading: _Reading) -> None:
    """Number the turns in event order (a condensation's summary, like one a collector wrote,
    has none), then describe each condensation: it comes before its summary, or else before
    the first message after it, and before the first turn that started after it."""
    stamp_turn_indices([m for m in reading.everything if m.kind is not MessageKind.SUMMARY])
    parsed = reading.parsed
    parsed.history = [message for _, message in reading.context]
    if parsed.recorded_usage:
        parsed.recorded_prompt_tokens = parsed.recorded_usage[-1].prompt_tokens
    everything = reading.everything
    for condensed in reading.condensed:
        later = everything[condensed.made :]
        after = condensed.summary or (later[0] if later else None)
        turn = next((m.turn_index for m in later if m.turn_index is not None), None)
        parsed.compactions.append(
            ObservedCompaction(
                compaction_id=f"event {condensed.event_id}",
                source_format=SourceFormat.OPENHANDS,
                at=condensed.at,
                summary=condensed.summary.text if condensed.summary is not None else None,
                summary_message_id=condensed.summary.message_id if condensed.summary else None,
                before_turn=turn,
                before_message_id=after.message_id if after is not None else None,
                replaced=condensed.replaced,
                context_before=condensed.context_before,
                metadata=dict(condensed.args),
            )
        )
