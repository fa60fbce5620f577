"""Claude Code transcripts: ``~/.claude/projects/<dir>/<session>.jsonl`` and its sub-agents.

Each line is a record. ``user`` and ``assistant`` rows carry an Anthropic message (``message``)
and become one message each, keyed by the row's ``uuid``, in file order; the rest of the row
(``parentUuid``, ``timestamp``, ``toolUseResult``, ...) is kept in the message's
``metadata["source"]``. A user row made only of tool results is a tool message. Every other
record (progress, file-history snapshots, queue operations, attachments, session titles,
``system`` notes) is kept in ``Session.metadata["claude_code"]["records"]``, never as a
message: none of it is the conversation the model saw.

Compactions: a ``system`` row of subtype ``compact_boundary`` (``compactMetadata``: trigger,
``preTokens``, ``postTokens``) ends the context; the ``isCompactSummary`` user row after it is
the summary (a summary message, never the user's words), and the rows after that are the new
context. The session's history is the context after the last compaction; each
``ObservedCompaction`` holds the rows it replaced.

Turns: only a person's prompt opens a turn. Rows Claude Code writes in the user's name for
other reasons stay messages of the turn in progress, marked ``metadata["injected"]`` with what
they are: skill text and caveats (``isMeta``), system reminders, background task
notifications, "[Request interrupted by user...]" and the wrappers of local commands
(``<command-name>``, ``<local-command-stdout>``); so is a compaction's summary.

Usage: one API response is written as several assistant rows that share ``message.id``; it is
recorded once (``Session.recorded_usage``), with the figures of its last row (the earlier
rows hold streaming snapshots).

Sub-agents: rows marked ``isSidechain`` in the session file, and the ``agent-<id>.jsonl``
files of a zip (``<session>/subagents/`` or beside the session), become ``Session.subagents``;
the ``acompact-`` agent is the one that wrote a compaction.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gcengine._fast import construct, set_fresh
from gcengine._json import expect_mapping, json_type, parse_count, text_or_none
from gcengine.errors import JsonPath, SessionFormatError
from gcengine.formats.anthropic import read_blocks
from gcengine.formats.common import (
    Archive,
    ParsedSession,
    Replacement,
    record_step,
    settle_replacements,
)
from gcengine.messages import Message, MessageKind, Part, PartType, Role, derive_message_id
from gcengine.session import RecordedUsage, Session, SourceFormat, Subagent

ROW_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "attachment",
    }
)
_ROW_KEYS = ("uuid", "sessionId", "leafUuid", "messageId")
_COMPACTION_AGENT = "acompact"
# What a user row's text starts with when Claude Code wrote it, not the person: the name kept
# in ``metadata["injected"]`` for each.
_INJECTED_OPENINGS = (
    ("<system-reminder>", "system-reminder"),
    ("<task-notification>", "task-notification"),
    ("[Request interrupted by user", "interruption"),
    ("<command-name>", "local-command"),
    ("<command-message>", "local-command"),
    ("<local-command-", "local-command"),
    ("<bash-input>", "local-command"),
    ("<bash-stdout>", "local-command"),
    ("<bash-stderr>", "local-command"),
)
_NO_MODEL = "<synthetic>"


def looks_like_claude_code(records: list[Any]) -> bool:
    return any(
        isinstance(record, Mapping)
        and text_or_none(record.get("type")) in ROW_TYPES
        and any(key in record for key in _ROW_KEYS)
        for record in records[:50]
    )


@dataclass
class _Thread:
    """One conversation being read: the session's own, or a sub-agent's."""

    messages: list[Message] = field(default_factory=list)
    usage: list[RecordedUsage] = field(default_factory=list)
    usage_by_response: dict[str, int] = field(default_factory=dict)
    boundaries: list[tuple[int, Mapping[str, Any]]] = field(default_factory=list)
    call_names: dict[str, str] = field(default_factory=dict)
    model: str | None = None


@dataclass
class _Reading:
    main: _Thread = field(default_factory=_Thread)
    sidechains: dict[str, _Thread] = field(default_factory=dict)  # by agent id
    records: list[dict[str, Any]] = field(default_factory=list)
    parent_calls: dict[str, str] = field(default_factory=dict)
    session_id: str | None = None
    first_at: str | None = None
    last_at: str | None = None
    title: str | None = None


def read_transcript(records: list[Any]) -> ParsedSession:
    """A session file on its own (its sidechain rows, if any, become sub-agents)."""
    reading = _Reading()
    for position, raw in enumerate(records):
        step = record_step(records, position)
        _read_row(reading, reading.main, raw, (step,), step)
    return _parsed(reading)


def read_archive(archive: Archive) -> ParsedSession:
    """A zip of one session file with its ``subagents`` folder (or ``agent-*.jsonl`` beside)."""
    sessions = [name for name in archive.members if not _is_agent_file(name)]
    if len(sessions) != 1:
        named = ", ".join(sorted(sessions)[:5]) or "none"
        raise SessionFormatError(
            f"the archive must hold exactly one session transcript besides agent-*.jsonl "
            f"files; it holds {len(sessions)} ({named})"
        )
    main_name = sessions[0]
    reading = _Reading()
    for step, raw in _lines(archive.members[main_name], main_name):
        _read_row(reading, reading.main, raw, (step,), step)
    for name in sorted(archive.members):
        if name == main_name:
            continue
        agent_id = name.rsplit("/", 1)[-1].removeprefix("agent-").removesuffix(".jsonl")
        thread = reading.sidechains.setdefault(agent_id, _Thread())
        for step, raw in _lines(archive.members[name], name):
            _read_row(reading, thread, raw, (step,), step)
    return _parsed(reading)


def _is_agent_file(name: str) -> bool:
    return name.rsplit("/", 1)[-1].startswith("agent-")


def _lines(member: Any, name: str) -> list[tuple[str, Any]]:
    """An archive member's records, each with the label errors name it by."""
    if isinstance(member, Mapping):
        return [(f"{name} line 1", member)]  # a file of one line is plain JSON
    if not isinstance(member, list):
        raise SessionFormatError(f"must hold JSON Lines records, not {json_type(member)}", (name,))
    steps = (record_step(member, i) for i in range(len(member)))
    return [(str(step), raw) for step, raw in zip(steps, member, strict=True)]


