"""Generated agent transcripts, one generator a format, with Hypothesis strategies over them.

Every generator builds a conversation of ``turns`` turns (a user request, then, every
``tool_every`` turns, a model message calling one or two tools and their results, then the
model's answer) in its format's published shape, with the format's recorded usage growing call
by call and, after the turns listed in ``compact_after``, the format's own compaction record.
``break_pairs`` drops the result of the first call (``"unanswered"``) or the call itself
(``"orphan"``), so the tool-pair report has something to find, or has the user speak between
that call and its result (``"interleaved"``), which must not part them. Nothing here is a real
session; the public samples are under ``tests/fixtures/formats``.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from typing import Any, Literal

from hypothesis import strategies as st

Breakage = Literal["none", "unanswered", "orphan", "interleaved"]
INTERJECTION = "While that runs: also check the docs."
SUMMARY_OPENING = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation."
)


@dataclass(frozen=True)
class Shape:
    turns: int = 4
    tool_every: int = 1
    parallel: bool = False
    compact_after: tuple[int, ...] = ()
    break_pairs: Breakage = "none"
    seed: int = 0
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolUse:
    call_id: str
    name: str
    args: dict[str, Any]
    result: str


@dataclass(frozen=True)
class Turn:
    """One generated turn, format-neutral: the request, the tool uses, the answer."""

    number: int
    request: str
    tools: list[ToolUse]
    answer: str
    prompt_tokens: int
    drop_result: bool
    drop_call: bool
    interject: bool


def plan(shape: Shape) -> list[Turn]:
    turns = []
    broken = False
    for number in range(shape.turns):
        uses = []
        if shape.tool_every and number % shape.tool_every == 0:
            count = 2 if shape.parallel else 1
            for index in range(count):
                call_id = f"call_{shape.seed}_{number}_{index}"
                uses.append(
                    ToolUse(
                        call_id=call_id,
                        name=["read_file", "run_tests"][index % 2],
                        args={"path": f"src/module_{number}.py", "n": number + index},
                        result=f"result {number}.{index}: " + "x" * (20 + number),
                    )
                )
        breaking = bool(uses) and not broken and shape.break_pairs != "none"
        broken = broken or breaking
        turns.append(
            Turn(
                number=number,
                request=f"Request {number} (seed {shape.seed}): please look at module {number}.",
                tools=uses,
                answer=f"Answer {number}: module {number} is fine.",
                prompt_tokens=1000 + 350 * number,
                drop_result=breaking and shape.break_pairs == "unanswered",
                drop_call=breaking and shape.break_pairs == "orphan",
                interject=breaking and shape.break_pairs == "interleaved",
            )
        )
    return turns


def jsonl(records: list[Any]) -> str:
    return "\n".join(json.dumps(record) for record in records) + "\n"


def zipped(members: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _at(number: int, step: int = 0) -> str:
    return f"2026-03-01T10:{number % 60:02d}:{step:02d}.000Z"


# --- Claude Code ------------------------------------------------------------------------------


def generated_claude_code_rows(shape: Shape) -> list[dict[str, Any]]:
    """A session file: user/assistant rows, a response split over rows sharing ``message.id``,
    progress and file-history rows, and ``compact_boundary`` + ``isCompactSummary`` rows."""
    session = f"gen-session-{shape.seed}"
    rows: list[dict[str, Any]] = []
    parent: str | None = None
    counter = 0

    def row(kind: str, **fields: Any) -> dict[str, Any]:
        nonlocal parent, counter
        counter += 1
        uuid = f"{shape.seed:04d}0000-0000-4000-8000-{counter:012d}"
        made = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/workspace/generated",
            "sessionId": session,
            "version": "2.1.39",
            "type": kind,
            "uuid": uuid,
            **fields,
        }
        parent = uuid
        rows.append(made)
        return made

    def usage(prompt: int, output: int) -> dict[str, Any]:
        return {
            "input_tokens": 3,
            "cache_creation_input_tokens": 200,
            "cache_read_input_tokens": prompt - 203,
            "output_tokens": output,
        }

    for turn in plan(shape):
        row("user", message={"role": "user", "content": turn.request}, timestamp=_at(turn.number))
        if shape.extras.get("progress", True):
            rows.append(
                {
                    "type": "file-history-snapshot",
                    "messageId": parent,
                    "snapshot": {"trackedFileBackups": {}},
                    "isSnapshotUpdate": False,
                }
            )
        if turn.tools:
            response = f"msg_gen_{shape.seed}_{turn.number}"
            blocks: list[dict[str, Any]] = [{"type": "text", "text": "Let me look."}]
            blocks += [
                {"type": "tool_use", "id": use.call_id, "name": use.name, "input": use.args}
                for use in turn.tools
                if not turn.drop_call
            ]
            # One API response written as one row per content block, sharing message.id; the
            # output figure grows as the response streams.
            for index, block in enumerate(blocks):
                row(
                    "assistant",
                    message={
                        "id": response,
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-5",
                        "content": [block],
                        "usage": usage(turn.prompt_tokens, 5 + 10 * index),
                    },
                    requestId=f"req_{response}",
                    timestamp=_at(turn.number, 1),
                )
            if shape.extras.get("progress", True):
                rows.append(
                    {
                        "type": "progress",
                        "data": {"type": "bash_progress", "output": "..."},
                        "toolUseID": turn.tools[0].call_id,
                        "parentToolUseID": turn.tools[0].call_id,
                        "uuid": f"progress-{shape.seed}-{turn.number}",
                        "timestamp": _at(turn.number, 2),
                    }
                )
            if turn.interject:
                row(
                    "user",
                    message={"role": "user", "content": INTERJECTION},
                    timestamp=_at(turn.number, 2),
                )
            for use in turn.tools:
                if turn.drop_result:
                    continue
                row(
                    "user",
                    message={
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": use.call_id,
                                "content": use.result,
                            }
                        ],
                    },
                    toolUseResult={"stdout": use.result, "stderr": "", "interrupted": False},
                    timestamp=_at(turn.number, 3),
                )
        row(
            "assistant",
            message={
                "id": f"msg_gen_{shape.seed}_{turn.number}_answer",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": turn.answer}],
                "usage": usage(turn.prompt_tokens + 120, 40),
            },
            timestamp=_at(turn.number, 4),
        )
        if turn.number in shape.compact_after:
            last = parent
            parent = None
            meta: dict[str, Any] = {"trigger": "auto", "preTokens": turn.prompt_tokens + 160}
            if shape.extras.get("post_tokens", True):
                meta["postTokens"] = 900 + turn.number
            row(
                "system",
                subtype="compact_boundary",
                content="Conversation compacted",
                isMeta=False,
                level="info",
                logicalParentUuid=last,
                compactMetadata=meta,
                timestamp=_at(turn.number, 5),
            )
            row(
                "user",
                message={
                    "role": "user",
                    "content": f"{SUMMARY_OPENING}\nSummary: turns up to {turn.number} done.",
                },
                isCompactSummary=True,
                isVisibleInTranscriptOnly=True,
                timestamp=_at(turn.number, 5),
            )
    rows.append({"type": "summary", "summary": "Generated session", "leafUuid": parent})
    return rows


def generated_claude_code_subagent(agent_id: str, shape: Shape) -> list[dict[str, Any]]:
    """A sub-agent's transcript: its rows are sidechain rows carrying its ``agentId``."""
    rows = generated_claude_code_rows(Shape(turns=2, seed=shape.seed + 1000, extras=shape.extras))
    return [{**r, "isSidechain": True, "agentId": agent_id} for r in rows if r["type"] != "summary"]


