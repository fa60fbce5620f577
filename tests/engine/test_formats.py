"""Reading every supported format, and writing JAATO files that read back equal."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import gcengine
from gcengine import (
    ContextLimitOrigin,
    GCPolicy,
    InstructionSource,
    MessageKind,
    PartType,
    Role,
    SourceFormat,
    cli,
)
from gcengine.synthetic import SessionShape, generate_session_file
from gcengine.tokens import TokenCounter, count_message
from tests.engine.conftest import EXAMPLES, example

OPENAI_CHAT: dict[str, Any] = {
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
    "usage": {"prompt_tokens": 412, "completion_tokens": 18},
}

OPENAI_RESPONSES: list[dict[str, Any]] = [
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Why does CI fail?"}],
    },
    {
        "type": "function_call",
        "call_id": "call_01",
        "name": "read_log",
        "arguments": '{"job":"test"}',
    },
    {
        "type": "function_call",
        "call_id": "call_02",
        "name": "read_log",
        "arguments": '{"job":"lint"}',
    },
    {"type": "function_call_output", "call_id": "call_01", "output": "E   AssertionError ..."},
    {"type": "function_call_output", "call_id": "call_02", "output": "ok"},
    {"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAA..."},
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "A test fails."}],
    },
]

ANTHROPIC: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "system": "You are a build agent.",
    "messages": [
        {"role": "user", "content": "Why does CI fail?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "The log will say.", "signature": "sig"},
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
                {"type": "compaction", "content": "Summary: user asked about CI; test_math fails."},
                {"type": "text", "text": "A unit test asserts 3 but gets 2."},
            ],
        },
    ],
    "usage": {"input_tokens": 398, "output_tokens": 21, "cache_read_input_tokens": 256},
}


def roundtrip(session: gcengine.Session, counter: TokenCounter) -> gcengine.Session:
    return gcengine.load_session(gcengine.dump_session(session), counter=counter)


@pytest.mark.parametrize("name", ["jaato_session_v2.1.json", "jaato_session_v2.10.json"])
def test_jaato_examples_load_with_their_conversation(name: str, counter: TokenCounter) -> None:
    session = gcengine.load_session(EXAMPLES / name, counter=counter)
    assert session.source_format is SourceFormat.JAATO
    assert session.session_id == "20260301_101500"
    assert [m.role for m in session.history] == [
        Role.USER,
        Role.MODEL,
        Role.TOOL,
        Role.MODEL,
        Role.USER,
        Role.MODEL,
    ]
    call = session.history[1].function_calls[0]
    assert (call.id, call.name, call.args) == (
        "call_001",
        "grep_content",
        {"pattern": "TODO", "path": "src/app.py"},
    )
    assert session.history[2].function_responses[0].result["matches"][0]["line"] == 12
    assert [t.index for t in session.turns()] == [0, 1]
    assert len(session.turn_accounting) == 2
    assert session.turn_accounting[0].cache_read == 4096
    assert session.user_inputs[1] == "Thanks. Which one is more urgent?"
    assert session.description == "TODO triage in src/app.py"


def test_a_jaato_history_alone_reads_as_the_files_messages(counter: TokenCounter) -> None:
    data = example("jaato_session_v2.1.json")
    whole = gcengine.load_session(data, counter=counter)
    alone = gcengine.load_session(data["history"], counter=counter)
    assert alone.source_format is gcengine.SourceFormat.JAATO
    assert alone.history == whole.history
    assert alone.session_id.startswith("imported_")


def test_v2_10_keeps_its_extra_fields_through_a_round_trip(counter: TokenCounter) -> None:
    session = gcengine.load_session(EXAMPLES / "jaato_session_v2.10.json", counter=counter)
    response = session.history[2].function_responses[0]
    assert response.extra == {"untrusted": False, "untrusted_source": None}
    assert "budget_control" in session.extra
    assert "runner_identity" in session.extra
    written = json.loads(gcengine.dump_session(session))
    assert written["version"] == "2.1"
    assert written["history"][2]["parts"][0]["untrusted"] is False
    assert roundtrip(session, counter) == session


def test_a_compact_dump_is_the_same_file_without_whitespace(counter: TokenCounter) -> None:
    session = gcengine.load_session(EXAMPLES / "jaato_session_v2.10.json", counter=counter)
    indented = gcengine.dump_session(session)
    compact = gcengine.dump_session(session, indent=None)

    assert json.loads(compact) == json.loads(indented)
    assert compact == json.dumps(json.loads(compact), separators=(",", ":"), ensure_ascii=False)
    assert len(compact) < len(indented) * 0.8
    assert gcengine.load_session(compact, counter=counter) == session


def test_context_limit_comes_from_the_model_table_or_the_default(counter: TokenCounter) -> None:
    v21 = gcengine.load_session(EXAMPLES / "jaato_session_v2.1.json", counter=counter)
    assert (v21.model, v21.context_limit, v21.context_limit_origin) == (
        "claude-sonnet-4",
        200_000,
        ContextLimitOrigin.MODEL,
    )
    v210 = gcengine.load_session(EXAMPLES / "jaato_session_v2.10.json", counter=counter)
    assert (v210.context_limit, v210.context_limit_origin) == (128_000, ContextLimitOrigin.DEFAULT)
    snapshot = gcengine.load_session(EXAMPLES / "jaato_budget_snapshot.json", counter=counter)
    assert (snapshot.context_limit, snapshot.context_limit_origin) == (
        200_000,
        ContextLimitOrigin.FILE,
    )


def test_message_ids_jaato_never_saved_are_reattached_to_the_recorded_budget(
    counter: TokenCounter,
) -> None:
    session = gcengine.load_session(EXAMPLES / "jaato_session_v2.1.json", counter=counter)
    assert session.recorded_budget is not None
    recorded = session.recorded_budget.entries[InstructionSource.CONVERSATION]
    history_ids = [m.message_id for m in session.history]
    assert [child.message_ids[0] for child in recorded.children.values()] == history_ids
    assert any("matched to messages by position" in w for w in session.warnings)


def test_recorded_figures_are_kept_except_where_jaato_missed_content(counter: TokenCounter) -> None:
    session = gcengine.load_session(EXAMPLES / "jaato_session_v2.1.json", counter=counter)
    leaves = {
        e.message_ids[0]: e
        for _, e in session.budget.entries[InstructionSource.CONVERSATION].walk()
        if not e.children
    }
    first, call_message = session.history[0], session.history[1]
    assert leaves[first.message_id].tokens == 12
    assert leaves[first.message_id].metadata["counted_by"] == "recorded"
    # JAATO recorded 6 tokens for the model message that calls grep_content: it left the call out.
    assert leaves[call_message.message_id].tokens == count_message(call_message, counter) > 6
    assert leaves[call_message.message_id].metadata["counted_by"] == counter.name


def test_drift_compares_recorded_and_counted_figures(counter: TokenCounter) -> None:
    session = gcengine.load_session(EXAMPLES / "jaato_session_v2.1.json", counter=counter)
    drift = gcengine.token_drift(session, counter)
    assert len(drift.messages) == 6
    by_id = {d.message_id: d for d in drift.messages}
    assert by_id[session.history[1].message_id].recorded == 6
    assert by_id[session.history[1].message_id].difference > 0
    assert drift.recorded_total == 85
    assert drift.counted_total == sum(count_message(m, counter) for m in session.history)
    assert drift.counter == counter.name


class NamedSpy:
    """Counts with ``inner`` under its name, and records every text it is asked about."""

    def __init__(self, inner: TokenCounter) -> None:
        self.inner = inner
        self.name = inner.name
        self.exact = inner.exact
        self.calls: list[str] = []

    def count(self, text: str) -> int:
        self.calls.append(text)
        return self.inner.count(text)


def fresh_context_count(session: gcengine.Session, counter: TokenCounter) -> int:
    return sum(count_message(m, counter) for m in session.history) + sum(
        counter.count(i.text) for i in session.system_instructions
    )


def test_drift_counts_again_only_the_messages_the_file_recorded(counter: TokenCounter) -> None:
    # The budget holds the loader's count of every message it counted itself, so a drift check
    # after a load counts only the messages whose figure the file recorded, whatever the
    # counter's cache still holds.
    session = gcengine.load_session(EXAMPLES / "jaato_session_v2.1.json", counter=counter)
    spy = NamedSpy(counter)
    drift = gcengine.token_drift(session, spy)
    assert drift.counted_context_tokens == fresh_context_count(session, counter)
    conversation = session.budget.entries[InstructionSource.CONVERSATION]
    made_by = {
        leaf.message_ids[0]: leaf.metadata["counted_by"]
        for _, leaf in conversation.walk()
        if not leaf.children
    }
    recorded_only = [m for m in session.history if made_by[m.message_id] == "recorded"]
    assert 0 < len(recorded_only) < len(session.history)
    spy_alone = NamedSpy(counter)
    for message in recorded_only:
        count_message(message, spy_alone)
    assert spy.calls == spy_alone.calls + [i.text for i in session.system_instructions]

    generated = gcengine.load_session(
        generate_session_file(SessionShape(turns=30, seed=2)), counter=counter
    )
    spy = NamedSpy(counter)
    drift = gcengine.token_drift(generated, spy)
    assert drift.counted_context_tokens == fresh_context_count(generated, counter)
    assert spy.calls == [i.text for i in generated.system_instructions]


def test_budget_follows_jaato_policies_without_its_mistakes(counter: TokenCounter) -> None:
    session = gcengine.load_session(EXAMPLES / "jaato_session_v2.1.json", counter=counter)
    conversation = session.budget.entries[InstructionSource.CONVERSATION]
    turn0, turn1 = conversation.children["turn_0"], conversation.children["turn_1"]
    policies0 = [leaf.gc_policy for leaf in turn0.children.values()]
    # The request is locked, the tool work ephemeral, and the answer that closes the complex
    # turn preservable (JAATO keeps only the very last answer of the session).
    assert policies0 == [
        GCPolicy.LOCKED,
        GCPolicy.EPHEMERAL,
        GCPolicy.EPHEMERAL,
        GCPolicy.PRESERVABLE,
    ]
    assert turn0.effective_gc_policy() is GCPolicy.PARTIAL
    assert [leaf.gc_policy for leaf in turn1.children.values()] == [GCPolicy.EPHEMERAL] * 2
    assert turn0.message_ids == [m.message_id for m in session.history[:4]]


def test_a_clarification_the_file_recorded_is_preservable(counter: TokenCounter) -> None:
    data = example("jaato_session_v2.1.json")
    # The agent recorded the user's second message as the answer to a question it asked.
    data["budget_state"]["children"]["msg_4"]["metadata"] = {"turn_type": "clarification_a"}
    session = gcengine.load_session(data, counter=counter)
    leaves = {
        e.message_ids[0]: e.gc_policy
        for _, e in session.budget.entries[InstructionSource.CONVERSATION].walk()
        if not e.children
    }
    ids = [m.message_id for m in session.history]
    assert leaves[ids[4]] is GCPolicy.PRESERVABLE
    # JAATO's "turn summary" (the last answer, recorded preservable) is still not taken over.
    assert data["budget_state"]["children"]["msg_5"]["gc_policy"] == "preservable"
    assert leaves[ids[5]] is GCPolicy.EPHEMERAL


def test_a_notice_before_the_request_never_takes_its_lock(counter: TokenCounter) -> None:
    data = example("jaato_session_v2.1.json")
    notice = {
        "role": "user",
        "parts": [{"type": "text", "text": "[System: Context cleaned: removed 2 old turns.]"}],
    }
    summary = {
        "role": "user",
        "parts": [
            {
                "type": "text",
                "text": "[Context Summary - Previous conversation compressed]\n"
                "Found 2 TODOs.\n[End Context Summary]",
            }
        ],
    }
    data["history"] = [notice, summary, *data["history"]]
    data["budget_state"] = None
    session = gcengine.load_session(data, counter=counter)
    assert [m.kind for m in session.history[:3]] == [
        MessageKind.NOTICE,
        MessageKind.SUMMARY,
        MessageKind.CHAT,
    ]
    leaves = {
        e.message_ids[0]: e.gc_policy
        for _, e in session.budget.entries[InstructionSource.CONVERSATION].walk()
        if not e.children
    }
    ids = [m.message_id for m in session.history]
    assert leaves[ids[0]] is GCPolicy.EPHEMERAL
    assert leaves[ids[1]] is GCPolicy.PRESERVABLE
    assert leaves[ids[2]] is GCPolicy.LOCKED
    assert [t.index for t in session.turns()] == [0, 1, 2, 3]


def test_thoughts_and_unknown_parts_stay_data_never_visible_text(counter: TokenCounter) -> None:
    data = example("jaato_session_v2.1.json")
    data["history"][1]["parts"].insert(
        0, {"type": "unknown", "repr": "Part(thought='secret plan')"}
    )
    session = gcengine.load_session(data, counter=counter)
    message = session.history[1]
    assert message.parts[0].type is PartType.OPAQUE
    assert "secret plan" not in message.text
    assert "Unrecognized" not in message.text
    assert roundtrip(session, counter).history[1].parts[0] == message.parts[0]


def test_interrupted_turn_and_subagents_survive(counter: TokenCounter) -> None:
    data = example("jaato_session_v2.1.json")
    data["interrupted_turn"] = {
        "agent_id": "main",
        "pending_tool_calls": [{"id": "call_9", "name": "run_tests", "args": {"k": "slow"}}],
        "user_prompt": "",
        "started_at": "2026-03-01T10:16:00+00:00",
    }
    data["metadata"] = {
        "subagents": {
            "version": "1.0",
            "agents": [{"agent_id": "sub1", "profile_name": "explorer", "turn_count": 4}],
        },
        "plugin_states": {"todo": {"items": 3}},
    }
    session = gcengine.load_session(data, counter=counter)
    assert session.interrupted_turn is not None
    assert session.interrupted_turn.pending_tool_calls[0].name == "run_tests"
    assert session.metadata["subagents"]["agents"][0]["agent_id"] == "sub1"
    again = roundtrip(session, counter)
    assert again == session
    assert json.loads(gcengine.dump_session(session))["metadata"]["plugin_states"] == {
        "todo": {"items": 3}
    }


def test_jaato_session_state_is_shown_on_the_session(
    counter: TokenCounter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A turn left running with its pending calls, the sub-agents JAATO recorded and its
    plugins' saved states are on the session, ready to show, and the CLI shows them."""
    data = example("jaato_session_v2.1.json")
    data["interrupted_turn"] = {
        "agent_id": "main",
        "pending_tool_calls": [
            {"id": "call_9", "name": "run_tests", "args": {"k": "slow"}},
            {"id": "call_10", "name": "grep_content", "args": {}},
        ],
        "user_prompt": "",
        "started_at": "2026-03-01T10:16:00+00:00",
    }
    agent = {
        "agent_id": "sub1",
        "profile_name": "explorer",
        "status": "idle",
        "created_at": "2026-03-01T10:15:10",
        "last_activity": "2026-03-01T10:15:30",
        "turn_count": 4,
        "max_turns": 20,
    }
    data["metadata"] = {
        "subagents": {"version": "1.0", "agents": [agent, {"agent_id": 7, "status": "done"}]},
        "plugin_states": {"todo": {"items": 3}, "memory": None},
    }
    session = gcengine.load_session(data, counter=counter)
    assert [(c.id, c.name) for c in session.pending_tool_calls] == [
        ("call_9", "run_tests"),
        ("call_10", "grep_content"),
    ]
    first, odd = session.subagent_records
    assert first == gcengine.SubagentRecord(**agent, record=agent)
    # A value of an unexpected type is not taken for a field, and stays in the record.
    assert (odd.agent_id, odd.status, odd.record) == (
        None,
        "done",
        {"agent_id": 7, "status": "done"},
    )
    assert session.plugin_states == {"todo": {"items": 3}, "memory": None}
    assert roundtrip(session, counter).subagent_records == session.subagent_records

    path = tmp_path / "session.json"
    path.write_text(json.dumps(data))
    assert cli.main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 pending calls: run_tests(call_9), grep_content(call_10)" in out
    assert "subagent  sub1: profile explorer, idle, 4 turns of at most 20" in out
    assert "plugins   saved state of memory, todo" in out


