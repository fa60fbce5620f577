"""Malformed session inputs: each is refused with a SessionFormatError that says where and why.

Most cases are the reference example files (JAATO 2.1, 2.10 and a budget snapshot) or the
reference OpenAI / Anthropic samples with one thing broken, so that they look like the files
people actually upload.
"""

from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import gcengine
from gcengine import PartType, SessionFormatError
from gcengine.formats.common import SessionSource
from tests.engine.conftest import example

V21 = example("jaato_session_v2.1.json")
V210 = example("jaato_session_v2.10.json")
SNAPSHOT = example("jaato_budget_snapshot.json")

# The samples from the format reference (users_and_formats.md, section 4).
CHAT: dict[str, Any] = {
    "model": "gpt-4.1",
    "messages": [
        {"role": "system", "content": "You are a build agent."},
        {"role": "user", "content": "Why does CI fail?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_01",
                    "type": "function",
                    "function": {"name": "read_log", "arguments": '{"job": "test"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_01",
            "content": "E   AssertionError: expected 3 got 2",
        },
        {"role": "assistant", "content": "A unit test asserts 3 but gets 2."},
    ],
    "usage": {
        "prompt_tokens": 412,
        "completion_tokens": 18,
        "prompt_tokens_details": {"cached_tokens": 256},
    },
}
RESPONSES: list[Any] = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Why?"}]},
    {"type": "function_call", "call_id": "call_01", "name": "read_log", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_01", "output": "E   AssertionError ..."},
    {"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAA..."},
]
ANTHROPIC: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "system": "You are a build agent.",
    "messages": [
        {"role": "user", "content": "Why does CI fail?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the log."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "read_log",
                    "input": {"job": "test"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": "E   AssertionError: expected 3 got 2",
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "compaction", "content": "Summary: test_math fails (3 vs 2)."},
                {"type": "text", "text": "A unit test asserts 3 but gets 2."},
            ],
        },
    ],
    "usage": {
        "input_tokens": 398,
        "output_tokens": 21,
        "cache_read_input_tokens": 256,
        "cache_creation_input_tokens": 0,
    },
}

Step = str | int
MISSING: Any = object()


def changed(base: Any, at: tuple[Step, ...], value: Any) -> Any:
    """A deep copy of ``base`` with the value at ``at`` replaced (or removed, for MISSING)."""
    data = copy.deepcopy(base)
    parent = data
    for step in at[:-1]:
        parent = parent[step]
    if value is MISSING:
        del parent[at[-1]]
    else:
        parent[at[-1]] = value
    return data


def appended(base: Any, at: tuple[Step, ...], value: Any) -> Any:
    """A deep copy of ``base`` with ``value`` appended to the list at ``at``."""
    data = copy.deepcopy(base)
    target = data
    for step in at:
        target = target[step]
    target.append(value)
    return data


@dataclass(frozen=True)
class Case:
    id: str
    source: SessionSource
    json_path: str
    reason: str  # a regular expression the reason must contain (case-insensitive)


NO_SUCH_FILE = Path(__file__).resolve().parent / "no-such-directory" / "session.json"
WHAT_WE_READ = "not a session this engine reads"

INPUT_CASES = [
    Case("input-empty-bytes", b"", "$", "empty"),
    Case("input-whitespace-only-bytes", b"  \n\t \r\n", "$", "empty"),
    Case("input-empty-text", "", "$", "empty"),
    Case("input-invalid-utf8", b'{"version": "2.1", "session_id": "\xff\xfe"}', "$", "UTF-8"),
    Case("input-utf16", json.dumps(V21).encode("utf-16"), "$", "UTF-8"),
    Case("input-invalid-json", '{"version": "2.1",\n "history": [}', "$", r"line 2, column \d+"),
    Case("input-trailing-comma", b'{"messages": [],}', "$", r"line 1, column \d+"),
    Case("input-json-number", b"42", "$", WHAT_WE_READ),
    Case("input-json-string", b'"hello"', "$", WHAT_WE_READ),
    Case("input-json-null", b"null", "$", WHAT_WE_READ),
    Case("input-json-boolean", b"true", "$", WHAT_WE_READ),
    Case("input-empty-list", b"[]", "$", "empty list"),
    Case("input-empty-object", b"{}", "$", WHAT_WE_READ),
    Case("input-unrecognised-object", {"foo": 1, "bar": [1, 2]}, "$", WHAT_WE_READ),
    Case("input-list-of-numbers", [1, 2], "[0]", "must be an object"),
    Case("input-no-such-path", NO_SUCH_FILE, "$", "cannot read"),
    Case("input-file-name-as-text-is-not-json", str(NO_SUCH_FILE), "$", "JSON"),
    Case("input-directory-path", Path(__file__).resolve().parent, "$", "cannot read"),
    Case("input-path-with-nul-byte", Path("session\x00.json"), "$", "cannot read"),
    Case(
        "input-integer-with-5000-digits",
        b'{"messages": [{"role": "user", "content": "hi"}], "usage": {"prompt_tokens": '
        + b"9" * 5000
        + b"}}",
        "usage.prompt_tokens",
        "a number of 5,000 digits is longer than any reader keeps",
    ),
]