def generated_autonomous_claude_code_rows(
    calls_per_request: tuple[int, ...], compact_after: int | None = None
) -> list[dict[str, Any]]:
    """A Claude Code session as agents run today: each user request followed by that many
    model calls, each running a tool (its response written over two rows sharing its
    ``message.id``), the prompt growing by 1,000 tokens a call from 20,000, and, after call
    ``compact_after`` (counted over the session), an auto compaction that records no size
    after it (as Claude Code 2.1 writes none), after which the prompt starts again at 30,000."""
    rows: list[dict[str, Any]] = []
    parent: str | None = None

    def row(kind: str, **fields: Any) -> None:
        nonlocal parent
        uuid = f"00000000-0000-4000-8000-{len(rows):012d}"
        made = {"parentUuid": parent, "isSidechain": False, "sessionId": "autonomous"}
        made |= {"type": kind, "uuid": uuid, "version": "2.1.39"}
        rows.append(made | {"timestamp": _at(len(rows) // 60, len(rows) % 60)} | fields)
        parent = uuid

    prompt, number = 20_000, 0
    for request, calls in enumerate(calls_per_request):
        row("user", message={"role": "user", "content": f"Task {request}: fix every failing test."})
        for _ in range(calls):
            number += 1
            call_id = f"toolu_{number}"
            usage = {
                "input_tokens": 2,
                "cache_creation_input_tokens": 998,
                "cache_read_input_tokens": prompt - 1_000,
                "output_tokens": 50,
            }
            blocks = [
                {"type": "text", "text": f"Step {number}: running the tests again."},
                {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"step": number}},
            ]
            for block in blocks:
                message = {"id": f"msg_{number}", "role": "assistant", "model": "claude-opus-4-6"}
                row("assistant", message=message | {"content": [block], "usage": usage})
            output = f"step {number}: " + "test output line\n" * 40
            result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
            row("user", message={"role": "user", "content": [result]})
            prompt += 1_000
            if number == compact_after:
                last, parent = parent, None
                meta = {"trigger": "auto", "preTokens": prompt}
                row(
                    "system",
                    subtype="compact_boundary",
                    logicalParentUuid=last,
                    compactMetadata=meta,
                )
                summary = f"{SUMMARY_OPENING}\nSummary: steps up to {number} done."
                row("user", message={"role": "user", "content": summary}, isCompactSummary=True)
                prompt = 30_000
    return rows


# --- Codex ------------------------------------------------------------------------------------


def generated_codex_lines(shape: Shape) -> list[dict[str, Any]]:
    """A rollout: session_meta, turn contexts, response items, token counts (each repeated,
    as Codex writes them) and ``compacted`` lines, with a replacement history when
    ``extras["remote"]``."""
    lines: list[dict[str, Any]] = [
        {
            "timestamp": _at(0),
            "type": "session_meta",
            "payload": {
                "id": f"0199-gen-{shape.seed}",
                "timestamp": _at(0),
                "cwd": "/workspace/generated",
                "originator": "codex_cli_rs",
                "cli_version": "0.104.0",
                "base_instructions": {"text": "You are Codex, a coding agent."},
            },
        }
    ]
    total = 0

    def item(number: int, payload: dict[str, Any]) -> None:
        lines.append({"timestamp": _at(number, 1), "type": "response_item", "payload": payload})

    def tokens(number: int, prompt: int) -> None:
        nonlocal total
        total += prompt + 50
        info = {
            "total_token_usage": {
                "input_tokens": total,
                "output_tokens": 50,
                "total_tokens": total,
            },
            "last_token_usage": {
                "input_tokens": prompt,
                "cached_input_tokens": prompt // 2,
                "output_tokens": 50,
                "total_tokens": prompt + 50,
            },
            "model_context_window": 258400,
        }
        for _ in range(2):
            lines.append(
                {
                    "timestamp": _at(number, 2),
                    "type": "event_msg",
                    "payload": {"type": "token_count", "info": info, "rate_limits": {}},
                }
            )

    for turn in plan(shape):
        n = turn.number
        lines.append(
            {"timestamp": _at(n), "type": "turn_context", "payload": {"model": "gpt-5.3-codex"}}
        )
        item(
            n,
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": turn.request}],
            },
        )
        lines.append(
            {
                "timestamp": _at(n),
                "type": "event_msg",
                "payload": {"type": "user_message", "message": turn.request},
            }
        )
        if turn.tools:
            item(
                n,
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "Thinking."}],
                    "content": None,
                    "encrypted_content": "gAAAA",
                },
            )
            for use in turn.tools:
                if not turn.drop_call:
                    item(
                        n,
                        {
                            "type": "function_call",
                            "name": use.name,
                            "arguments": json.dumps(use.args),
                            "call_id": use.call_id,
                        },
                    )
            tokens(n, turn.prompt_tokens)
            if turn.interject:
                item(
                    n,
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": INTERJECTION}],
                    },
                )
            for use in turn.tools:
                if not turn.drop_result:
                    item(
                        n,
                        {
                            "type": "function_call_output",
                            "call_id": use.call_id,
                            "output": use.result,
                        },
                    )
        item(
            n,
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.answer}],
            },
        )
        tokens(n, turn.prompt_tokens + 120)
        if n in shape.compact_after:
            summary = f"Summary: turns up to {n} done."
            payload: dict[str, Any]
            if shape.extras.get("remote"):
                payload = {
                    "message": "",
                    "replacement_history": [
                        {
                            "type": "message",
                            "role": "user",
                            "content": [{"type": "input_text", "text": turn.request}],
                        },
                        {"type": "compaction", "encrypted_content": "gAAAA-compacted"},
                    ],
                }
            else:
                payload = {"message": summary}
            lines.append({"timestamp": _at(n, 5), "type": "compacted", "payload": payload})
            lines.append(
                {
                    "timestamp": _at(n, 5),
                    "type": "event_msg",
                    "payload": {"type": "context_compacted"},
                }
            )
    return lines