def test_a_session_without_jaato_state_shows_none(counter: TokenCounter) -> None:
    session = gcengine.load_session(example("jaato_session_v2.1.json"), counter=counter)
    assert session.pending_tool_calls == []
    assert session.subagent_records == []
    assert session.plugin_states == {}


def test_version_1_files_without_budget_load(counter: TokenCounter) -> None:
    data = example("jaato_session_v2.1.json")
    data["version"] = "1.0"
    for key in ("budget_state", "interrupted_turn", "turn_accounting", "user_inputs", "metadata"):
        del data[key]
    session = gcengine.load_session(data, counter=counter)
    assert session.format_version == "1.0"
    assert session.recorded_budget is None
    assert session.budget.total_tokens() == sum(count_message(m, counter) for m in session.history)


def test_budget_snapshot_reads_back_figure_for_figure(counter: TokenCounter) -> None:
    raw = example("jaato_budget_snapshot.json")
    session = gcengine.load_session(raw, counter=counter)
    assert session.source_format is SourceFormat.JAATO_BUDGET_SNAPSHOT
    assert session.history == []
    assert session.budget.snapshot() == raw
    assert roundtrip(session, counter).budget.snapshot() == raw


def test_openai_chat_completions(counter: TokenCounter) -> None:
    session = gcengine.load_session(OPENAI_CHAT, counter=counter)
    assert session.source_format is SourceFormat.OPENAI_CHAT
    assert [m.role for m in session.history] == [Role.USER, Role.MODEL, Role.TOOL, Role.MODEL]
    assert session.system_instructions[0].text == "You are a build agent."
    assert session.history[1].function_calls[0].args == {"job": "test"}
    response = session.history[2].function_responses[0]
    assert (response.call_id, response.name) == ("call_01", "read_log")
    assert session.recorded_prompt_tokens == 412
    assert session.context_limit == 1_047_576
    system = session.budget.entries[InstructionSource.SYSTEM]
    assert system.children["system_0"].gc_policy is GCPolicy.LOCKED
    assert session.budget.total_tokens() == system.total_tokens() + sum(
        count_message(m, counter) for m in session.history
    )
    assert roundtrip(session, counter) == session