H = "history"
JAATO_CASES = [
    Case("jaato-version-3.0", changed(V21, ("version",), "3.0"), "version", "unsupported"),
    Case("jaato-version-number", changed(V21, ("version",), 2), "version", "unsupported"),
    Case("jaato-turn-count-text", changed(V21, ("turn_count",), "three"), "turn_count", "whole"),
    Case("jaato-turn-count-bool", changed(V21, ("turn_count",), True), "turn_count", "whole"),
    Case("jaato-turn-count-negative", changed(V21, ("turn_count",), -2), "turn_count", "negative"),
    Case(
        "jaato-version-missing",
        changed(V21, ("version",), MISSING),
        "version",
        "needs a version",
    ),
    Case(
        "jaato-session_id-missing",
        changed(V21, ("session_id",), MISSING),
        "session_id",
        "must be a string",
    ),
    Case(
        "jaato-session_id-number",
        changed(V210, ("session_id",), 20260301),
        "session_id",
        "must be a string",
    ),
    Case(
        "jaato-created_at-missing",
        changed(V21, ("created_at",), MISSING),
        "created_at",
        "must be a string",
    ),
    Case(
        "jaato-updated_at-number",
        changed(V210, ("updated_at",), 1772360133),
        "updated_at",
        "must be a string",
    ),
    Case("jaato-history-object", changed(V21, (H,), {"0": {}}), "history", "must be a list"),
    Case("jaato-history-null", changed(V21, (H,), None), "history", "must be a list"),
    Case("jaato-message-string", changed(V21, (H, 3), "hi"), "history[3]", "must be an object"),
    Case(
        "jaato-role-assistant",
        changed(V21, (H, 1, "role"), "assistant"),
        "history[1].role",
        "not one of",
    ),
    Case(
        "jaato-role-missing",
        changed(V21, (H, 1, "role"), MISSING),
        "history[1].role",
        "not one of",
    ),
    Case(
        "jaato-parts-missing",
        changed(V21, (H, 0, "parts"), MISSING),
        "history[0].parts",
        "must be a list",
    ),
    Case(
        "jaato-parts-string",
        changed(V21, (H, 0, "parts"), "Find the TODOs"),
        "history[0].parts",
        "must be a list",
    ),
    Case(
        "jaato-part-string",
        changed(V21, (H, 0, "parts", 0), "Find the TODOs"),
        "history[0].parts[0]",
        "must be an object",
    ),
    Case(
        "jaato-part-type-missing",
        changed(V21, (H, 0, "parts", 0, "type"), MISSING),
        "history[0].parts[0].type",
        "needs a type",
    ),
    Case(
        "jaato-part-type-number",
        changed(V21, (H, 0, "parts", 0, "type"), 1),
        "history[0].parts[0].type",
        "needs a type",
    ),
    Case(
        "jaato-text-number",
        changed(V21, (H, 0, "parts", 0, "text"), 42),
        "history[0].parts[0].text",
        "must be a string",
    ),
    Case(
        "jaato-function_call-name-missing",
        changed(V21, (H, 1, "parts", 1, "name"), MISSING),
        "history[1].parts[1].name",
        "must be a string",
    ),
    Case(
        "jaato-function_call-args-list",
        changed(V21, (H, 1, "parts", 1, "args"), ["TODO", "src/app.py"]),
        "history[1].parts[1].args",
        "must be an object",
    ),
    Case(
        "jaato-function_response-is_error-string",
        changed(V210, (H, 2, "parts", 0, "is_error"), "false"),
        "history[2].parts[0].is_error",
        "true or false",
    ),
    Case(
        "jaato-function_response-call_id-number",
        changed(V21, (H, 2, "parts", 0, "call_id"), 1),
        "history[2].parts[0].call_id",
        "must be a string",
    ),
    Case(
        "jaato-inline_data-without-mime_type",
        appended(V21, (H, 0, "parts"), {"type": "inline_data", "data": "iVBORw0KGgo="}),
        "history[0].parts[1].mime_type",
        "must be a string",
    ),
    Case(
        "jaato-inline_data-without-data",
        appended(V21, (H, 0, "parts"), {"type": "inline_data", "mime_type": "image/png"}),
        "history[0].parts[1].data",
        "must be a string",
    ),
    Case(
        "jaato-message_id-empty",
        changed(V21, (H, 0, "message_id"), ""),
        "history[0].message_id",
        "non-empty string",
    ),
    Case(
        "jaato-message_id-number",
        changed(V21, (H, 4, "message_id"), 5),
        "history[4].message_id",
        "non-empty string",
    ),
    Case(
        "jaato-turn_index-negative",
        changed(V21, (H, 0, "turn_index"), -1),
        "history[0].turn_index",
        "negative",
    ),
    Case(
        "jaato-turn_index-string",
        changed(V21, (H, 0, "turn_index"), "0"),
        "history[0].turn_index",
        "whole number",
    ),
    Case(
        "jaato-kind-unknown",
        changed(V21, (H, 4, "kind"), "memo"),
        "history[4].kind",
        "not one of",
    ),
    Case(
        "jaato-turn_accounting-negative-prompt",
        changed(V21, ("turn_accounting", 1, "prompt"), -5490),
        "turn_accounting[1].prompt",
        "negative|greater than or equal to 0",
    ),
    Case(
        "jaato-turn_accounting-string-total",
        changed(V21, ("turn_accounting", 0, "total"), "5398"),
        "turn_accounting[0].total",
        "whole number|integer",
    ),
    Case(
        "jaato-turn_accounting-entry-string",
        changed(V21, ("turn_accounting", 0), "5398 tokens"),
        "turn_accounting[0]",
        "object",
    ),
    Case(
        "jaato-turn_accounting-empty-object",
        changed(V21, ("turn_accounting",), {}),
        "turn_accounting",
        "must be a list",
    ),
    Case(
        "jaato-user_inputs-number",
        changed(V21, ("user_inputs", 1), 42),
        "user_inputs[1]",
        "must be a string",
    ),
    Case(
        "jaato-user_inputs-string",
        changed(V21, ("user_inputs",), "Find the TODOs"),
        "user_inputs",
        "must be a list",
    ),
    Case(
        "jaato-user_inputs-empty-string",
        changed(V21, ("user_inputs",), ""),
        "user_inputs",
        "must be a list",
    ),
    Case("jaato-metadata-list", changed(V21, ("metadata",), [1]), "metadata", "must be an object"),
    Case(
        "jaato-metadata-empty-list",
        changed(V21, ("metadata",), []),
        "metadata",
        "must be an object",
    ),
    Case(
        "jaato-description-number",
        changed(V21, ("description",), 7),
        "description",
        "string or null",
    ),
    Case(
        "jaato-interrupted_turn-pending-not-a-list",
        changed(
            V210,
            ("interrupted_turn",),
            {"agent_id": "main", "pending_tool_calls": "grep_content", "user_prompt": ""},
        ),
        "interrupted_turn.pending_tool_calls",
        "list",
    ),
    Case(
        "jaato-interrupted_turn-pending-call-without-name",
        changed(
            V210, ("interrupted_turn",), {"pending_tool_calls": [{"id": "call_9", "args": {}}]}
        ),
        "interrupted_turn.pending_tool_calls[0].name",
        "required",
    ),
    Case(
        "jaato-metadata-gcengine-bad-source_format",
        changed(V21, ("metadata",), {"gcengine": {"source_format": "gemini"}}),
        "metadata.gcengine.source_format",
        "not one of",
    ),
    Case(
        "jaato-unknown-part-repr-number",
        appended(V21, (H, 1, "parts"), {"type": "unknown", "repr": 5}),
        "history[1].parts[2].repr",
        "must be a string",
    ),
]