# --- OpenTelemetry GenAI ------------------------------------------------------------------------


def _otel_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_otel_value(v) for v in value]}}
    return {"stringValue": value}


def generated_otel_export(shape: Shape) -> dict[str, Any]:
    """An OTLP JSON export: one chat span per model call, each with the whole input so far, its
    output and usage; after a compaction the input starts with a ``compaction`` part and the
    span is marked ``gen_ai.conversation.compacted``. ``extras["flat"]`` writes attributes as
    a plain object instead of OTLP's key/value list."""
    spans = []
    context: list[dict[str, Any]] = []
    compacted = False
    call = 0
    start = 1_767_225_600_000_000_000

    def span(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]], prompt: int) -> None:
        nonlocal call
        call += 1
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "anthropic",
            "gen_ai.request.model": "claude-sonnet-4-6",
            "gen_ai.conversation.id": f"gen-conversation-{shape.seed}",
            "gen_ai.usage.input_tokens": prompt,
            "gen_ai.usage.output_tokens": 30,
            "gen_ai.usage.cache_read.input_tokens": prompt // 2,
            "gen_ai.system_instructions": json.dumps(
                [{"type": "text", "content": "You are a build agent."}]
            ),
            "gen_ai.input.messages": json.dumps(inputs),
            "gen_ai.output.messages": json.dumps(outputs),
        }
        if compacted:
            attributes["gen_ai.conversation.compacted"] = True
        spans.append(
            {
                "traceId": f"{shape.seed:032x}",
                "spanId": f"{call:016x}",
                "name": "chat claude-sonnet-4-6",
                "kind": "SPAN_KIND_CLIENT",
                "startTimeUnixNano": str(start + call * 1_000_000_000),
                "endTimeUnixNano": str(start + call * 1_000_000_000 + 500_000_000),
                "attributes": attributes
                if shape.extras.get("flat")
                else [{"key": k, "value": _otel_value(v)} for k, v in attributes.items()],
            }
        )

    for turn in plan(shape):
        context.append({"role": "user", "parts": [{"type": "text", "content": turn.request}]})
        if turn.tools:
            calls = [
                {"type": "tool_call", "id": u.call_id, "name": u.name, "arguments": u.args}
                for u in turn.tools
                if not turn.drop_call
            ]
            reply = {
                "role": "assistant",
                "parts": [{"type": "text", "content": "Let me look."}, *calls],
            }
            span(list(context), [reply], turn.prompt_tokens)
            context.append(reply)
            if turn.interject:
                context.append(
                    {"role": "user", "parts": [{"type": "text", "content": INTERJECTION}]}
                )
            results = [
                {"type": "tool_call_response", "id": u.call_id, "response": u.result}
                for u in turn.tools
                if not turn.drop_result
            ]
            if results:
                context.append({"role": "tool", "parts": results})
        answer = {
            "role": "assistant",
            "parts": [{"type": "text", "content": turn.answer}],
            "finish_reason": "stop",
        }
        span(list(context), [answer], turn.prompt_tokens + 120)
        context.append(answer)
        if turn.number in shape.compact_after:
            compacted = True
            summary = {"type": "compaction", "content": f"Summary: turns up to {turn.number} done."}
            context = [{"role": "user", "parts": [summary]}]
    resource = {
        "attributes": [{"key": "service.name", "value": {"stringValue": "generated-agent"}}]
    }
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": {"name": "gen"}, "spans": spans}]}
        ]
    }