def test_openai_chat_as_a_bare_list(counter: TokenCounter) -> None:
    session = gcengine.load_session(OPENAI_CHAT["messages"], counter=counter)
    assert session.source_format is SourceFormat.OPENAI_CHAT
    assert len(session.history) == 4


def test_openai_responses_items_group_parallel_calls(counter: TokenCounter) -> None:
    session = gcengine.load_session(OPENAI_RESPONSES, counter=counter)
    assert session.source_format is SourceFormat.OPENAI_RESPONSES
    roles = [m.role for m in session.history]
    assert roles == [Role.USER, Role.MODEL, Role.TOOL, Role.MODEL]
    assert [c.id for c in session.history[1].function_calls] == ["call_01", "call_02"]
    assert [r.name for r in session.history[2].function_responses] == ["read_log", "read_log"]
    compaction = session.history[3].parts[0]
    assert compaction.type is PartType.OPAQUE
    assert compaction.opaque is not None
    assert compaction.opaque.kind == "compaction"
    assert session.history[3].text == "A test fails."
    assert roundtrip(session, counter) == session


def test_openai_responses_as_jsonl_text(counter: TokenCounter) -> None:
    text = "\n".join(json.dumps(item) for item in OPENAI_RESPONSES)
    session = gcengine.load_session(text, counter=counter)
    assert session == gcengine.load_session(OPENAI_RESPONSES, counter=counter)


