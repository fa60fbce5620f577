"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Each line is ``{timestamp, type, payload}``. ``response_item`` payloads are the model's
context (Responses items: messages, tool calls and outputs, reasoning) and become the history,
read as OpenAI Responses items are; each message keeps its lines' timestamps and other fields
in ``metadata["source"]``. ``session_meta`` gives the session's id, start and base
instructions; ``turn_context`` the model; ``event_msg`` ``token_count`` the provider's figures
for each call (``last_token_usage``, whose ``input_tokens`` include cached input) and the
model's context window. Every line that is not a response item is kept in
``Session.metadata["codex"]["records"]``: the ``event_msg`` copies of messages the UI shows,
turn contexts, rate limits.

A ``compacted`` line replaces the context: with its ``replacement_history`` when the line
carries one (remote compaction, where ``message`` is empty and the summary is an opaque
encrypted item), else with its summary ``message`` as one summary message. Codex records no
figures on the line itself: ``tokens_before`` and ``tokens_after`` are the context sizes of
the last call before it and the first call after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gcengine._fast import construct
from gcengine._json import (
    default_if_null,
    expect_list,
    expect_mapping,
    expect_str,
    json_type,
    parse_count,
    text_or_none,
)
from gcengine.errors import JsonPath, SessionFormatError
from gcengine.formats.common import (
    ParsedSession,
    Replacement,
    record_step,
    settle_replacements,
)
from gcengine.formats.openai import read_responses_item
from gcengine.messages import Message, MessageKind, Part, Role, derive_message_id
from gcengine.session import (
    ContextLimitOrigin,
    RecordedUsage,
    SourceFormat,
    SystemInstruction,
)

LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
# A response item's fields that its parts hold; the rest is kept with the message.
_CONTENT_FIELDS = frozenset(
    {"content", "arguments", "input", "output", "summary", "encrypted_content", "action"}
)


def looks_like_codex(records: list[Any]) -> bool:
    return any(
        isinstance(record, Mapping)
        and text_or_none(record.get("type")) in LINE_TYPES
        and "payload" in record
        for record in records[:50]
    )


@dataclass
class _Compacted:
    """A ``compacted`` line, until the turns around it are numbered."""

    label: str
    at: str | None
    payload: Mapping[str, Any]
    replaced: list[Message]
    usage_seen: int


@dataclass
class _Reading:
    parsed: ParsedSession
    call_names: dict[str, str] = field(default_factory=dict)
    made: int = 0  # messages made so far, every context counted: seeds unique ids
    compacted: list[_Compacted] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    last_total: dict[str, Any] = field(default_factory=dict)


def read_rollout(records: list[Any]) -> ParsedSession:
    reading = _Reading(ParsedSession(source_format=SourceFormat.CODEX, history=[]))
    parsed = reading.parsed
    for position, raw in enumerate(records):
        step = record_step(records, position)
        path: JsonPath = (step,)
        line = expect_mapping(raw, path)
        kind = line.get("type")
        if not isinstance(kind, str):
            raise SessionFormatError(
                f"a rollout line needs a type, not {json_type(kind)}", (*path, "type")
            )
        at = text_or_none(line.get("timestamp"))
        if kind not in LINE_TYPES:
            reading.records.append({"at": step, "record": dict(line)})
            continue
        payload = expect_mapping(line.get("payload"), (*path, "payload"))
        if kind == "response_item":
            _read_item(reading, payload, (*path, "payload"), step, at)
        elif kind == "compacted":
            _read_compacted(reading, payload, (*path, "payload"), step, at)
        else:
            if kind == "session_meta":
                _read_meta(parsed, payload, (*path, "payload"))
            elif kind == "turn_context":
                parsed.model = text_or_none(payload.get("model")) or parsed.model
            elif payload.get("type") == "token_count":
                _read_token_count(parsed, payload, (*path, "payload"), at, reading.last_total)
            reading.records.append({"at": step, "record": dict(line)})
        if at:
            parsed.updated_at = at
    if not parsed.history and not reading.compacted:
        raise SessionFormatError(
            "the rollout has no response items: there is no conversation to read"
        )
    _settle_compactions(reading)
    if reading.records:
        parsed.metadata["codex"] = {"records": reading.records}
    if parsed.recorded_usage:
        parsed.recorded_prompt_tokens = parsed.recorded_usage[-1].prompt_tokens
    return parsed


def _read_meta(parsed: ParsedSession, payload: Mapping[str, Any], path: JsonPath) -> None:
    parsed.session_id = parsed.session_id or expect_str(
        payload.get("id"), (*path, "id"), optional=True
    )
    parsed.created_at = parsed.created_at or text_or_none(payload.get("timestamp"))
    base = payload.get("base_instructions")
    text = base.get("text") if isinstance(base, Mapping) else None
    if isinstance(text, str) and text and not parsed.system_instructions:
        parsed.system_instructions.append(
            SystemInstruction(key="base_instructions", label="Base instructions", text=text)
        )
    instructions = payload.get("instructions")
    if isinstance(instructions, str) and instructions:
        parsed.system_instructions.append(
            SystemInstruction(key="user_instructions", label="User instructions", text=instructions)
        )