BS = "budget_state"
BUDGET_STATE_CASES = [
    Case("budget_state-list", changed(V21, (BS,), [85]), "budget_state", "must be an object"),
    Case(
        "budget_state-string",
        changed(V210, (BS,), "conversation"),
        "budget_state",
        "must be an object",
    ),
    Case(
        "budget_state-child-negative-tokens",
        changed(V21, (BS, "children", "msg_2", "tokens"), -26),
        "budget_state.children.msg_2.tokens",
        "negative",
    ),
    Case(
        "budget_state-tokens-fraction",
        changed(V21, (BS, "tokens"), 1.5),
        "budget_state.tokens",
        "whole number",
    ),
    Case(
        "budget_state-tokens-string",
        changed(V21, (BS, "tokens"), "85"),
        "budget_state.tokens",
        "whole number",
    ),
    Case(
        "budget_state-bad-gc_policy",
        changed(V21, (BS, "children", "msg_1", "gc_policy"), "sticky"),
        "budget_state.children.msg_1.gc_policy",
        "not one of",
    ),
    Case(
        "budget_state-bad-stored_gc_policy",
        changed(V21, (BS, "stored_gc_policy"), "sticky"),
        "budget_state.stored_gc_policy",
        "not one of",
    ),
    Case(
        "budget_state-bad-source",
        changed(V21, (BS, "source"), "memory"),
        "budget_state.source",
        "not one of",
    ),
    Case(
        "budget_state-children-list",
        changed(V21, (BS, "children"), [{"tokens": 12}]),
        "budget_state.children",
        "must be an object",
    ),
    Case(
        "budget_state-children-empty-list",
        changed(V21, (BS, "children"), []),
        "budget_state.children",
        "must be an object",
    ),
    Case(
        "budget_state-child-not-an-object",
        changed(V21, (BS, "children", "msg_0"), 12),
        "budget_state.children.msg_0",
        "must be an object",
    ),
    Case(
        "budget_state-message_ids-numbers",
        changed(V21, (BS, "children", "msg_0", "message_ids"), [1]),
        "budget_state.children.msg_0.message_ids",
        "list of strings",
    ),
    Case(
        "budget_state-message_ids-empty-string",
        changed(V21, (BS, "children", "msg_0", "message_ids"), ""),
        "budget_state.children.msg_0.message_ids",
        "list of strings",
    ),
    Case(
        "budget_state-created_at-string",
        changed(V21, (BS, "created_at"), "2026-03-01T10:15:00"),
        "budget_state.created_at",
        "Unix time",
    ),
    Case(
        "budget_state-label-number",
        changed(V21, (BS, "children", "msg_0", "label"), 1),
        "budget_state.children.msg_0.label",
        "must be a string",
    ),
]