def test_anthropic_messages(counter: TokenCounter) -> None:
    session = gcengine.load_session(ANTHROPIC, counter=counter)
    assert session.source_format is SourceFormat.ANTHROPIC_MESSAGES
    assert [m.role for m in session.history] == [Role.USER, Role.MODEL, Role.TOOL, Role.MODEL]
    thought = session.history[1].parts[0]
    assert thought.type is PartType.THOUGHT
    assert thought.extra == {"signature": "sig"}
    assert "The log will say." not in session.history[1].text
    response = session.history[2].function_responses[0]
    assert (response.call_id, response.name) == ("toolu_01", "read_log")
    assert session.recorded_prompt_tokens == 398 + 256
    assert session.context_limit == 200_000  # Sonnet 4.6: 1M only when asked for (model table)
    assert len(session.turns()) == 1
    assert roundtrip(session, counter) == session


def test_anthropic_mixed_tool_result_and_text_stays_in_the_turn(counter: TokenCounter) -> None:
    data = copy.deepcopy(ANTHROPIC)
    data["messages"][2]["content"].append({"type": "text", "text": "Also check lint."})
    session = gcengine.load_session(data, counter=counter)
    assert session.history[2].role is Role.USER
    assert session.history[2].is_function_response
    assert len(session.turns()) == 1


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(lambda p: p, id="path"),
        pytest.param(lambda p: p.read_bytes(), id="bytes"),
        pytest.param(lambda p: p.read_text(), id="text"),
        pytest.param(lambda p: json.loads(p.read_text()), id="dict"),
    ],
)
def test_every_kind_of_source_gives_the_same_session(source: Any, counter: TokenCounter) -> None:
    path: Path = EXAMPLES / "jaato_session_v2.1.json"
    assert gcengine.load_session(source(path), counter=counter) == gcengine.load_session(
        path, counter=counter
    )


