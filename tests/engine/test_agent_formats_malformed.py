"""Malformed agent transcripts: each is refused with a SessionFormatError naming where and why.

Every case is a generated transcript of its format (``agent_transcripts``) with one thing
broken. JSON Lines files name the line (``line 4.message.content``), zip archives the member.
"""

from __future__ import annotations

import copy
import io
import json
import re
import stat
import zipfile
from collections.abc import Callable
from typing import Any

import pytest

import gcengine
from gcengine import LoadLimits, SessionFormatError
from tests.engine.agent_transcripts import (
    Shape,
    generated_claude_code_rows,
    generated_codex_lines,
    generated_langfuse_trace,
    generated_openhands_events,
    generated_otel_export,
    generated_swe_agent_trajectory,
    jsonl,
    zipped,
)
from tests.engine.test_malformed import MISSING, Case

ONE_TOOL_TURN = Shape(turns=2, tool_every=1)


def broken(rows: list[Any], change: Callable[[list[Any]], object]) -> list[Any]:
    """A deep copy of ``rows`` with ``change`` applied to it."""
    copied = copy.deepcopy(rows)
    change(copied)
    return copied


def setting(at: tuple[Any, ...], value: Any) -> Callable[[Any], None]:
    def change(data: Any) -> None:
        for step in at[:-1]:
            data = data[step]
        if value is MISSING:
            del data[at[-1]]
        else:
            data[at[-1]] = value

    return change


# --- Claude Code ------------------------------------------------------------------------------
# Lines: 1 user, 2 file-history, 3 assistant text, 4 assistant tool_use, 5 progress,
# 6 tool result, 7 answer, 8 user, ...

CC = generated_claude_code_rows(ONE_TOOL_TURN)


def cc(change: Callable[[Any], None]) -> str:
    return jsonl(broken(CC, change))


CLAUDE_CODE_CASES = [
    Case(
        "claude-code-line-not-json",
        jsonl(CC).replace(json.dumps(CC[2]), '{"type": "assistant", "message": {'),
        "line 3",
        r"not valid JSON: .* at column \d+",
    ),
    Case("claude-code-row-type-number", cc(setting((1, "type"), 7)), "line 2.type", "needs a type"),
    Case("claude-code-row-is-a-list", cc(setting((1,), [1, 2])), "line 2", "must be an object"),
    Case(
        "claude-code-message-missing",
        cc(setting((0, "message"), MISSING)),
        "line 1.message",
        "must be an object, not null",
    ),
    Case(
        "claude-code-content-number",
        cc(setting((0, "message", "content"), 42)),
        "line 1.message.content",
        "string or a list of content blocks",
    ),
    Case(
        "claude-code-tool-use-without-id",
        cc(setting((3, "message", "content", 0, "id"), MISSING)),
        "line 4.message.content[0].id",
        "must be a string",
    ),
    Case(
        "claude-code-tool-result-error-flag-text",
        cc(setting((5, "message", "content", 0, "is_error"), "yes")),
        "line 6.message.content[0].is_error",
        "true or false",
    ),
    Case(
        "claude-code-usage-negative",
        cc(setting((2, "message", "usage", "input_tokens"), -3)),
        "line 3.message.usage.input_tokens",
        "must not be negative",
    ),
    Case(
        "claude-code-usage-fractional",
        cc(setting((6, "message", "usage", "output_tokens"), 1.5)),
        "line 7.message.usage.output_tokens",
        "whole number, not 1.5",
    ),
    Case("claude-code-uuid-empty", cc(setting((0, "uuid"), "")), "line 1.uuid", "non-empty"),
    Case(
        "claude-code-block-without-type",
        cc(setting((2, "message", "content", 0, "type"), MISSING)),
        "line 3.message.content[0].type",
        "needs a type",
    ),
    Case(
        "claude-code-only-records",
        jsonl([r for r in CC if r["type"] not in ("user", "assistant")]),
        "$",
        "no user or assistant rows",
    ),
]