SNAPSHOT_CASES = [
    Case("snapshot-entries-missing", changed(SNAPSHOT, ("entries",), MISSING), "$", "entries"),
    Case(
        "snapshot-entries-list",
        changed(SNAPSHOT, ("entries",), [SNAPSHOT["entries"]["system"]]),
        "entries",
        "must be an object",
    ),
    Case(
        "snapshot-unknown-source-key",
        changed(SNAPSHOT, ("entries", "memory"), SNAPSHOT["entries"]["system"]),
        "entries.memory",
        "not one of",
    ),
    Case(
        "snapshot-entry-string",
        changed(SNAPSHOT, ("entries", "system"), "locked"),
        "entries.system",
        "must be an object",
    ),
    Case(
        "snapshot-child-negative-tokens",
        changed(SNAPSHOT, ("entries", "system", "children", "base", "tokens"), -16),
        "entries.system.children.base.tokens",
        "negative",
    ),
    Case(
        "snapshot-context_limit-negative",
        changed(SNAPSHOT, ("context_limit",), -1),
        "context_limit",
        "negative",
    ),
    Case(
        "snapshot-context_limit-string",
        changed(SNAPSHOT, ("context_limit",), "200000"),
        "context_limit",
        "whole number",
    ),
    Case("snapshot-agent_id-number", changed(SNAPSHOT, ("agent_id",), 1), "agent_id", "string"),
    Case(
        "snapshot-agent_type-number",
        changed(SNAPSHOT, ("agent_type",), 1),
        "agent_type",
        "string or null",
    ),
]

M = "messages"
CHAT_CASES = [
    Case("chat-role-bot", changed(CHAT, (M, 4, "role"), "bot"), "messages[4].role", "chat role"),
    Case(
        "chat-role-object",
        changed(CHAT, (M, 1, "role"), {"name": "user"}),
        "messages[1].role",
        "chat role",
    ),
    Case(
        "chat-tool-without-tool_call_id",
        changed(CHAT, (M, 3, "tool_call_id"), MISSING),
        "messages[3].tool_call_id",
        "must be a string",
    ),
    Case(
        "chat-tool_call-without-function",
        changed(CHAT, (M, 2, "tool_calls", 0, "function"), MISSING),
        "messages[2].tool_calls[0].function",
        "must be an object",
    ),
    Case(
        "chat-tool_calls-object",
        changed(CHAT, (M, 2, "tool_calls"), {"id": "call_01"}),
        "messages[2].tool_calls",
        "must be a list",
    ),
    Case(
        "chat-arguments-invalid-json",
        changed(CHAT, (M, 2, "tool_calls", 0, "function", "arguments"), '{"job": test}'),
        "messages[2].tool_calls[0].function.arguments",
        "not valid JSON",
    ),
    Case(
        "chat-arguments-encoding-a-list",
        changed(CHAT, (M, 2, "tool_calls", 0, "function", "arguments"), '["test"]'),
        "messages[2].tool_calls[0].function.arguments",
        "JSON object",
    ),
    Case(
        "chat-content-number",
        changed(CHAT, (M, 4, "content"), 3),
        "messages[4].content",
        "string",
    ),
    Case(
        "chat-content-part-without-type",
        changed(CHAT, (M, 1, "content"), [{"text": "Why does CI fail?"}]),
        "messages[1].content[0].type",
        "needs a type",
    ),
    Case(
        "chat-content-part-type-list",
        changed(CHAT, (M, 1, "content"), [{"type": ["text"], "text": "Why does CI fail?"}]),
        "messages[1].content[0].type",
        "needs a type",
    ),
    Case(
        "chat-system-block-type-list",
        changed(CHAT, (M, 0, "content"), [{"type": ["text"], "text": "You are a build agent."}]),
        "messages[0].content[0]",
        "text block",
    ),
    Case(
        "chat-tool-content-number",
        changed(CHAT, (M, 3, "content"), 2),
        "messages[3].content",
        "must be a string",
    ),
    Case(
        "chat-assistant-without-content-or-tool-calls",
        changed(CHAT, (M, 4, "content"), None),
        "messages[4]",
        "no content and no tool calls",
    ),
    Case("chat-messages-string", changed(CHAT, (M,), "hello"), "messages", "must be a list"),
    Case("chat-message-string", changed(CHAT, (M, 1), "hello"), "messages[1]", "must be an object"),
    Case(
        "chat-usage-negative",
        changed(CHAT, ("usage", "prompt_tokens"), -412),
        "usage.prompt_tokens",
        "negative",
    ),
]