def test_bytes_with_a_byte_order_mark_load(counter: TokenCounter) -> None:
    data = b"\xef\xbb\xbf" + (EXAMPLES / "jaato_session_v2.1.json").read_bytes()
    assert gcengine.load_session(data, counter=counter).session_id == "20260301_101500"


def test_importing_twice_gives_the_same_ids(counter: TokenCounter) -> None:
    first = gcengine.load_session(OPENAI_CHAT, counter=counter)
    second = gcengine.load_session(json.dumps(OPENAI_CHAT), counter=counter)
    assert [m.message_id for m in first.history] == [m.message_id for m in second.history]
    assert first.session_id == second.session_id


def test_ids_written_by_a_dump_are_kept_on_reload(counter: TokenCounter) -> None:
    session = gcengine.load_session(ANTHROPIC, counter=counter)
    written = json.loads(gcengine.dump_session(session))
    assert [m["message_id"] for m in written["history"]] == [m.message_id for m in session.history]


def test_the_dump_is_a_jaato_file_jaato_can_read() -> None:
    session = gcengine.load_session(ANTHROPIC)
    written = json.loads(gcengine.dump_session(session))
    assert written["version"] == "2.1"
    for key in ("session_id", "created_at", "updated_at"):
        assert isinstance(written[key], str)
    allowed_parts = {"text", "function_call", "function_response", "inline_data", "unknown"}
    for message in written["history"]:
        assert message["role"] in {"user", "model", "tool"}
        assert all(part["type"] in allowed_parts for part in message["parts"])
    # An export has no budget JAATO would mistake for one it recorded: it rebuilds its own.
    assert written["budget_state"] is None