# --- Langfuse ---------------------------------------------------------------------------------


def generated_langfuse_trace(shape: Shape) -> dict[str, Any] | list[dict[str, Any]]:
    """A trace download (camelCase) with one GENERATION per model call, each with the whole
    OpenAI-style input so far; ``extras["snake"]`` gives the blob export's snake_case rows."""
    snake = bool(shape.extras.get("snake"))
    observations = []
    context: list[dict[str, Any]] = [{"role": "system", "content": "You are a build agent."}]
    trace_id = f"gen-trace-{shape.seed}"

    def generation(output: dict[str, Any], prompt: int) -> None:
        number = len(observations)
        start = f"2026-01-01T00:{number // 60:02d}:{number % 60:02d}.000Z"
        row = {
            "id": f"gen-{number}",
            "traceId": trace_id,
            "type": "GENERATION",
            "name": "chat",
            "model": "gpt-4.1",
            "startTime": start,
            "endTime": start,
            "input": list(context),
            "output": output,
            "usageDetails": {"input": prompt - 100, "input_cached_tokens": 100, "output": 30},
        }
        if snake:
            row = {
                "id": row["id"],
                "trace_id": trace_id,
                "type": "GENERATION",
                "name": "chat",
                "provided_model_name": "gpt-4.1",
                "start_time": start.replace("T", " ").replace("Z", ""),
                "end_time": start.replace("T", " ").replace("Z", ""),
                "input": json.dumps(row["input"]),
                "output": json.dumps(output),
                "usage_details": row["usageDetails"],
                "session_id": f"gen-session-{shape.seed}",
            }
        observations.append(row)

    for turn in plan(shape):
        context.append({"role": "user", "content": turn.request})
        if turn.tools:
            calls = [
                {
                    "id": u.call_id,
                    "type": "function",
                    "function": {"name": u.name, "arguments": json.dumps(u.args)},
                }
                for u in turn.tools
                if not turn.drop_call
            ]
            reply: dict[str, Any] = {"role": "assistant", "content": "Let me look."}
            if calls:
                reply["tool_calls"] = calls
            generation(reply, turn.prompt_tokens)
            context.append(reply)
            if turn.interject:
                context.append({"role": "user", "content": INTERJECTION})
            for use in turn.tools:
                if not turn.drop_result:
                    context.append(
                        {"role": "tool", "tool_call_id": use.call_id, "content": use.result}
                    )
        answer = {"role": "assistant", "content": turn.answer}
        generation(answer, turn.prompt_tokens + 120)
        context.append(answer)
    if snake:
        return observations
    return {
        "id": trace_id,
        "name": "generated-agent",
        "sessionId": f"gen-session-{shape.seed}",
        "observations": observations,
    }