RESPONSES_CASES = [
    Case(
        "responses-function_call-without-call_id",
        changed(RESPONSES, (1, "call_id"), MISSING),
        "[1].call_id",
        "must be a string",
    ),
    Case(
        "responses-message-role-tool",
        changed(RESPONSES, (0, "role"), "tool"),
        "[0].role",
        "not a message role",
    ),
    Case(
        "responses-message-role-list",
        changed(RESPONSES, (0, "role"), ["user"]),
        "[0].role",
        "not a message role",
    ),
    Case(
        "responses-item-without-type-or-role",
        changed(RESPONSES, (2,), {"call_id": "call_01", "output": "E   AssertionError ..."}),
        "[2].type",
        "needs a type",
    ),
    Case(
        "responses-item-type-object",
        changed(RESPONSES, (2, "type"), {"name": "function_call_output"}),
        "[2].type",
        "needs a type",
    ),
    Case(
        "responses-function_call_output-call_id-number",
        changed(RESPONSES, (2, "call_id"), 1),
        "[2].call_id",
        "must be a string",
    ),
    Case(
        "responses-arguments-invalid-json",
        changed(RESPONSES, (1, "arguments"), "{job"),
        "[1].arguments",
        "not valid JSON",
    ),
    Case(
        "responses-message-without-content",
        changed(RESPONSES, (0, "content"), []),
        "[0].content",
        "no content",
    ),
    Case(
        "responses-wrapped-in-input",
        {"model": "gpt-4.1", "input": changed(RESPONSES, (1, "name"), MISSING)},
        "input[1].name",
        "must be a string",
    ),
]

ANTHROPIC_CASES = [
    Case(
        "anthropic-system-role-in-messages",
        changed(ANTHROPIC, (M, 0, "role"), "system"),
        "messages[0].role",
        "not a message role",
    ),
    Case(
        "anthropic-tool_use-without-id",
        changed(ANTHROPIC, (M, 1, "content", 1, "id"), MISSING),
        "messages[1].content[1].id",
        "must be a string",
    ),
    Case(
        "anthropic-tool_use-input-list",
        changed(ANTHROPIC, (M, 1, "content", 1, "input"), ["test"]),
        "messages[1].content[1].input",
        "must be an object",
    ),
    Case(
        "anthropic-tool_use-input-empty-list",
        changed(ANTHROPIC, (M, 1, "content", 1, "input"), []),
        "messages[1].content[1].input",
        "must be an object",
    ),
    Case(
        "anthropic-tool_result-is_error-string",
        changed(ANTHROPIC, (M, 2, "content", 0, "is_error"), "true"),
        "messages[2].content[0].is_error",
        "true or false",
    ),
    Case(
        "anthropic-tool_result-without-tool_use_id",
        changed(ANTHROPIC, (M, 2, "content", 0, "tool_use_id"), MISSING),
        "messages[2].content[0].tool_use_id",
        "must be a string",
    ),
    Case(
        "anthropic-thinking-without-text",
        changed(ANTHROPIC, (M, 1, "content", 0), {"type": "thinking", "signature": "EqQB"}),
        "messages[1].content[0].thinking",
        "must be a string",
    ),
    Case(
        "anthropic-image-source-without-data",
        changed(
            ANTHROPIC,
            (M, 0, "content"),
            [{"type": "image", "source": {"type": "base64", "media_type": "image/png"}}],
        ),
        "messages[0].content[0].source.data",
        "must be a string",
    ),
    Case(
        "anthropic-block-without-type",
        changed(ANTHROPIC, (M, 3, "content", 1), {"text": "A unit test asserts 3 but gets 2."}),
        "messages[3].content[1].type",
        "needs a type",
    ),
    Case(
        "anthropic-empty-content",
        changed(ANTHROPIC, (M, 3, "content"), []),
        "messages[3].content",
        "no content",
    ),
    Case(
        "anthropic-content-number",
        changed(ANTHROPIC, (M, 3, "content"), 3),
        "messages[3].content",
        "string",
    ),
    Case(
        "anthropic-system-number",
        changed(ANTHROPIC, ("system",), 1),
        "system",
        "string or a list",
    ),
    Case(
        "anthropic-usage-cache-string",
        changed(ANTHROPIC, ("usage", "cache_read_input_tokens"), "256"),
        "usage.cache_read_input_tokens",
        "whole number",
    ),
    Case(
        "anthropic-block-type-object-without-system",
        {"messages": [{"role": "user", "content": [{"type": {"name": "text"}, "text": "hi"}]}]},
        "messages[0].content[0].type",
        "needs a type",
    ),
    Case(
        "anthropic-block-type-list-in-bare-list",
        [{"role": "user", "content": [{"type": ["tool_result"], "tool_use_id": "toolu_01"}]}],
        "[0].content[0].type",
        "needs a type",
    ),
]


