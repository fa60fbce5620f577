"""Agent transcripts: Claude Code, Codex, OpenTelemetry GenAI, Langfuse, OpenHands, SWE-agent.

What each reader makes of its format, the compactions the agent performed as the file
recorded them, the usage each call reported, and load -> dump -> load identity.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import gcengine
from gcengine import (
    CompactionNotFoundError,
    ContextLimitOrigin,
    GCPolicy,
    InstructionSource,
    MessageKind,
    PartType,
    Role,
    Session,
    SourceFormat,
)
from gcengine.messages import tool_pair_problems
from gcengine.tokens import TokenCounter
from tests.engine.agent_transcripts import (
    GENERATORS,
    SUMMARY_OPENING,
    Shape,
    generated_claude_code_rows,
    generated_claude_code_subagent,
    generated_codex_lines,
    generated_openhands_events,
    generated_otel_export,
    generated_swe_agent_trajectory,
    jsonl,
    shapes,
    zipped,
)

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "claude_code_log"


def roundtrip(session: Session, counter: TokenCounter) -> Session:
    return gcengine.load_session(gcengine.dump_session(session), counter=counter)


def load(text: Any, counter: TokenCounter) -> Session:
    return gcengine.load_session(text, counter=counter)


# --- Claude Code ------------------------------------------------------------------------------


SAMPLE_ORDER = [
    "system/summary.jsonl",
    "system/file_history_snapshot.jsonl",
    "system/queue_operation.jsonl",
    "user/user.jsonl",
    "assistant/assistant.jsonl",
    "assistant/thinking.jsonl",
    "tools/Bash-tool_use.jsonl",
    "system/system_info.jsonl",
    "tools/Bash-tool_result.jsonl",
    "tools/Task-tool_use.jsonl",
    "user/user_sidechain.jsonl",
    "assistant/assistant_sidechain.jsonl",
    "tools/Read-tool_result_error.jsonl",
    "tools/Task-tool_result.jsonl",
]


def sample_rows() -> str:
    """Every public sample row, as one transcript (rows of several real sessions, each call
    before its result)."""
    assert sorted(SAMPLE_ORDER) == sorted(
        str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*.jsonl")
    )
    return "".join((SAMPLES / name).read_text() for name in SAMPLE_ORDER)


def test_public_claude_code_rows_become_messages_keyed_by_their_uuid(counter: TokenCounter) -> None:
    session = load(sample_rows(), counter)
    assert session.source_format is SourceFormat.CLAUDE_CODE
    by_id = {m.message_id: m for m in session.history}
    bash_call = next(m for m in session.history if any(c.name == "Bash" for c in m.function_calls))
    [call] = bash_call.function_calls
    assert call.id == "toolu_01T1SrbUgaSJkHWJd5outNgr"
    assert bash_call.metadata["source"]["message"]["id"] == "msg_01MUcHFgCTt4LYAEMUbGsZ9u"
    assert "content" not in bash_call.metadata["source"]["message"]
    result = by_id["3367bd17-88e3-47f0-a32b-98b72d7ddebf"]
    assert result.role is Role.TOOL
    assert result.function_responses[0].name == "Bash"
    assert result.metadata["source"]["toolUseResult"]["interrupted"] is False
    thinking = next(m for m in session.history if m.parts[0].type is PartType.THOUGHT)
    assert thinking.parts[0].extra.get("signature")
    assert "The user is asking me" not in thinking.text
    assert roundtrip(session, counter) == session


def test_public_rows_that_are_not_conversation_are_kept_as_metadata(counter: TokenCounter) -> None:
    session = load(sample_rows(), counter)
    records = session.metadata["claude_code"]["records"]
    kinds = sorted(r["record"]["type"] for r in records)
    assert kinds == ["file-history-snapshot", "queue-operation", "summary", "system"]
    assert all(r["at"].startswith("line ") for r in records)
    assert session.description == "CSS Details Margin Styling"
    texts = " ".join(m.text for m in session.history)
    assert "PostToolUse:MultiEdit" not in texts
    assert "CSS Details Margin Styling" not in texts


def test_public_sidechain_rows_become_their_sub_agent(counter: TokenCounter) -> None:
    session = load(sample_rows(), counter)
    agent = next(a for a in session.subagents if a.agent_id == "b1f5d80e")
    assert [m.role for m in agent.history] == [Role.USER, Role.MODEL]
    assert agent.history[0].text == "Warmup"
    assert all(m.message_id not in {h.message_id for h in session.history} for m in agent.history)
    assert agent.recorded_usage[0].prompt_tokens == 3 + 1374 + 0
    task = next(a for a in session.subagents if a.agent_id == "c8d9b115")
    assert task.history[0].function_responses[0].is_error


def test_a_response_split_over_rows_counts_once_with_its_last_figures(
    counter: TokenCounter,
) -> None:
    shape = Shape(turns=3, tool_every=1, parallel=True)
    rows = generated_claude_code_rows(shape)
    session = load(jsonl(rows), counter)
    responses = [r["message"] for r in rows if r["type"] == "assistant"]
    assert len({m["id"] for m in responses}) == len(session.recorded_usage) == 6
    first = session.recorded_usage[0]
    split = [m for m in responses if m["id"] == first.response_id]
    assert len(split) == 3  # text, then the two calls: three rows, one response
    assert first.prompt_tokens == 1000
    assert first.output_tokens == split[-1]["usage"]["output_tokens"] == 25
    assert (first.cache_read_tokens, first.cache_creation_tokens) == (797, 200)
    first_row = next(r for r in rows if r["type"] == "assistant")
    assert first.message_id == first_row["uuid"]
    assert first.at == first_row["timestamp"]
    assert session.recorded_prompt_tokens == session.recorded_usage[-1].prompt_tokens == 1820


def test_a_claude_code_compaction_is_observed_with_every_recorded_field(
    counter: TokenCounter,
) -> None:
    rows = generated_claude_code_rows(Shape(turns=4, tool_every=2, compact_after=(1,)))
    session = load(jsonl(rows), counter)
    boundary = next(r for r in rows if r.get("subtype") == "compact_boundary")
    summary_row = next(r for r in rows if r.get("isCompactSummary"))
    [compaction] = session.compactions
    assert compaction.source_format is SourceFormat.CLAUDE_CODE
    assert compaction.compaction_id == boundary["uuid"]
    assert compaction.at == boundary["timestamp"]
    assert compaction.trigger == "auto"
    assert (compaction.tokens_before, compaction.tokens_after) == (1510, 901)
    assert compaction.summary is not None
    assert compaction.summary.startswith(SUMMARY_OPENING)
    assert compaction.summary_message_id == summary_row["uuid"]
    assert compaction.before_message_id == summary_row["uuid"]
    assert compaction.metadata["logicalParentUuid"] == boundary["logicalParentUuid"]
    before_rows = [
        r["uuid"] for r in rows[: rows.index(boundary)] if r["type"] in ("user", "assistant")
    ]
    assert compaction.replaced_message_ids == compaction.context_before == before_rows
    assert compaction.replaced_count == len(before_rows)
    # The history is the context after it, opened by the summary: a summary, never user speech.
    summary = session.history[0]
    assert summary.message_id == summary_row["uuid"]
    assert summary.kind is MessageKind.SUMMARY
    # It belongs to the turn in progress when the agent compacted; the next prompt opens turn 2.
    assert compaction.before_turn == summary.turn_index == 1
    leaves = {
        e.message_ids[0]: e.gc_policy
        for _, e in session.budget.entries[InstructionSource.CONVERSATION].walk()
        if not e.children
    }
    assert leaves[summary.message_id] is GCPolicy.PRESERVABLE
    assert leaves[session.history[1].message_id] is GCPolicy.LOCKED
    assert [t.index for t in session.turns()] == [1, 2, 3]
    assert roundtrip(session, counter) == session


def test_a_boundary_without_post_tokens_records_none(counter: TokenCounter) -> None:
    shape = Shape(turns=3, compact_after=(0,), extras={"post_tokens": False})
    [compaction] = load(jsonl(generated_claude_code_rows(shape)), counter).compactions
    assert compaction.tokens_before == 1160
    assert compaction.tokens_after is None


def test_a_summary_row_without_a_boundary_is_a_compaction_of_its_own(counter: TokenCounter) -> None:
    rows = generated_claude_code_rows(Shape(turns=3, compact_after=(0,)))
    rows = [r for r in rows if r.get("subtype") != "compact_boundary"]
    session = load(jsonl(rows), counter)
    [compaction] = session.compactions
    summary_row = next(r for r in rows if r.get("isCompactSummary"))
    assert compaction.compaction_id == summary_row["uuid"]
    assert (compaction.trigger, compaction.tokens_before, compaction.tokens_after) == (
        None,
        None,
        None,
    )
    assert compaction.summary is not None
    assert compaction.replaced_count == 5  # the request, the split response, result, answer
    assert compaction.metadata == {}


def test_history_before_a_compaction_is_the_context_it_replaced(counter: TokenCounter) -> None:
    rows = generated_claude_code_rows(Shape(turns=5, tool_every=2, compact_after=(1, 3)))
    session = load(jsonl(rows), counter)
    first, second = session.compactions
    before = gcengine.history_before(session, second)
    assert [m.message_id for m in before.history] == second.context_before
    assert before.history[0].message_id == first.summary_message_id
    assert before.compactions == [first]
    assert before.session_id == f"{session.session_id}@{second.compaction_id}"
    assert before.recorded_prompt_tokens == second.tokens_before
    assert {u.message_id for u in before.recorded_usage} <= {
        *second.context_before,
        *first.context_before,
    }
    assert before.budget == gcengine.rebuild_budget(before, counter)
    assert before.budget.total_tokens() > 0
    assert [t.index for t in before.turns()] == [1, 2, 3]
    earliest = gcengine.history_before(session, first.compaction_id)
    assert [m.message_id for m in earliest.history] == first.context_before
    assert earliest.compactions == []
    with pytest.raises(CompactionNotFoundError):
        gcengine.history_before(session, "no-such-compaction")


def test_a_policy_can_run_on_the_history_before_a_compaction(counter: TokenCounter) -> None:
    session = load(jsonl(generated_claude_code_rows(Shape(turns=8, compact_after=(6,)))), counter)
    before = gcengine.history_before(session, session.compactions[0])
    tight = before.model_copy(update={"context_limit": before.budget.total_tokens()})
    tight.budget = gcengine.rebuild_budget(tight, counter)
    config = gcengine.load_gc_config(
        {"type": "budget", "threshold_percent": 80, "target_percent": 50}, env={}
    )
    outcome = gcengine.run_gc(tight, config)
    assert outcome.result.items_collected > 0
    assert outcome.session.compactions == before.compactions


def test_a_zip_of_a_session_and_its_subagents_folder(counter: TokenCounter) -> None:
    shape = Shape(turns=2, seed=1)
    main = generated_claude_code_rows(shape)
    task_call = next(
        b["id"]
        for r in main
        if r["type"] == "assistant"
        for b in r["message"]["content"]
        if b["type"] == "tool_use"
    )
    main.append(
        {
            "type": "progress",
            "data": {"type": "agent_progress", "agentId": "a1b2"},
            "toolUseID": "progress-x",
            "parentToolUseID": task_call,
            "uuid": "progress-agent",
        }
    )
    archive = zipped(
        {
            "s1/s1.jsonl": jsonl(main),
            "s1/s1/subagents/agent-a1b2.jsonl": jsonl(
                generated_claude_code_subagent("a1b2", shape)
            ),
            "s1/s1/subagents/agent-acompact-9f.jsonl": jsonl(
                generated_claude_code_subagent("acompact-9f", shape)
            ),
            "__MACOSX/._s1.jsonl": b"\x00\x05",
        }
    )
    session = load(archive, counter)
    assert session.history == load(jsonl(main), counter).history
    agents = {a.agent_id: a for a in session.subagents}
    assert set(agents) == {"a1b2", "acompact-9f"}
    assert agents["a1b2"].parent_call_id == task_call
    assert not agents["a1b2"].is_compaction
    assert agents["acompact-9f"].is_compaction
    assert len(agents["a1b2"].history) > 0
    assert agents["a1b2"].recorded_usage
    assert [t.index for t in gcengine.split_into_turns(agents["a1b2"].history)] == [0, 1]
    assert roundtrip(session, counter) == session


def test_a_zip_of_one_transcript_reads_as_that_transcript(counter: TokenCounter) -> None:
    text = jsonl(generated_claude_code_rows(Shape(turns=2)))
    from_zip, plain = load(zipped({"only.jsonl": text}), counter), load(text, counter)
    assert from_zip.history == plain.history
    assert from_zip.recorded_usage == plain.recorded_usage
    # Records name their file and line.
    assert from_zip.metadata["claude_code"]["records"][0]["at"] == "only.jsonl line 2"


# --- Codex ------------------------------------------------------------------------------------


def test_a_codex_rollout_with_recorded_context_sizes_and_a_compacted_summary(
    counter: TokenCounter,
) -> None:
    lines = generated_codex_lines(Shape(turns=4, tool_every=1, compact_after=(1,)))
    session = load(jsonl(lines), counter)
    assert session.source_format is SourceFormat.CODEX
    assert session.session_id == "0199-gen-0"
    assert session.model == "gpt-5.3-codex"
    assert (session.context_limit, session.context_limit_origin) == (
        258400,
        ContextLimitOrigin.FILE,
    )
    assert session.system_instructions[0].text == "You are Codex, a coding agent."
    # Each call's figures are written twice; the running total tells one call from the next.
    assert [u.prompt_tokens for u in session.recorded_usage] == [
        1000,
        1120,
        1350,
        1470,
        1700,
        1820,
        2050,
        2170,
    ]
    assert session.recorded_usage[0].cache_read_tokens == 500
    assert session.recorded_usage[0].context_window == 258400
    [compaction] = session.compactions
    compacted_line = next(i for i, line in enumerate(lines) if line["type"] == "compacted")
    assert compaction.compaction_id == f"line {compacted_line + 1}"
    assert compaction.summary == "Summary: turns up to 1 done."
    assert (compaction.tokens_before, compaction.tokens_after) == (1470, 1700)
    assert compaction.trigger is None
    summary = session.history[0]
    assert summary.kind is MessageKind.SUMMARY
    assert summary.text == compaction.summary
    assert compaction.summary_message_id == summary.message_id == compaction.before_message_id
    assert compaction.before_turn == summary.turn_index == 2
    assert compaction.replaced_count == 8
    kinds = {r["record"]["type"] for r in session.metadata["codex"]["records"]}
    assert kinds == {"session_meta", "turn_context", "event_msg"}
    assert all(m.text != "Thinking." for m in session.history)
    assert roundtrip(session, counter) == session


def test_a_remote_codex_compaction_keeps_its_replacement_history(counter: TokenCounter) -> None:
    shape = Shape(turns=3, compact_after=(1,), extras={"remote": True})
    session = load(jsonl(generated_codex_lines(shape)), counter)
    [compaction] = session.compactions
    assert compaction.summary is None
    assert compaction.summary_message_id is None
    first, opaque = session.history[:2]
    assert first.text.startswith("Request 1")
    assert opaque.parts[0].opaque is not None
    assert opaque.parts[0].opaque.kind == "compaction"
    assert "replacement_history" not in compaction.metadata
    assert roundtrip(session, counter) == session


def test_codex_messages_keep_their_lines(counter: TokenCounter) -> None:
    session = load(jsonl(generated_codex_lines(Shape(turns=1))), counter)
    request = session.history[0]
    [source] = request.metadata["source"]
    assert source["at"] == "line 3"
    assert source["type"] == "message"
    assert "content" not in source


# --- OpenTelemetry GenAI ------------------------------------------------------------------------

# The span from the format reference (users_and_formats.md, section 4.3).
REFERENCE_SPAN: dict[str, Any] = {
    "traceId": "5b8aa5a2d2c872e8321cf37308d69df2",
    "spanId": "051581bf3cb55c13",
    "name": "chat claude-sonnet-4-6",
    "kind": "SPAN_KIND_CLIENT",
    "startTimeUnixNano": "1767225600000000000",
    "endTimeUnixNano": "1767225601200000000",
    "attributes": {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-6",
        "gen_ai.conversation.id": "sess-42",
        "gen_ai.conversation.compacted": True,
        "gen_ai.usage.input_tokens": 398,
        "gen_ai.usage.output_tokens": 21,
        "gen_ai.usage.cache_read.input_tokens": 256,
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.system_instructions": '[{"type":"text","content":"You are a build agent."}]',
        "gen_ai.input.messages": json.dumps(
            [
                {
                    "role": "user",
                    "parts": [{"type": "compaction", "content": "Summary: CI test_math fails."}],
                },
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "tool_call",
                            "id": "toolu_01",
                            "name": "read_log",
                            "arguments": {"job": "test"},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "parts": [
                        {
                            "type": "tool_call_response",
                            "id": "toolu_01",
                            "response": "AssertionError: expected 3 got 2",
                        }
                    ],
                },
            ]
        ),
        "gen_ai.output.messages": json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": "A unit test asserts 3 but gets 2."}],
                }
            ]
        ),
    },
}


def test_the_reference_otel_span(counter: TokenCounter) -> None:
    session = load([REFERENCE_SPAN], counter)
    assert session.source_format is SourceFormat.OTEL_GENAI
    assert (session.session_id, session.model) == ("sess-42", "claude-sonnet-4-6")
    assert [m.role for m in session.history] == [Role.USER, Role.MODEL, Role.TOOL, Role.MODEL]
    assert session.history[0].kind is MessageKind.SUMMARY
    assert session.history[2].function_responses[0].name == "read_log"
    assert session.system_instructions[0].text == "You are a build agent."
    [usage] = session.recorded_usage
    assert (usage.prompt_tokens, usage.output_tokens, usage.cache_read_tokens) == (398, 21, 256)
    assert usage.at == "2026-01-01T00:00:00Z"
    # Marked compacted, with its earlier context outside the file: observed, nothing replaced.
    [compaction] = session.compactions
    assert compaction.summary == "Summary: CI test_math fails."
    assert (compaction.tokens_before, compaction.tokens_after) == (None, 398)
    assert compaction.replaced == []
    assert compaction.metadata["marked"] is True
    assert compaction.before_message_id == session.history[0].message_id
    assert roundtrip(session, counter) == session


@pytest.mark.parametrize("flat", [True, False], ids=["plain-attributes", "otlp-attributes"])
def test_otel_calls_are_put_back_together_into_one_history(
    flat: bool, counter: TokenCounter
) -> None:
    shape = Shape(turns=5, tool_every=2, compact_after=(2,), extras={"flat": flat})
    session = load(json.dumps(generated_otel_export(shape)), counter)
    requests = [
        m.text for m in session.history if m.role is Role.USER and m.kind is MessageKind.CHAT
    ]
    assert requests == [f"Request {n} (seed 0): please look at module {n}." for n in (3, 4)]
    [compaction] = session.compactions
    assert compaction.metadata["marked"] is True
    assert compaction.summary == "Summary: turns up to 2 done."
    assert (compaction.tokens_before, compaction.tokens_after) == (1820, 2170)
    assert compaction.replaced_count == 10
    assert len(session.recorded_usage) == 8
    assert session.metadata.get("otel") is None
    assert roundtrip(session, counter) == session


def test_an_unmarked_rewrite_of_the_context_is_observed_as_unmarked(counter: TokenCounter) -> None:
    first = copy.deepcopy(REFERENCE_SPAN)
    del first["attributes"]["gen_ai.conversation.compacted"]
    first["attributes"]["gen_ai.input.messages"] = json.dumps(
        [
            {"role": "user", "parts": [{"type": "text", "content": "Why does CI fail?"}]},
            {"role": "assistant", "parts": [{"type": "text", "content": "Reading."}]},
        ]
    )
    second = copy.deepcopy(first)
    second["spanId"] = "second"
    second["startTimeUnixNano"] = "1767225700000000000"
    second["attributes"]["gen_ai.input.messages"] = json.dumps(
        [
            {"role": "user", "parts": [{"type": "text", "content": "Why does CI fail?"}]},
            {"role": "user", "parts": [{"type": "text", "content": "Only lint now."}]},
        ]
    )
    session = load([second, first], counter)  # out of order: calls are ordered by start
    [compaction] = session.compactions
    assert compaction.compaction_id == "second"
    assert compaction.metadata["marked"] is False
    assert compaction.replaced_count == 3


# --- Langfuse ---------------------------------------------------------------------------------

# The trace from the format reference (users_and_formats.md, section 4.4).
REFERENCE_TRACE: dict[str, Any] = {
    "id": "trace-7f3",
    "name": "ci-agent",
    "sessionId": "sess-42",
    "userId": "dev-1",
    "input": {"task": "Why does CI fail?"},
    "observations": [
        {
            "id": "gen-1",
            "traceId": "trace-7f3",
            "type": "GENERATION",
            "name": "chat",
            "parentObservationId": None,
            "model": "gpt-4.1",
            "startTime": "2026-01-01T00:00:00.000Z",
            "endTime": "2026-01-01T00:00:01.100Z",
            "input": [{"role": "user", "content": "Why does CI fail?"}],
            "output": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_01",
                        "type": "function",
                        "function": {"name": "read_log", "arguments": '{"job":"test"}'},
                    }
                ],
            },
            "usageDetails": {"input": 120, "output": 14, "total": 134},
            "costDetails": {"total": 0.0004},
        },
        {
            "id": "tool-1",
            "traceId": "trace-7f3",
            "type": "TOOL",
            "name": "read_log",
            "parentObservationId": "gen-1",
            "startTime": "2026-01-01T00:00:01.200Z",
            "endTime": "2026-01-01T00:00:01.300Z",
            "input": {"job": "test"},
            "output": "E   AssertionError: expected 3 got 2",
            "metadata": {"tool_call_id": "call_01"},
        },
    ],
    "scores": [],
}


def test_the_reference_langfuse_trace(counter: TokenCounter) -> None:
    session = load(REFERENCE_TRACE, counter)
    assert session.source_format is SourceFormat.LANGFUSE
    assert (session.session_id, session.model) == ("sess-42", "gpt-4.1")
    assert [m.role for m in session.history] == [Role.USER, Role.MODEL, Role.TOOL]
    response = session.history[2].function_responses[0]
    assert (response.call_id, response.name, response.result) == (
        "call_01",
        "read_log",
        "E   AssertionError: expected 3 got 2",
    )
    assert gcengine.tool_pair_report(session) == []
    [usage] = session.recorded_usage
    assert (usage.prompt_tokens, usage.output_tokens, usage.response_id) == (120, 14, "gen-1")
    kept = session.metadata["langfuse"]
    assert kept["traces"][0]["userId"] == "dev-1"
    assert [o["id"] for o in kept["observations"]] == ["tool-1"]
    assert roundtrip(session, counter) == session


def test_langfuse_camel_case_and_snake_case_exports_give_the_same_conversation(
    counter: TokenCounter,
) -> None:
    camel = load(GENERATORS["langfuse"](Shape(turns=4)), counter)
    snake = load(GENERATORS["langfuse"](Shape(turns=4, extras={"snake": True})), counter)
    assert [(m.role, m.parts) for m in camel.history] == [(m.role, m.parts) for m in snake.history]
    assert camel.history[0].text.startswith("Request 0")
    assert camel.system_instructions == snake.system_instructions
    assert [u.prompt_tokens for u in camel.recorded_usage] == [
        1000,
        1120,
        1350,
        1470,
        1700,
        1820,
        2050,
        2170,
    ]
    assert camel.recorded_usage[0].cache_read_tokens == 100
    assert snake.session_id == "gen-session-0"
    assert snake.created_at == "2026-01-01 00:00:00.000"


# --- OpenHands --------------------------------------------------------------------------------


@pytest.mark.parametrize("by_range", [False, True], ids=["event-ids", "event-range"])
def test_an_openhands_condensation_is_observed(by_range: bool, counter: TokenCounter) -> None:
    events = generated_openhands_events(
        Shape(turns=4, compact_after=(1,), extras={"range": by_range})
    )
    session = load(json.dumps(events), counter)
    assert session.source_format is SourceFormat.OPENHANDS
    condensation = next(e for e in events if e.get("action") == "condensation")
    [compaction] = session.compactions
    assert compaction.compaction_id == f"event {condensation['id']}"
    assert compaction.summary == "Summary: turns up to 1 done."
    assert compaction.tokens_before is None
    assert compaction.trigger is None
    first, summary = session.history[:2]
    assert first.text.startswith("Request 0")
    assert summary.kind is MessageKind.SUMMARY
    assert compaction.summary_message_id == summary.message_id == compaction.before_message_id
    assert compaction.before_turn == session.history[2].turn_index == 2
    assert compaction.replaced_count == 7
    assert compaction.context_before[0] == first.message_id
    assert len(compaction.context_before) == 1 + compaction.replaced_count
    assert compaction.metadata["summary_offset"] == 1
    states = [e for e in session.metadata["openhands"]["events"] if e.get("observation")]
    assert {e["observation"] for e in states} == {"agent_state_changed"}
    assert session.system_instructions[0].text == "You are OpenHands."
    assert roundtrip(session, counter) == session


def test_a_later_condensation_replaces_the_earlier_summary(counter: TokenCounter) -> None:
    session = load(
        json.dumps(generated_openhands_events(Shape(turns=5, compact_after=(1, 3)))), counter
    )
    first, second = session.compactions
    assert first.summary_message_id in second.replaced_message_ids
    summaries = [m for m in session.history if m.kind is MessageKind.SUMMARY]
    assert [m.message_id for m in summaries] == [second.summary_message_id]
    before = gcengine.history_before(session, second)
    assert [m.message_id for m in before.history] == second.context_before
    assert first.summary_message_id in {m.message_id for m in before.history}


def test_openhands_calls_of_one_response_share_its_usage(counter: TokenCounter) -> None:
    session = load(json.dumps(generated_openhands_events(Shape(turns=1, parallel=True))), counter)
    first, _, second = session.history[1:4]
    assert first.text == "Let me look."
    assert [c.name for c in first.function_calls + second.function_calls] == [
        "read_file",
        "run_tests",
    ]
    assert first.metadata["source"][0]["action"] == "run"
    assert [u.prompt_tokens for u in session.recorded_usage] == [1000]
    assert session.recorded_usage[0].cache_read_tokens == 100
    assert session.model == "gpt-4o"


# --- SWE-agent --------------------------------------------------------------------------------


def test_a_swe_agent_trajectory(counter: TokenCounter) -> None:
    data = generated_swe_agent_trajectory(Shape(turns=2, parallel=True))
    session = load(json.dumps(data), counter)
    assert session.source_format is SourceFormat.SWE_AGENT
    assert session.system_instructions[0].text.startswith("SETTING:")
    assert [m.role for m in session.history[:3]] == [Role.USER, Role.MODEL, Role.TOOL]
    assert session.history[1].metadata["thought"] == "Let me look."
    assert session.history[2].function_responses[0].name == "read_file"
    assert session.metadata["swe_agent"]["info"]["model_stats"]["api_calls"] == 2
    assert session.recorded_usage == []
    demonstration = {"history": data["history"]}
    assert load(demonstration, counter).history == session.history
    assert roundtrip(session, counter) == session


# --- Every format -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_detection_is_by_shape_never_by_file_name(
    name: str, tmp_path: Path, counter: TokenCounter
) -> None:
    text = GENERATORS[name](Shape(turns=2))
    misleading = tmp_path / "session.jaato.json"
    misleading.write_text(text)
    assert load(misleading, counter).source_format.value == name


@pytest.mark.parametrize("name", sorted(GENERATORS))
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(shape=shapes())
def test_every_format_loads_dumps_and_loads_back_equal(
    name: str, shape: Shape, counter: TokenCounter
) -> None:
    session = load(GENERATORS[name](shape), counter)
    again = roundtrip(session, counter)
    assert again == session
    assert json.loads(gcengine.dump_session(session))["version"] == "2.1"
    # Every message the file held is in the context or in what a compaction replaced.
    ids = [m.message_id for m in session.history] + [
        m.message_id for c in session.compactions for m in c.replaced
    ]
    assert len(ids) == len(set(ids))
    for compaction in session.compactions:
        before = gcengine.history_before(session, compaction)
        assert before.history == gcengine.history_before(again, compaction).history


def test_a_claude_code_image_block_is_media_counted_as_an_image(counter: TokenCounter) -> None:
    rows = generated_claude_code_rows(Shape(turns=1, tool_every=0))
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    rows[0]["message"]["content"] = [{"type": "text", "text": "What is this?"}, image]
    session = load(jsonl(rows), counter)
    data = session.history[0].parts[1].inline_data
    assert data is not None
    assert (data.mime_type, data.data) == ("image/png", "iVBORw0KGgo=")
    assert roundtrip(session, counter) == session


def test_otel_messages_recorded_on_an_event_are_read(counter: TokenCounter) -> None:
    span = copy.deepcopy(REFERENCE_SPAN)
    attributes = span["attributes"]
    moved = {k: attributes.pop(k) for k in ("gen_ai.input.messages", "gen_ai.output.messages")}
    span["events"] = [
        {
            "name": "gen_ai.client.inference.operation.details",
            "timeUnixNano": "1767225601200000000",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in moved.items()],
        }
    ]
    assert load([span], counter).history == load([REFERENCE_SPAN], counter).history


SPOTTER = Path(__file__).parents[1] / "fixtures" / "formats" / "spotter"
# Human prompts per real session (its README's count: user rows with text, leaving out tool
# results, meta rows, compact summaries, command wrappers and interrupts).
SPOTTER_PROMPTS = {
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl": 2,
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl": 2,
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": 2,
    "short.jsonl": 1,
}


@pytest.mark.parametrize("name", sorted(SPOTTER_PROMPTS))
def test_only_a_persons_prompts_open_turns_of_a_real_claude_code_session(
    name: str, counter: TokenCounter
) -> None:
    session = load((SPOTTER / name).read_bytes(), counter)
    everything = [m for c in session.compactions for m in c.replaced] + session.history
    assert len({m.turn_index for m in everything}) == SPOTTER_PROMPTS[name]
    # Skill text, notifications, interruptions and command wrappers stay, in the turn going on.
    injected = [m for m in everything if "injected" in m.metadata]
    assert injected
    assert all(m.role is Role.USER and m.turn_index is not None for m in injected)
    assert not tool_pair_problems(everything)