def _read_row(
    reading: _Reading, thread: _Thread, raw: Any, path: JsonPath, step: str | int
) -> None:
    row = expect_mapping(raw, path)
    kind = row.get("type")
    if not isinstance(kind, str):
        raise SessionFormatError(f"a record needs a type, not {json_type(kind)}", (*path, "type"))
    timestamp = text_or_none(row.get("timestamp"))
    in_session_file = thread is reading.main
    if timestamp and in_session_file:
        reading.first_at = reading.first_at or timestamp
        reading.last_at = timestamp
    if reading.session_id is None and isinstance(row.get("sessionId"), str):
        reading.session_id = row["sessionId"]
    _note_parent_call(reading, row)
    if in_session_file and row.get("isSidechain") is True:
        agent = text_or_none(row.get("agentId")) or "sidechain"
        thread = reading.sidechains.setdefault(agent, _Thread())
    if kind in ("user", "assistant"):
        _read_message_row(thread, row, kind, path)
        return
    if kind == "system" and row.get("subtype") == "compact_boundary":
        thread.boundaries.append((len(thread.messages), row))
        return
    if kind == "summary" and in_session_file and isinstance(row.get("summary"), str):
        reading.title = row["summary"]
    reading.records.append({"at": step, "record": dict(row)})


def _note_parent_call(reading: _Reading, row: Mapping[str, Any]) -> None:
    """Which tool call started which sub-agent: ``agent_progress`` rows and ``Task`` results
    name the agent's id."""
    data = row.get("data")
    if isinstance(data, Mapping) and data.get("type") == "agent_progress":
        agent, call = data.get("agentId"), row.get("parentToolUseID") or row.get("toolUseID")
        if isinstance(agent, str) and isinstance(call, str):
            reading.parent_calls.setdefault(agent, call)
    result = row.get("toolUseResult")
    message = row.get("message")
    if isinstance(result, Mapping) and isinstance(message, Mapping):
        agent = result.get("agentId")
        content = message.get("content")
        if isinstance(agent, str) and isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping) and isinstance(block.get("tool_use_id"), str):
                    reading.parent_calls.setdefault(agent, block["tool_use_id"])