def as_text(data: Any, value: str, replaced: str = "1.25") -> str:
    """``data`` as JSON text with the number ``replaced`` written as ``value`` (NaN and
    Infinity can only be written this way)."""
    text = json.dumps(data)
    assert text.count(replaced) == 1
    return text.replace(replaced, value)


WITH_NUMBER = changed(V21, (H, 1, "parts", 1, "args", "pattern"), 1.25)
NUMBER_CASES = [
    Case(
        "number-nan-in-tool-arguments",
        as_text(WITH_NUMBER, "NaN"),
        "history[1].parts[1].args.pattern",
        "NaN is not a number JSON allows",
    ),
    Case(
        "number-infinity-in-tool-arguments",
        as_text(WITH_NUMBER, "Infinity").encode(),
        "history[1].parts[1].args.pattern",
        "Infinity is not a number JSON allows",
    ),
    Case(
        "number-minus-infinity-in-tool-arguments",
        as_text(WITH_NUMBER, "-Infinity"),
        "history[1].parts[1].args.pattern",
        "-Infinity is not a number JSON allows",
    ),
    Case(
        "number-1e400-in-a-tool-result",
        as_text(changed(V21, (H, 2, "parts", 0, "result", "matches", 0, "line"), 1.25), "1e400"),
        "history[2].parts[0].result.matches[0].line",
        "1e400 is too large for a JSON number",
    ),
    Case(
        "number-minus-1e400-in-a-file-read-as-bytes",
        as_text(
            changed(V21, (H, 2, "parts", 0, "result", "matches", 0, "line"), 1.25), "-1e400"
        ).encode(),
        "history[2].parts[0].result.matches[0].line",
        "-1e400 is too large for a JSON number",
    ),
    Case(
        "number-nan-in-a-decoded-object",
        changed(V21, (H, 1, "parts", 1, "args", "pattern"), float("nan")),
        "history[1].parts[1].args.pattern",
        "nan is not a number JSON allows",
    ),
    Case(
        "number-nan-in-openai-arguments-text",
        changed(CHAT, (M, 2, "tool_calls", 0, "function", "arguments"), '{"job": NaN}'),
        "messages[2].tool_calls[0].function.arguments.job",
        "NaN is not a number JSON allows",
    ),
    Case(
        "number-nan-on-a-json-lines-line",
        "\n".join(json.dumps(item) for item in RESPONSES[:2])
        + '\n{"type": "function_call_output", "call_id": "call_01", "output": NaN}',
        "line 3.output",
        "NaN is not a number JSON allows",
    ),
    Case(
        "number-nan-in-budget-state",
        as_text(changed(V21, ("budget_state", "children", "msg_0", "created_at"), 1.25), "NaN"),
        "budget_state.children.msg_0.created_at",
        "NaN",
    ),
    Case(
        "jaato-created_at-not-a-timestamp",
        changed(V21, ("created_at",), "yesterday"),
        "created_at",
        r'must be a date and time such as 2026-03-01T10:15:00, not "yesterday"',
    ),
    Case(
        "jaato-updated_at-not-a-timestamp",
        changed(V21, ("updated_at",), "2026-13-45"),
        "updated_at",
        "must be a date and time",
    ),
    Case(
        "jaato-turn-accounting-count-fractional",
        changed(V21, ("turn_accounting", 0, "prompt"), 5210.5),
        "turn_accounting[0].prompt",
        "must be a whole number, not 5210.5",
    ),
    Case(
        "jaato-turn-accounting-count-text",
        changed(V21, ("turn_accounting", 0, "total"), "5398"),
        "turn_accounting[0].total",
        'must be a whole number, not "5398"',
    ),
    Case(
        "input-unterminated-string",
        '{"version": "2.1",\n "session_id": "abc',
        "$",
        r"^not valid JSON: a string is not closed at line 2, column 16$",
    ),
]

CORPUS = [
    *INPUT_CASES,
    *NUMBER_CASES,
    *JAATO_CASES,
    *BUDGET_STATE_CASES,
    *SNAPSHOT_CASES,
    *CHAT_CASES,
    *RESPONSES_CASES,
    *ANTHROPIC_CASES,
]