# --- zip archives -----------------------------------------------------------------------------

SESSION = jsonl(CC)


def zip_with(name: str, content: bytes = b"{}", mode: int | None = None) -> bytes:
    """An archive holding the session and one member set up by hand (a link)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("s.jsonl", SESSION)
        info = zipfile.ZipInfo(name)
        if mode is not None:
            info.external_attr = mode << 16
        archive.writestr(info, content)
    return buffer.getvalue()


def marked_encrypted(archive: bytes) -> bytes:
    """The archive with its second member flagged as encrypted (Python writes no encrypted
    members): bit 0 of the flags in its local header and its central directory entry."""
    data = bytearray(archive)
    local = data.find(b"PK\x03\x04", data.find(b"PK\x03\x04") + 4)
    central = data.find(b"PK\x01\x02", data.find(b"PK\x01\x02") + 4)
    data[local + 6] |= 0x1
    data[central + 8] |= 0x1
    return bytes(data)


ZIP_CASES = [
    Case("zip-corrupt", b"PK\x03\x04" + b"\x00" * 40, "$", "not a readable zip archive"),
    Case("zip-empty", zipped({}), "$", "holds no files"),
    Case(
        "zip-climbs-out",
        zipped({"s.jsonl": SESSION, "../evil.jsonl": "{}"}),
        "../evil.jsonl",
        "outside",
    ),
    Case(
        "zip-absolute-name",
        zipped({"s.jsonl": SESSION, "/etc/agent-x.jsonl": "{}"}),
        "/etc/agent-x.jsonl",
        "outside",
    ),
    Case(
        "zip-backslash-name",
        zipped({"s.jsonl": SESSION, "..\\agent-x.jsonl": "{}"}),
        "..\\agent-x.jsonl",
        "outside",
    ),
    Case(
        "zip-drive-letter",
        zipped({"s.jsonl": SESSION, "C:/agent-x.jsonl": "{}"}),
        "C:/agent-x.jsonl",
        "outside",
    ),
    Case(
        "zip-link",
        zip_with("subagents/agent-x.jsonl", b"/etc/passwd", mode=stat.S_IFLNK | 0o777),
        "subagents/agent-x.jsonl",
        "a link",
    ),
    Case(
        "zip-encrypted",
        marked_encrypted(zip_with("subagents/agent-x.jsonl")),
        "subagents/agent-x.jsonl",
        "encrypted",
    ),
    Case(
        "zip-not-a-transcript",
        zipped({"s.jsonl": SESSION, "notes.txt": "hello"}),
        "notes.txt",
        "only .jsonl",
    ),
    Case(
        "zip-two-sessions",
        zipped({"a.jsonl": SESSION, "b.jsonl": SESSION}),
        "$",
        r"exactly one session transcript .* holds 2 \(a.jsonl, b.jsonl\)",
    ),
    Case(
        "zip-bad-line-in-a-subagent",
        zipped({"s.jsonl": SESSION, "s/subagents/agent-x.jsonl": SESSION + "{oops\n"}),
        "s/subagents/agent-x.jsonl line 16",
        "not valid JSON",
    ),
    Case(
        "zip-member-not-utf8",
        zipped({"s.jsonl": SESSION, "s/subagents/agent-x.jsonl": b"\xff\xfe{}"}),
        "s/subagents/agent-x.jsonl",
        "UTF-8",
    ),
    Case(
        "zip-subagent-row-broken",
        zipped({"s.jsonl": SESSION, "subagents/agent-x.jsonl": cc(setting((0, "message"), 5))}),
        "subagents/agent-x.jsonl line 1.message",
        "must be an object",
    ),
]

# --- Codex ------------------------------------------------------------------------------------
# Lines: 1 session_meta, 2 turn_context, 3 user message, 4 user_message event, 5 reasoning,
# 6 function_call, 7-8 token_count, 9 function_call_output, 10 answer, 11-12 token_count.

CODEX = generated_codex_lines(Shape(turns=1, tool_every=1))


def codex(change: Callable[[Any], None]) -> str:
    return jsonl(broken(CODEX, change))


CODEX_CASES = [
    Case(
        "codex-payload-text",
        codex(setting((2, "payload"), "hello")),
        "line 3.payload",
        "must be an object",
    ),
    Case(
        "codex-line-without-type",
        codex(setting((2, "type"), MISSING)),
        "line 3.type",
        "needs a type",
    ),
    Case(
        "codex-arguments-not-json",
        codex(setting((5, "payload", "arguments"), "{not json")),
        "line 6.payload.arguments",
        "not valid JSON",
    ),
    Case(
        "codex-call-without-call-id",
        codex(setting((5, "payload", "call_id"), MISSING)),
        "line 6.payload.call_id",
        "must be a string",
    ),
    Case(
        "codex-token-count-negative",
        codex(setting((6, "payload", "info", "last_token_usage", "input_tokens"), -1)),
        "line 7.payload.info.last_token_usage.input_tokens",
        "must not be negative",
    ),
    Case(
        "codex-context-window-text",
        codex(setting((6, "payload", "info", "model_context_window"), "258k")),
        "line 7.payload.info.model_context_window",
        "whole number",
    ),
    Case(
        "codex-message-role-unknown",
        codex(setting((2, "payload", "role"), "robot")),
        "line 3.payload.role",
        "not a message role",
    ),
    Case(
        "codex-compacted-message-number",
        jsonl([*CODEX, {"type": "compacted", "payload": {"message": 5}}]),
        "line 13.payload.message",
        "must be a string",
    ),
    Case(
        "codex-replacement-history-object",
        jsonl(
            [*CODEX, {"type": "compacted", "payload": {"message": "", "replacement_history": {}}}]
        ),
        "line 13.payload.replacement_history",
        "must be a list",
    ),
    Case(
        "codex-no-response-items",
        jsonl([line for line in CODEX if line["type"] != "response_item"]),
        "$",
        "no response items",
    ),
]

# --- OpenTelemetry GenAI ------------------------------------------------------------------------

OTEL = generated_otel_export(Shape(turns=1, tool_every=1, extras={"flat": True}))
SPAN: tuple[Any, ...] = ("resourceSpans", 0, "scopeSpans", 0, "spans", 0)
SPAN_PATH = "resourceSpans[0].scopeSpans[0].spans[0]"
INPUT_PATH = f"{SPAN_PATH}.attributes.gen_ai.input.messages"


def otel(change: Callable[[Any], None]) -> dict[str, Any]:
    data: dict[str, Any] = broken([OTEL], lambda d: change(d[0]))[0]
    return data


def otel_input(messages: list[Any]) -> dict[str, Any]:
    return otel(setting((*SPAN, "attributes", "gen_ai.input.messages"), json.dumps(messages)))


OTEL_CASES = [
    Case(
        "otel-input-not-json",
        otel(setting((*SPAN, "attributes", "gen_ai.input.messages"), "[{")),
        INPUT_PATH,
        "not valid JSON",
    ),
    Case(
        "otel-part-without-type",
        otel_input([{"role": "user", "parts": [{"content": "hi"}]}]),
        f"{INPUT_PATH}[0].parts[0].type",
        "needs a type",
    ),
    Case(
        "otel-role-unknown",
        otel_input([{"role": "robot", "parts": []}]),
        f"{INPUT_PATH}[0].role",
        "not a message role",
    ),
    Case(
        "otel-tool-call-arguments-not-json",
        otel_input(
            [
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "id": "c", "name": "f", "arguments": "{x"}],
                }
            ]
        ),
        f"{INPUT_PATH}[0].parts[0].arguments",
        "not valid JSON",
    ),
    Case(
        "otel-int-value-not-a-number",
        otel(
            setting(
                (*SPAN, "attributes"),
                [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "many"}}],
            )
        ),
        f"{SPAN_PATH}.attributes[0].value.intValue",
        "whole number",
    ),
    Case(
        "otel-attribute-without-key",
        otel(setting((*SPAN, "attributes"), [{"value": {"stringValue": "chat"}}])),
        f"{SPAN_PATH}.attributes[0].key",
        "must be a string",
    ),
    Case(
        "otel-scope-spans-object",
        otel(setting(("resourceSpans", 0, "scopeSpans"), {})),
        "resourceSpans[0].scopeSpans",
        "must be a list",
    ),
    Case(
        "otel-no-model-call",
        otel(
            setting(
                (*SPAN[:-1],),
                [
                    {
                        "traceId": "t",
                        "spanId": "s",
                        "attributes": {"gen_ai.operation.name": "execute_tool"},
                    }
                ],
            )
        ),
        "$",
        "no span records a model call",
    ),
]

# --- Langfuse ---------------------------------------------------------------------------------

LANGFUSE: dict[str, Any] = generated_langfuse_trace(Shape(turns=1, tool_every=1))  # type: ignore[assignment]


def langfuse(change: Callable[[Any], None]) -> dict[str, Any]:
    data: dict[str, Any] = broken([LANGFUSE], lambda d: change(d[0]))[0]
    return data


LANGFUSE_CASES = [
    Case(
        "langfuse-no-generation",
        langfuse(setting(("observations",), [{"id": "s", "traceId": "t", "type": "SPAN"}])),
        "$",
        "no GENERATION",
    ),
    Case(
        "langfuse-input-number",
        langfuse(setting(("observations", 0, "input"), 5)),
        "observations[0].input",
        "must be messages or text",
    ),
    Case(
        "langfuse-input-role-unknown",
        langfuse(setting(("observations", 0, "input"), [{"role": "robot", "content": "x"}])),
        "observations[0].input[0].role",
        "not a chat role",
    ),
    Case(
        "langfuse-observation-number",
        langfuse(setting(("observations", 1), 5)),
        "observations[1]",
        "must be an object",
    ),
    Case(
        "langfuse-output-arguments-not-json",
        langfuse(
            setting(("observations", 0, "output", "tool_calls", 0, "function", "arguments"), "{x")
        ),
        "observations[0].output[0].tool_calls[0].function.arguments",
        "not valid JSON",
    ),
]

# --- OpenHands --------------------------------------------------------------------------------
# Events: 0 system, 1 user message, 2 run, 3 run observation, 4 answer, 5 state, 6 condensation.

OPENHANDS = generated_openhands_events(Shape(turns=1, tool_every=1, compact_after=(0,)))


def openhands(change: Callable[[Any], None]) -> list[Any]:
    return broken(OPENHANDS, change)


OPENHANDS_CASES = [
    Case(
        "openhands-action-number",
        openhands(setting((2, "action"), 5)),
        "[2].action",
        "must be named",
    ),
    Case(
        "openhands-observation-number",
        openhands(setting((3, "observation"), 5)),
        "[3].observation",
        "must be named",
    ),
    Case(
        "openhands-message-content-number",
        openhands(setting((1, "args", "content"), 5)),
        "[1].args.content",
        "must be a string",
    ),
    Case(
        "openhands-message-from-the-environment",
        openhands(setting((1, "source"), "environment")),
        "[1].source",
        "user or the agent",
    ),
    Case(
        "openhands-id-negative", openhands(setting((1, "id"), -1)), "[1].id", "must not be negative"
    ),
    Case(
        "openhands-condensation-forgets-nothing-named",
        openhands(setting((6, "args"), {"summary": "s"})),
        "[6].args",
        "names the events it forgets",
    ),
    Case(
        "openhands-forgotten-ids-object",
        openhands(setting((6, "args", "forgotten_event_ids"), {"1": True})),
        "[6].args.forgotten_event_ids",
        "must be a list",
    ),
    Case(
        "openhands-summary-number",
        openhands(setting((6, "args", "summary"), 3)),
        "[6].args.summary",
        "string or null",
    ),
    Case(
        "openhands-usage-negative",
        openhands(
            setting((2, "tool_call_metadata", "model_response", "usage", "prompt_tokens"), -5)
        ),
        "[2].tool_call_metadata.model_response.usage.prompt_tokens",
        "must not be negative",
    ),
]

# --- SWE-agent --------------------------------------------------------------------------------

SWE = generated_swe_agent_trajectory(Shape(turns=1, tool_every=1))

SWE_AGENT_CASES = [
    Case(
        "swe-agent-role-unknown",
        broken([SWE], setting((0, "history", 1, "role"), "robot"))[0],
        "history[1].role",
        "not a message role",
    ),
    Case(
        "swe-agent-tool-names-no-call",
        broken([SWE], setting((0, "history", 3, "tool_call_ids"), []))[0],
        "history[3].tool_call_ids",
        "names the call it answers",
    ),
    Case(
        "swe-agent-only-a-system-prompt",
        {**SWE, "history": SWE["history"][:1]},
        "history",
        "no messages",
    ),
]

CORPUS = [
    *CLAUDE_CODE_CASES,
    *ZIP_CASES,
    *CODEX_CASES,
    *OTEL_CASES,
    *LANGFUSE_CASES,
    *OPENHANDS_CASES,
    *SWE_AGENT_CASES,
]


def test_the_corpus_covers_every_new_format_with_at_least_30_cases() -> None:
    ids = [case.id for case in CORPUS]
    assert len(ids) >= 30
    assert len(set(ids)) == len(ids)
    for prefix in ("claude-code", "zip", "codex", "otel", "langfuse", "openhands", "swe-agent"):
        assert any(i.startswith(prefix) for i in ids)


@pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])
def test_malformed_transcript_is_refused_with_its_location_and_reason(case: Case) -> None:
    source = copy.deepcopy(case.source) if isinstance(case.source, dict | list) else case.source
    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(source)
    error = raised.value
    assert type(error) is SessionFormatError
    assert error.json_path == case.json_path
    assert re.search(case.reason, error.reason, re.IGNORECASE), error.reason
    expected = error.reason if case.json_path == "$" else f"{case.json_path}: {error.reason}"
    assert str(error) == expected


def test_an_archive_with_more_files_than_the_limit_is_refused() -> None:
    archive = zipped(
        {"s.jsonl": SESSION, **{f"s/subagents/agent-{i}.jsonl": SESSION for i in range(3)}}
    )
    with pytest.raises(SessionFormatError, match="4 files; the limit is 3"):
        gcengine.load_session(archive, limits=LoadLimits(max_archive_members=3))
    assert gcengine.load_session(archive, limits=LoadLimits(max_archive_members=4)).subagents


def test_an_archive_that_unpacks_past_max_bytes_is_refused_before_it_is_read() -> None:
    bomb = zipped({"s.jsonl": SESSION + " " * 2_000_000})
    assert len(bomb) < 50_000
    with pytest.raises(
        SessionFormatError, match=r"unpacks to 2,00\d,\d+ bytes; the limit is 1,000,000"
    ):
        gcengine.load_session(bomb, limits=LoadLimits(max_bytes=1_000_000))


def test_a_member_that_lies_about_its_size_is_refused() -> None:
    honest = zipped({"s.jsonl": SESSION + " " * 200_000})
    archive = zipfile.ZipFile(io.BytesIO(honest))
    info = archive.infolist()[0]
    declared = info.file_size.to_bytes(4, "little")
    lying = honest.replace(declared, (100).to_bytes(4, "little"))
    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(lying, limits=LoadLimits(max_bytes=150_000))
    assert str(raised.value) == "s.jsonl: cannot unpack: Bad CRC-32 for file 's.jsonl'"