def test_a_budget_the_file_recorded_is_written_back_after_gc(counter: TokenCounter) -> None:
    data = example("jaato_session_v2.1.json")
    session = gcengine.load_session(data, counter=counter)
    written = json.loads(gcengine.dump_session(session))
    assert written["budget_state"]["source"] == "conversation"
    kept = {m.message_id for m in session.history}
    leaves = [
        leaf for leaf in written["budget_state"]["children"].values() if "message_ids" in leaf
    ]
    assert leaves
    assert all(set(leaf["message_ids"]) <= kept for leaf in leaves)


def test_an_export_of_a_file_without_a_budget_is_no_larger_than_its_history_needs() -> None:
    data = json.dumps(generate_session_file(SessionShape(turns=400, seed=5))).encode()
    exported = gcengine.dump_session(gcengine.load_session(data), indent=None).encode()
    # Each message gains its id and turn index, and nothing else of its size.
    assert len(exported) < len(data) * 1.1


def test_a_generated_session_with_every_part_kind_round_trips(counter: TokenCounter) -> None:
    shape = SessionShape(
        turns=300, thoughts=True, inline_data_every=7, opaque_every=5, parallel_calls=2, seed=3
    )
    session = gcengine.load_session(generate_session_file(shape), counter=counter)
    kinds = {part.type for message in session.history for part in message.parts}
    assert kinds == set(PartType)
    assert len(session.turns()) == 300
    assert roundtrip(session, counter) == session