def fresh(source: SessionSource) -> SessionSource:
    """A private copy of a parsed source, so no case can see another's leftovers."""
    return copy.deepcopy(source) if isinstance(source, dict | list) else source


def test_corpus_is_large_and_ids_are_unique() -> None:
    ids = [case.id for case in CORPUS]
    assert len(ids) >= 60
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])
def test_malformed_input_is_refused_with_its_location_and_reason(case: Case) -> None:
    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(fresh(case.source))
    error = raised.value
    assert error.json_path == case.json_path
    assert re.search(case.reason, error.reason, re.IGNORECASE), error.reason
    if case.json_path == "$":
        assert str(error) == error.reason
    else:
        assert str(error) == f"{case.json_path}: {error.reason}"


def test_no_malformed_input_raises_anything_but_session_format_error() -> None:
    wrong: list[str] = []
    for case in CORPUS:
        try:
            gcengine.load_session(fresh(case.source))
        except Exception as error:
            if type(error) is not SessionFormatError:
                wrong.append(f"{case.id}: {type(error).__name__}: {error}")
    assert wrong == []


def test_no_message_speaks_of_python() -> None:
    """Errors name the problem and the place in the file's terms, never the parser's."""
    for case in CORPUS:
        with pytest.raises(SessionFormatError) as raised:
            gcengine.load_session(fresh(case.source))
        message = str(raised.value)
        for internal in ("sys.", "set_int_max_str_digits", " at at ", "Expecting", "delimiter"):
            assert internal not in message, (case.id, message)


def test_data_the_engine_does_not_use_stays_data() -> None:
    """Only what the engine relies on is checked for its type: a tool's start time or an
    interrupted turn's start in an odd form loads, kept as written."""
    odd = changed(V21, ("turn_accounting", 0, "start_time"), "around ten")
    odd["interrupted_turn"] = {"agent_id": "main", "pending_tool_calls": [], "started_at": "soon"}
    session = gcengine.load_session(odd)
    assert session.turn_accounting[0].start_time == "around ten"
    assert session.interrupted_turn is not None
    assert session.interrupted_turn.started_at == "soon"


def test_a_loaded_session_is_always_dumped_as_strict_json() -> None:
    session = gcengine.load_session(V21)
    json.loads(gcengine.dump_session(session), parse_constant=pytest.fail)
    odd = session.model_copy(update={"metadata": {"score": float("inf")}})
    with pytest.raises(SessionFormatError, match=r"metadata\.score: inf is not a number"):
        gcengine.dump_session(odd)


def test_unrecognised_object_lists_every_format_the_engine_reads() -> None:
    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session({"conversation": [{"from": "user", "value": "hi"}]})
    reason = raised.value.reason
    for named in ("JAATO session file", "budget snapshot", "Chat Completions", "Responses"):
        assert named in reason
    assert "Anthropic" in reason


def test_missing_file_reason_names_the_path() -> None:
    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(NO_SUCH_FILE)
    assert str(NO_SUCH_FILE) in raised.value.reason


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[" * 100_000 + "]" * 100_000, id="lists"),
        pytest.param('{"a": ' * 100_000 + "1" + "}" * 100_000, id="objects"),
        pytest.param(
            '{"version": "2.1", "history": ' + "[" * 100_000 + "]" * 100_000 + "}",
            id="inside-a-session-file",
        ),
    ],
)
def test_json_nested_100000_levels_is_refused_promptly(text: str) -> None:
    for source in (text, text.encode()):
        started = time.perf_counter()
        with pytest.raises(SessionFormatError) as raised:
            gcengine.load_session(source)
        assert time.perf_counter() - started < 2.0
        assert type(raised.value) is SessionFormatError
        assert "nest" in raised.value.reason


def _large_session() -> Any:
    return changed(V21, (H, 3, "parts", 0, "text"), "TODO " * 1000)


@pytest.mark.parametrize("kind", ["path", "bytes", "json-text"])
def test_input_larger_than_max_bytes_is_refused(tmp_path: Path, kind: str) -> None:
    text = json.dumps(_large_session())
    file = tmp_path / "session.json"
    file.write_text(text)
    sources: dict[str, SessionSource] = {
        "path": file,
        "bytes": text.encode(),
        "json-text": text,
    }
    limits = gcengine.LoadLimits(max_bytes=1_000)
    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(sources[kind], limits=limits)
    assert raised.value.json_path == "$"
    assert "1,000" in raised.value.reason
    assert "limit" in raised.value.reason


def test_input_within_max_bytes_loads(tmp_path: Path) -> None:
    file = tmp_path / "session.json"
    file.write_text(json.dumps(V21))
    size = file.stat().st_size
    session = gcengine.load_session(file, limits=gcengine.LoadLimits(max_bytes=size))
    assert len(session.history) == len(V21["history"])