def _read_item(
    reading: _Reading, item: Mapping[str, Any], path: JsonPath, step: str | int, at: str | None
) -> None:
    history = reading.parsed.history
    count = len(history)
    parts = len(history[-1].parts) if history else 0
    read_responses_item(reading.parsed, item, path, reading.made, reading.call_names)
    if len(history) > count:
        reading.made += 1
    elif not history or len(history[-1].parts) == parts:
        return  # a developer or system message: a system instruction, not history
    kept = {k: v for k, v in item.items() if k not in _CONTENT_FIELDS}
    history[-1].metadata.setdefault("source", []).append({"at": step, "timestamp": at, **kept})


def _read_token_count(
    parsed: ParsedSession,
    payload: Mapping[str, Any],
    path: JsonPath,
    at: str | None,
    seen: dict[str, Any],
) -> None:
    info = payload.get("info")
    if info is None:
        return  # rate limits only, before the first call
    info = expect_mapping(info, (*path, "info"))
    window = info.get("model_context_window")
    if window is not None:
        parsed.file_context_limit = parse_count(window, (*path, "info", "model_context_window"))
        parsed.context_limit_origin = ContextLimitOrigin.FILE
    last = info.get("last_token_usage")
    total = info.get("total_token_usage")
    if last is None or (total is not None and total == seen.get("total")):
        return  # Codex repeats a call's figures; the running total tells a new call
    seen["total"] = total
    usage_path: JsonPath = (*path, "info", "last_token_usage")
    usage = expect_mapping(last, usage_path)

    def figure(key: str) -> int | None:
        value = usage.get(key)
        return parse_count(value, (*usage_path, key)) if value is not None else None

    replying = next((m for m in reversed(parsed.history) if m.role is Role.MODEL), None)
    parsed.recorded_usage.append(
        RecordedUsage(
            prompt_tokens=figure("input_tokens") or 0,
            output_tokens=figure("output_tokens"),
            cache_read_tokens=figure("cached_input_tokens"),
            message_id=replying.message_id if replying is not None else None,
            at=at,
            context_window=parsed.file_context_limit,
        )
    )


def _read_compacted(
    reading: _Reading,
    payload: Mapping[str, Any],
    path: JsonPath,
    step: str | int,
    at: str | None,
) -> None:
    parsed = reading.parsed
    summary = expect_str(default_if_null(payload.get("message"), ""), (*path, "message")) or ""
    replaced = parsed.history
    parsed.history = []
    replacement = payload.get("replacement_history")
    if replacement is not None:
        items_path: JsonPath = (*path, "replacement_history")
        for position, raw in enumerate(expect_list(replacement, items_path)):
            item_path = (*items_path, position)
            _read_item(reading, expect_mapping(raw, item_path), item_path, step, at)
        if summary:
            parsed.history = [_marked_summary(m, summary) for m in parsed.history]
    elif summary:
        part = Part.from_text(summary)
        parsed.history.append(
            construct(
                Message,
                role=Role.USER,
                parts=[part],
                message_id=derive_message_id(reading.made, Role.USER, [part]),
                kind=MessageKind.SUMMARY,
                turn_index=None,
                metadata={"source": [{"at": step, "timestamp": at}]},
            )
        )
        reading.made += 1
    reading.compacted.append(
        _Compacted(
            label=str(step) if isinstance(step, str) else f"record {step}",
            at=at,
            payload={k: v for k, v in payload.items() if k != "replacement_history"},
            replaced=replaced,
            usage_seen=len(parsed.recorded_usage),
        )
    )


def _marked_summary(message: Message, summary: str) -> Message:
    """The replacement history's user message that carries the summary is a summary."""
    if message.role is Role.USER and summary in message.text:
        return message.model_copy(update={"kind": MessageKind.SUMMARY})
    return message


def _settle_compactions(reading: _Reading) -> None:
    """The figures around each compaction are the calls on either side of it."""
    usage = reading.parsed.recorded_usage
    replacements = []
    for compacted in reading.compacted:
        seen = compacted.usage_seen
        summary = compacted.payload.get("message")
        replacements.append(
            Replacement(
                compaction_id=compacted.label,
                replaced=compacted.replaced,
                at=compacted.at,
                tokens_before=usage[seen - 1].prompt_tokens if seen else None,
                tokens_after=usage[seen].prompt_tokens if seen < len(usage) else None,
                summary=summary if isinstance(summary, str) and summary else None,
                metadata=dict(compacted.payload),
            )
        )
    settle_replacements(reading.parsed, replacements)