def _read_message_row(thread: _Thread, row: Mapping[str, Any], kind: str, path: JsonPath) -> None:
    message = expect_mapping(row.get("message"), (*path, "message"))
    parts = read_blocks(message.get("content"), (*path, "message", "content"), thread.call_names)
    if kind == "assistant":
        role = Role.MODEL
    elif parts and all(part.type is PartType.FUNCTION_RESPONSE for part in parts):
        role = Role.TOOL
    else:
        role = Role.USER
    uuid = row.get("uuid")
    if uuid is not None and (not isinstance(uuid, str) or not uuid):
        raise SessionFormatError("must be a non-empty string", (*path, "uuid"))
    message_id = uuid or derive_message_id(len(thread.messages), role, parts)
    source = {**row, "message": {k: v for k, v in message.items() if k != "content"}}
    metadata: dict[str, Any] = {"source": source}
    model = text_or_none(message.get("model"))
    if model and model != _NO_MODEL:
        metadata["model"] = model
        thread.model = model
    summary = row.get("isCompactSummary") is True
    if role is Role.USER and not summary and (injected := _injected(row, parts)):
        metadata["injected"] = injected
    thread.messages.append(
        construct(
            Message,
            role=role,
            parts=parts,
            message_id=message_id,
            kind=MessageKind.SUMMARY if summary else MessageKind.CHAT,
            turn_index=None,
            metadata=metadata,
        )
    )
    if kind == "assistant" and message.get("usage") is not None:
        _record_usage(thread, row, message, message_id, path)


def _injected(row: Mapping[str, Any], parts: list[Any]) -> str | None:
    """What a user row is when Claude Code wrote it rather than the person (None for a
    prompt): every text it holds is a reminder, a notification, an interruption or a local
    command's wrapper, or the row is marked ``isMeta``."""
    if row.get("isMeta") is True:
        return "meta"
    texts = [part.text.lstrip() for part in parts if part.type is PartType.TEXT and part.text]
    found: set[str] = set()
    for text in texts:
        name = next((n for opening, n in _INJECTED_OPENINGS if text.startswith(opening)), None)
        if name is None:
            return None
        found.add(name)
    return "+".join(sorted(found)) or None


def _stamp_prompt_turns(messages: list[Message]) -> None:
    """Number turns so that only a person's prompt opens one (see the module's docstring).

    A prompt that arrives while a call made earlier still waits for its result (a person who
    typed while a tool ran) joins the turn in progress, so no turn parts a call from its
    result. Rows before the first prompt share its turn, and a compaction's summary is the
    turn in progress's (it stands apart all the same, as every summary does).
    """
    answered = {
        part.function_response.call_id
        for message in messages
        for part in message.parts
        if part.function_response is not None
    }
    waiting: set[str | None] = set()
    turn, begun = 0, False
    for message in messages:
        prompt = (
            message.kind is MessageKind.CHAT
            and message.role is Role.USER
            and not message.is_function_response
            and "injected" not in message.metadata
        )
        if prompt:
            if begun and not waiting:
                turn += 1
            begun = True
        elif message.role is Role.MODEL:
            begun = True
        for part in message.parts:
            if part.function_call is not None and part.function_call.id in answered:
                waiting.add(part.function_call.id)
            if part.function_response is not None:
                waiting.discard(part.function_response.call_id)
        set_fresh(message, "turn_index", turn)


def _record_usage(
    thread: _Thread,
    row: Mapping[str, Any],
    message: Mapping[str, Any],
    message_id: str,
    path: JsonPath,
) -> None:
    at: JsonPath = (*path, "message", "usage")
    usage = expect_mapping(message["usage"], at)

    def figure(key: str) -> int | None:
        value = usage.get(key)
        return parse_count(value, (*at, key)) if value is not None else None

    fresh, read, written = (
        figure("input_tokens"),
        figure("cache_read_input_tokens"),
        figure("cache_creation_input_tokens"),
    )
    response_id = text_or_none(message.get("id")) or text_or_none(row.get("requestId"))
    earlier = thread.usage_by_response.get(response_id) if response_id else None
    recorded = RecordedUsage(
        prompt_tokens=(fresh or 0) + (read or 0) + (written or 0),
        output_tokens=figure("output_tokens"),
        cache_read_tokens=read,
        cache_creation_tokens=written,
        message_id=thread.usage[earlier].message_id if earlier is not None else message_id,
        response_id=response_id,
        at=(
            thread.usage[earlier].at if earlier is not None else text_or_none(row.get("timestamp"))
        ),
        model=model if (model := text_or_none(message.get("model"))) != _NO_MODEL else None,
    )
    if earlier is not None:
        thread.usage[earlier] = recorded
        return
    if response_id:
        thread.usage_by_response[response_id] = len(thread.usage)
    thread.usage.append(recorded)