def test_more_messages_than_the_limit_is_refused() -> None:
    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(V21, limits=gcengine.LoadLimits(max_messages=5))
    assert "6 messages" in raised.value.reason
    assert "limit is 5" in raised.value.reason


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(changed(V21, (H, 1, "role"), MISSING), id="jaato-role-missing"),
        pytest.param(changed(V21, ("version",), None), id="jaato-version-null"),
        pytest.param(changed(V21, (BS, "source"), MISSING), id="budget_state-source-missing"),
        pytest.param(changed(CHAT, (M, 4, "role"), MISSING), id="chat-role-missing"),
        pytest.param(changed(ANTHROPIC, (M, 3, "role"), None), id="anthropic-role-null"),
    ],
)
def test_missing_or_null_value_is_described_in_json_terms(source: SessionSource) -> None:
    """The file holds null (or nothing); Python's "None" means nothing to the uploader."""
    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(source)
    assert "None" not in raised.value.reason


@pytest.mark.parametrize(
    ("source", "json_path"),
    [
        pytest.param(changed(V21, (BS, "tokens"), 1.5), "budget_state.tokens", id="tokens-1.5"),
        pytest.param(
            changed(V21, (H, 0, "turn_index"), 0.5), "history[0].turn_index", id="turn_index-0.5"
        ),
        pytest.param(
            changed(SNAPSHOT, ("context_limit",), 1000.5), "context_limit", id="context_limit"
        ),
    ],
)
def test_fractional_count_is_not_called_not_a_number(source: SessionSource, json_path: str) -> None:
    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(source)
    assert raised.value.json_path == json_path
    assert "whole number" in raised.value.reason
    assert "not a number" not in raised.value.reason


# Leniency on purpose: content from newer producers is carried along, never shown as text.

SECRET = "OPAQUE-PAYLOAD-7f3a"


@pytest.mark.parametrize(
    ("source", "opaque_kind"),
    [
        pytest.param(
            appended(
                V21, (H, 1, "parts"), {"type": "executable_code", "code": f"print('{SECRET}')"}
            ),
            "executable_code",
            id="jaato-new-part-type",
        ),
        pytest.param(
            appended(V210, (H, 3, "parts"), {"type": "unknown", "repr": f"Part(code={SECRET!r})"}),
            "unknown",
            id="jaato-unknown-part",
        ),
        pytest.param(
            changed(
                CHAT,
                (M, 1, "content"),
                [
                    {"type": "text", "text": "Why does CI fail?"},
                    {"type": "input_audio", "input_audio": {"data": SECRET, "format": "wav"}},
                ],
            ),
            "input_audio",
            id="chat-audio-part",
        ),
        pytest.param(
            changed(RESPONSES, (3, "encrypted_content"), SECRET),
            "compaction",
            id="responses-compaction-item",
        ),
        pytest.param(
            changed(ANTHROPIC, (M, 3, "content", 0), {"type": "redacted_thinking", "data": SECRET}),
            "redacted_thinking",
            id="anthropic-redacted-thinking",
        ),
    ],
)
def test_unknown_content_is_kept_opaque_and_never_shown_as_text(
    source: SessionSource, opaque_kind: str
) -> None:
    session = gcengine.load_session(source)
    opaque = [part.opaque for message in session.history for part in message.parts if part.opaque]
    assert [part.kind for part in opaque] == [opaque_kind]
    assert SECRET in json.dumps(opaque[0].data)
    for message in session.history:
        assert SECRET not in message.text
        assert "Unrecognized part" not in message.text


def test_unknown_jaato_part_leaves_the_rest_of_the_message_intact() -> None:
    source = appended(V21, (H, 1, "parts"), {"type": "executable_code", "code": SECRET})
    session = gcengine.load_session(source)
    message = session.history[1]
    assert [part.type for part in message.parts] == [
        PartType.TEXT,
        PartType.FUNCTION_CALL,
        PartType.OPAQUE,
    ]
    assert message.text == "I'll search the file first."


def test_unknown_top_level_keys_are_kept_in_extra() -> None:
    future = {"mode": "strict", "note": SECRET}
    source = changed(V210, ("future_feature",), future)
    session = gcengine.load_session(source)
    assert session.extra["future_feature"] == future
    assert session.extra["workspace_path"] == "/home/dev/project"
    assert "profile_name" in session.extra
    assert all(SECRET not in message.text for message in session.history)
    assert len(session.history) == len(V210["history"])


def test_unknown_top_level_keys_survive_a_dump_and_reload() -> None:
    source = changed(V21, ("future_feature",), {"note": SECRET})
    session = gcengine.load_session(source)
    reloaded = gcengine.load_session(gcengine.dump_session(session))
    assert reloaded.extra["future_feature"] == {"note": SECRET}