# --- OpenHands --------------------------------------------------------------------------------


def generated_openhands_events(shape: Shape) -> list[dict[str, Any]]:
    """An event stream: messages, tool actions with their observations (linked by
    ``tool_call_metadata`` and ``cause``), state changes, and a ``condensation`` forgetting
    the events of the turns before it (by id list, or by range when ``extras["range"]``)."""
    events: list[dict[str, Any]] = [
        {
            "id": 0,
            "timestamp": _at(0),
            "source": "agent",
            "action": "system",
            "args": {"content": "You are OpenHands.", "tools": []},
        }
    ]
    turn_events: list[list[int]] = []

    def event(**fields: Any) -> dict[str, Any]:
        made = {"id": len(events), "timestamp": _at(len(events) % 60), **fields}
        events.append(made)
        return made

    for turn in plan(shape):
        ids = [
            event(
                source="user",
                action="message",
                message=turn.request,
                args={"content": turn.request, "image_urls": None},
            )["id"]
        ]
        for index, use in enumerate(turn.tools):
            metadata = {
                "function_name": use.name,
                "tool_call_id": use.call_id,
                "model_response": {
                    "id": f"chatcmpl-gen-{shape.seed}-{turn.number}",
                    "model": "gpt-4o",
                    "usage": {
                        "prompt_tokens": turn.prompt_tokens,
                        "completion_tokens": 20,
                        "prompt_tokens_details": {"cached_tokens": 100},
                    },
                },
                "total_calls_in_response": len(turn.tools),
            }
            action_id = None
            if not turn.drop_call:
                action_id = event(
                    source="agent",
                    action="run",
                    args={
                        "command": f"cat {use.args['path']}",
                        "thought": "Let me look." if index == 0 else "",
                    },
                    tool_call_metadata=metadata,
                )["id"]
                ids.append(action_id)
            if turn.interject and index == 0:
                ids.append(
                    event(
                        source="user",
                        action="message",
                        message=INTERJECTION,
                        args={"content": INTERJECTION},
                    )["id"]
                )
            if not turn.drop_result:
                ids.append(
                    event(
                        source="agent",
                        observation="run",
                        content=use.result,
                        extras={"exit_code": 0},
                        cause=action_id,
                        tool_call_metadata=metadata,
                    )["id"]
                )
        ids.append(
            event(
                source="agent",
                action="message",
                message=turn.answer,
                args={"content": turn.answer, "wait_for_response": True},
            )["id"]
        )
        event(
            source="environment",
            observation="agent_state_changed",
            content="",
            extras={"agent_state": "awaiting_user_input"},
        )
        turn_events.append(ids)
        if turn.number in shape.compact_after:
            # Keep the first request; forget everything else up to this turn.
            forgotten = [i for ids_ in turn_events for i in ids_][1:]
            args: dict[str, Any] = {
                "summary": f"Summary: turns up to {turn.number} done.",
                "summary_offset": 1,
            }
            if shape.extras.get("range"):
                args.update(
                    forgotten_events_start_id=min(forgotten),
                    forgotten_events_end_id=max(forgotten),
                    forgotten_event_ids=None,
                )
            else:
                args["forgotten_event_ids"] = forgotten
            event(source="agent", action="condensation", args=args)
    return events