def _parsed(reading: _Reading) -> ParsedSession:
    main = reading.main
    if not main.messages:
        raise SessionFormatError(
            "the transcript has no user or assistant rows: there is no conversation"
        )
    parsed = ParsedSession(
        source_format=SourceFormat.CLAUDE_CODE,
        history=[],
        session_id=reading.session_id,
        model=main.model,
        description=reading.title,
        created_at=reading.first_at,
        updated_at=reading.last_at,
        recorded_usage=main.usage,
        recorded_prompt_tokens=main.usage[-1].prompt_tokens if main.usage else None,
        metadata={"claude_code": {"records": reading.records}} if reading.records else {},
    )
    _split_at_compactions(parsed, main)
    for agent_id, thread in reading.sidechains.items():
        _stamp_prompt_turns(thread.messages)
        parsed.subagents.append(
            Subagent(
                agent_id=agent_id,
                history=thread.messages,
                parent_call_id=reading.parent_calls.get(agent_id),
                is_compaction=agent_id.startswith(_COMPACTION_AGENT),
                recorded_usage=thread.usage,
                metadata={"compactions": [dict(row) for _, row in thread.boundaries]}
                if thread.boundaries
                else {},
            )
        )
    return parsed


def _split_at_compactions(parsed: ParsedSession, thread: _Thread) -> None:
    """The context after the last compaction becomes the history; each compaction keeps the
    context it replaced.

    A summary row with no boundary just before it (as older versions wrote them) is a
    compaction of its own, with nothing recorded but its summary.
    """
    messages = thread.messages
    cuts: list[tuple[int, Mapping[str, Any] | None]] = list(thread.boundaries)
    marked = {position for position, _ in cuts}
    for position, message in enumerate(messages):
        if message.kind is MessageKind.SUMMARY and not any(0 <= position - b <= 2 for b in marked):
            cuts.append((position, None))
    cuts.sort(key=lambda cut: cut[0])
    _stamp_prompt_turns(messages)
    replacements = []
    start = 0
    for position, row in cuts:
        summary = next(
            (m for m in messages[position : position + 3] if m.kind is MessageKind.SUMMARY), None
        )
        replacements.append(_replacement(row, messages[start:position], summary))
        start = position
    parsed.history = messages[start:]
    settle_replacements(parsed, replacements)


def _replacement(
    row: Mapping[str, Any] | None, replaced: list[Message], summary: Message | None
) -> Replacement:
    meta = row.get("compactMetadata") if row is not None else None
    meta = meta if isinstance(meta, Mapping) else {}

    def tokens(*keys: str) -> int | None:
        for key in keys:
            value = meta.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
        return None

    if row is not None and isinstance(row.get("uuid"), str):
        compaction_id = row["uuid"]
    else:
        assert summary is not None, "a compaction without a boundary is found by its summary"
        compaction_id = summary.message_id
    recorded = row if row is not None else summary.metadata["source"] if summary else {}
    return Replacement(
        compaction_id=compaction_id,
        replaced=replaced,
        at=text_or_none(recorded.get("timestamp")),
        trigger=text_or_none(meta.get("trigger")),
        tokens_before=tokens("preTokens", "pre_tokens"),
        tokens_after=tokens("postTokens", "post_tokens"),
        summary=summary.text if summary is not None and summary.text else None,
        metadata=dict(row) if row is not None else {},
    )


# --- Writing ----------------------------------------------------------------------------------

# Fields of the row a written summary or notice copies from the row before it, so it reads as
# one of the session's own rows.
_SESSION_FIELDS = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "slug")
_UUID_NAMESPACE = uuid.UUID("6f1c6a4e-2a54-4a43-9a55-1f6d0f6b4c1d")