@pytest.mark.slow
def test_thousands_of_turns_load_and_add_up(counter: TokenCounter) -> None:
    shape = SessionShape(turns=3000, with_budget_state=True, seed=11)
    session = gcengine.load_session(json.dumps(generate_session_file(shape)), counter=counter)
    conversation = session.budget.entries[InstructionSource.CONVERSATION]
    assert len(conversation.children) == 3000
    assert conversation.total_tokens() == sum(
        leaf.tokens for _, leaf in conversation.walk() if not leaf.children
    )
    assert roundtrip(session, counter) == session


def jaato_file_with_recorded_budget(turns: int, seed: int) -> dict[str, Any]:
    """A generated JAATO file with the budget JAATO records: one ``msg_<i>`` leaf per message,
    naming message ids JAATO does not save (so the load matches them by position, and says so)."""
    data = generate_session_file(SessionShape(turns=turns, seed=seed))
    children = {}
    for index, _ in enumerate(data["history"]):
        children[f"msg_{index}"] = {
            "source": "conversation",
            "tokens": 40,
            "total_tokens": 40,
            "gc_policy": "ephemeral",
            "gc_eligible_tokens": 40,
            "indicator": "○",
            "label": f"message {index}",
            "message_ids": [f"00000000-0000-4000-8000-{index:012d}"],
        }
    data["budget_state"] = {
        "source": "conversation",
        "tokens": 40 * len(children),
        "total_tokens": 40 * len(children),
        "gc_policy": "partial",
        "gc_eligible_tokens": 40 * len(children),
        "indicator": "◐",
        "children": children,
    }
    return data


def test_an_exported_collected_session_describes_itself(counter: TokenCounter) -> None:
    """The export of a collected session carries neither the original's load warnings nor
    what the original file recorded about messages no longer there."""
    loaded = gcengine.load_session(jaato_file_with_recorded_budget(60, 4), counter=counter)
    assert loaded.warnings  # the ids JAATO did not save were matched by position
    original = loaded.model_copy(update={"context_limit": loaded.budget.total_tokens()})
    original.budget = gcengine.rebuild_budget(original, counter)
    config = gcengine.load_gc_config({"type": "truncate", "target_percent": 10}, env={})
    outcome = gcengine.run_gc(original, config)
    collected = outcome.session
    kept = {m.message_id for m in collected.history}
    assert len(kept) < len(original.history)
    exported = gcengine.dump_session(collected)
    view = json.loads(exported)["metadata"]["gcengine"]
    assert view["warnings"] == []
    assert view["recorded_prompt_tokens"] is None
    recorded = view["recorded_budget"]["entries"]["conversation"]["children"]
    assert {i for child in recorded.values() for i in child["message_ids"]} == kept
    assert len(exported) < len(gcengine.dump_session(original)) / 2
    again = gcengine.load_session(exported, counter=counter)
    assert again.warnings == []
    assert again.history == collected.history
    assert again.budget == collected.budget