# --- SWE-agent --------------------------------------------------------------------------------


def generated_swe_agent_trajectory(shape: Shape) -> dict[str, Any]:
    history: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "SETTING: You are an autonomous programmer.",
            "agent": "main",
            "message_type": "system_prompt",
        }
    ]
    for turn in plan(shape):
        history.append(
            {
                "role": "user",
                "content": turn.request,
                "agent": "main",
                "message_type": "observation",
            }
        )
        if turn.tools:
            calls = [
                {
                    "id": u.call_id,
                    "type": "function",
                    "function": {"name": u.name, "arguments": json.dumps(u.args)},
                }
                for u in turn.tools
                if not turn.drop_call
            ]
            history.append(
                {
                    "role": "assistant",
                    "content": "Let me look.",
                    "thought": "Let me look.",
                    "action": "open",
                    "agent": "main",
                    "message_type": "action",
                    "tool_calls": calls,
                }
            )
            if turn.interject:
                history.append({"role": "user", "content": INTERJECTION, "agent": "main"})
            for use in turn.tools:
                if not turn.drop_result:
                    history.append(
                        {
                            "role": "tool",
                            "content": [{"type": "text", "text": use.result}],
                            "tool_call_ids": [use.call_id],
                            "agent": "main",
                            "message_type": "observation",
                        }
                    )
        history.append(
            {"role": "assistant", "content": turn.answer, "agent": "main", "message_type": "action"}
        )
    return {
        "environment": "swe_main",
        "trajectory": [
            {
                "action": "open",
                "observation": "...",
                "response": "...",
                "thought": "...",
                "state": "{}",
            }
        ],
        "history": history,
        "info": {
            "exit_status": "submitted",
            "model_stats": {"tokens_sent": 12000, "tokens_received": 400, "api_calls": shape.turns},
        },
        "replay_config": None,
    }


# --- Hypothesis -------------------------------------------------------------------------------


@st.composite
def shapes(draw: st.DrawFn, max_turns: int = 8, compactions: bool = True) -> Shape:
    turns = draw(st.integers(1, max_turns))
    compact_after: tuple[int, ...] = ()
    if compactions and turns > 1:
        compact_after = tuple(sorted(draw(st.sets(st.integers(0, turns - 2), max_size=2))))
    return Shape(
        turns=turns,
        tool_every=draw(st.integers(0, 3)),
        parallel=draw(st.booleans()),
        compact_after=compact_after,
        break_pairs=draw(st.sampled_from(["none", "unanswered", "orphan", "interleaved"])),
        seed=draw(st.integers(0, 9999)),
        extras={
            "flat": draw(st.booleans()),
            "snake": draw(st.booleans()),
            "remote": draw(st.booleans()),
            "range": draw(st.booleans()),
            "post_tokens": draw(st.booleans()),
        },
    )


GENERATORS: dict[str, Any] = {
    "claude_code": lambda s: jsonl(generated_claude_code_rows(s)),
    "codex": lambda s: jsonl(generated_codex_lines(s)),
    "otel_genai": lambda s: json.dumps(generated_otel_export(s)),
    "langfuse": lambda s: (
        jsonl(t) if isinstance(t := generated_langfuse_trace(s), list) else json.dumps(t)
    ),
    "openhands": lambda s: json.dumps(generated_openhands_events(s)),
    "swe_agent": lambda s: json.dumps(generated_swe_agent_trajectory(s)),
}
"""Each format's generator, as the text of the file it would be."""