def write_transcript(session: Session) -> str:
    """The session's context as a Claude Code transcript (JSON Lines) that Claude Code can
    resume: each kept row as it was read (its content written back from its parts), the rows
    a collection removed gone, and the ``parentUuid`` chain re-linked: each row's parent is the
    row before it, so walking back from the last row visits every row written, in order
    (Claude Code's own file branches at parallel tool calls and at the progress rows left out,
    which a chain through removed rows could not follow).

    Only the conversation is written: not the progress, file-history and other records kept
    in ``metadata``, nor a tool result row's ``toolUseResult``, nor the rows of earlier
    compactions (the context ended at the last one), nor the sub-agents' files. The last
    compaction's boundary row stays before its summary when the summary is kept. A summary or
    notice this engine wrote becomes a user row in Claude Code's own shape: a summary that opens
    the context marked ``isCompactSummary`` (as Claude Code marks its own), any other ``isMeta``.
    """
    rows: list[dict[str, Any]] = []
    history_ids = {message.message_id for message in session.history}
    last = session.compactions[-1] if session.compactions else None
    if last is not None and last.summary_message_id in history_ids and last.metadata:
        rows.append(dict(last.metadata))
    for message in session.history:
        source = message.metadata.get("source")
        if isinstance(source, Mapping) and source.get("type") in ("user", "assistant"):
            row = _kept_row(source, message)
        else:
            row = _written_row(message, rows[-1] if rows else None, session.session_id)
        row["parentUuid"] = rows[-1]["uuid"] if rows else None
        rows.append(row)
    return "".join(
        json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows
    )


def _kept_row(source: Mapping[str, Any], message: Message) -> dict[str, Any]:
    """A row read from the file, as it was: its content written back from the message, less
    ``toolUseResult``, the second copy of a tool's output Claude Code keeps for its display
    (a quarter to a half of a long session's file; the result itself is in the content)."""
    row = {k: v for k, v in source.items() if k != "toolUseResult"}
    body = dict(row.get("message") or {})
    body["content"] = _content(message, plain_prompt=row.get("type") == "user")
    row["message"] = body
    return row


def _written_row(
    message: Message, before: Mapping[str, Any] | None, session_id: str
) -> dict[str, Any]:
    """A message with no row of its own (a summary or notice a collection wrote)."""
    row: dict[str, Any] = {"parentUuid": before.get("uuid") if before else None}
    row.update({k: before[k] for k in _SESSION_FIELDS if before is not None and k in before})
    row.setdefault("sessionId", session_id)
    row["type"] = "user" if message.role is not Role.MODEL else "assistant"
    row["message"] = {
        "role": "assistant" if message.role is Role.MODEL else "user",
        "content": _content(message, plain_prompt=message.role is not Role.MODEL),
    }
    opens_context = before is None or before.get("subtype") == "compact_boundary"
    if message.kind is MessageKind.SUMMARY and opens_context:
        row["isCompactSummary"] = True
        row["isVisibleInTranscriptOnly"] = True
    elif message.kind is not MessageKind.CHAT:
        # Claude Code reads a summary row as the start of a context: one further on is a note.
        row["isMeta"] = True
    row["uuid"] = _row_uuid(message.message_id)
    if before is not None and "timestamp" in before:
        row["timestamp"] = before["timestamp"]
    return row


def _row_uuid(message_id: str) -> str:
    """The message's id when it is a UUID, as Claude Code's row ids are; else one made from it,
    the same every time."""
    try:
        return str(uuid.UUID(message_id))
    except ValueError:
        return str(uuid.uuid5(_UUID_NAMESPACE, message_id))


def _content(message: Message, *, plain_prompt: bool) -> str | list[dict[str, Any]]:
    """A message's parts as Anthropic content blocks; a prompt of text alone as the string
    Claude Code writes for one."""
    if plain_prompt and len(message.parts) == 1 and message.parts[0].type is PartType.TEXT:
        part = message.parts[0]
        if not part.extra:
            return part.text or ""
    return [_written_block(part) for part in message.parts]


def _written_block(part: Part) -> dict[str, Any]:
    """One part as the Anthropic content block it was read from (``anthropic.read_blocks``)."""
    if part.type is PartType.TEXT:
        return {"type": "text", "text": part.text, **part.extra}
    if part.type is PartType.THOUGHT:
        return {"type": "thinking", "thinking": part.text, **part.extra}
    if part.function_call is not None:
        call = part.function_call
        return {
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": call.args,
            **part.extra,
        }
    if part.function_response is not None:
        response = part.function_response
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": response.call_id,
            "content": response.result,
        }
        if response.is_error:
            block["is_error"] = True
        return {**block, **response.extra}
    if part.inline_data is not None:
        data = part.inline_data
        source = {"type": "base64", "media_type": data.mime_type, "data": data.data}
        return {"type": "image", "source": source}
    assert part.opaque is not None
    return {"type": part.opaque.kind, **part.opaque.data}
