"""The demo session: a realistic coding-agent session that every part of the budget, and every
strategy, has something to show on."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import GCPolicy, InstructionSource, MessageKind, PartType, Role, SourceFormat
from gcengine.demo import DemoShape, generate_demo_session
from gcengine.tokens import TokenCounter

BUDGET_80_60 = {
    "type": "gc_budget",
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 90,
    "preserve_recent_turns": 5,
}
SUMMARIZE = {
    "type": "gc_summarize",
    "threshold_percent": 80,
    "target_percent": 60,
    "preserve_recent_turns": 5,
    "plugin_config": {"summarizer": "extractive"},
}
PATH = re.compile(r"\bsrc/billing/[\w/]+\.py\b")
CODE = re.compile(r"\bBILL-4\d{3}\b")


@cache
def default_file() -> str:
    return json.dumps(generate_demo_session())


def demo_file() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(default_file())
    return data


@pytest.fixture(scope="module")
def demo(counter: TokenCounter) -> gcengine.Session:
    return gcengine.load_session(default_file(), counter=counter)


def leaf_policies(session: gcengine.Session) -> dict[str, GCPolicy]:
    conversation = session.budget.entries[InstructionSource.CONVERSATION]
    return {e.message_ids[0]: e.gc_policy for _, e in conversation.walk() if not e.children}


def recorded_turn_types(data: dict[str, Any]) -> dict[str, str]:
    """Message id to the turn type the file recorded for it (JAATO's ConversationTurnType)."""
    return {
        leaf["message_ids"][0]: leaf["metadata"]["turn_type"]
        for leaf in data["budget_state"]["children"].values()
        if "turn_type" in leaf.get("metadata", {})
    }


def texts_by_turn(session: gcengine.Session) -> list[str]:
    """Each turn's words: what the user and the model wrote, and the calls' arguments."""
    return [
        " ".join(
            [m.text for m in turn.messages]
            + [json.dumps(c.args) for m in turn.messages for c in m.function_calls]
        )
        for turn in session.turns()
    ]


def test_the_same_shape_gives_the_same_file_and_another_seed_another_story() -> None:
    assert generate_demo_session(DemoShape(turns=60, seed=3)) == generate_demo_session(
        DemoShape(turns=60, seed=3)
    )
    one = generate_demo_session(DemoShape(turns=60, seed=3))["history"]
    other = generate_demo_session(DemoShape(turns=60, seed=4))["history"]
    assert [m["parts"] for m in one] != [m["parts"] for m in other]


def test_it_loads_as_a_jaato_session_near_the_fill_of_its_models_window(
    demo: gcengine.Session,
) -> None:
    assert demo.source_format is SourceFormat.JAATO
    assert demo.format_version == "2.1"
    assert demo.model == "claude-sonnet-4"
    assert demo.context_limit == 200_000
    assert demo.context_limit_origin is gcengine.ContextLimitOrigin.MODEL
    assert demo.warnings == []
    assert len(demo.turns()) == DemoShape().turns
    assert 80 <= demo.budget.utilization_percent() <= 90


def test_another_model_is_filled_to_its_own_window(counter: TokenCounter) -> None:
    shape = DemoShape(turns=120, model="gpt-4o", fill_percent=70, seed=1)
    session = gcengine.load_session(generate_demo_session(shape), counter=counter)
    assert session.context_limit == 128_000
    assert 65 <= session.budget.utilization_percent() <= 75


def test_every_source_holds_tokens_and_every_tier_is_in_the_tree(
    demo: gcengine.Session,
) -> None:
    budget = demo.budget
    for source in InstructionSource:
        assert budget.entries[source].total_tokens() > 0, source
    system = budget.entries[InstructionSource.SYSTEM]
    assert system.effective_gc_policy() is GCPolicy.LOCKED
    assert set(system.children) >= {"base", "client", "framework"}
    plugin_policies = {
        c.gc_policy for c in budget.entries[InstructionSource.PLUGIN].children.values()
    }
    assert plugin_policies == {GCPolicy.LOCKED, GCPolicy.EPHEMERAL, GCPolicy.PRESERVABLE}
    enrichment = budget.entries[InstructionSource.ENRICHMENT]
    assert enrichment.children
    assert enrichment.effective_gc_policy() is GCPolicy.EPHEMERAL
    shown = {
        entry.effective_gc_policy()
        for _, top in budget.context_entries()
        for _, entry in top.walk()
    }
    assert shown >= {GCPolicy.LOCKED, GCPolicy.PRESERVABLE, GCPolicy.PARTIAL, GCPolicy.EPHEMERAL}
    assert budget.locked_tokens() > 0
    assert budget.preservable_tokens() > 0
    assert budget.gc_eligible_tokens() > 0


def test_the_request_is_locked_and_the_clarifications_preservable(
    demo: gcengine.Session,
) -> None:
    data = demo_file()
    policies = leaf_policies(demo)
    recorded = recorded_turn_types(data)
    first = demo.history[0]
    assert first.role is Role.USER
    assert "failing" in first.text
    assert recorded[first.message_id] == "original_request"
    assert policies[first.message_id] is GCPolicy.LOCKED
    questions = [i for i, t in recorded.items() if t == "clarification_q"]
    answers = [i for i, t in recorded.items() if t == "clarification_a"]
    assert len(questions) == len(answers) >= 4
    position = {m.message_id: p for p, m in enumerate(demo.history)}
    for question in questions:
        asked = demo.history[position[question]]
        answer = demo.history[position[question] + 1]
        assert asked.role is Role.MODEL
        assert asked.text.rstrip().endswith("?")
        assert answer.role is Role.USER
        assert answer.message_id in answers
    for message_id in questions + answers:
        assert policies[message_id] is GCPolicy.PRESERVABLE


def test_every_tool_call_is_answered_in_the_next_message(demo: gcengine.Session) -> None:
    calls = 0
    for position, message in enumerate(demo.history):
        if message.function_calls:
            answered = demo.history[position + 1]
            assert answered.role is Role.TOOL
            assert [r.call_id for r in answered.function_responses] == [
                c.id for c in message.function_calls
            ]
            assert [r.name for r in answered.function_responses] == [
                c.name for c in message.function_calls
            ]
            calls += len(message.function_calls)
        elif message.role is Role.TOOL:
            assert demo.history[position - 1].function_calls, f"results at {position} answer none"
    names = {c.name for m in demo.history for c in m.function_calls}
    assert names >= {"read_file", "grep_content", "edit_file", "run_command"}
    assert calls > len(demo.turns())


def test_it_reads_line_ranges_runs_failing_tests_and_misses_an_edit_now_and_then(
    demo: gcengine.Session,
) -> None:
    reads = [c.args for m in demo.history for c in m.function_calls if c.name == "read_file"]
    assert all(r["start_line"] <= r["end_line"] for r in reads)
    results = [r for m in demo.history for r in m.function_responses]
    failing = [r for r in results if r.name == "run_command" and r.result["exit_code"] == 1]
    assert any("Traceback" in r.result["stdout"] or "E   " in r.result["stdout"] for r in failing)
    assert any(r.is_error for r in results if r.name == "edit_file")
    assert any(part.type is PartType.THOUGHT for m in demo.history for part in m.parts)
    assert demo.budget.entries[InstructionSource.THINKING].total_tokens() == sum(
        t.thinking or 0 for t in demo.turn_accounting
    )


def test_paths_and_error_codes_come_back_in_later_turns(demo: gcengine.Session) -> None:
    turns_naming: dict[str, list[int]] = defaultdict(list)
    for index, words in enumerate(texts_by_turn(demo)):
        for name in set(PATH.findall(words)) | set(CODE.findall(words)):
            turns_naming[name].append(index)
    paths = [n for n in turns_naming if n.startswith("src/")]
    codes = [n for n in turns_naming if n.startswith("BILL-")]
    assert len(paths) >= 5
    assert len(codes) >= 4
    # Named again well after they first came up: what a reference to earlier work looks like.
    assert all(turns_naming[p][-1] - turns_naming[p][0] >= 50 for p in paths)
    assert sum(turns_naming[c][-1] - turns_naming[c][0] >= 20 for c in codes) >= 3


def test_a_summarizing_policy_writes_a_summary_that_keeps_paths(
    demo: gcengine.Session,
) -> None:
    outcome = gcengine.run_gc(demo, gcengine.load_gc_config(json.dumps(SUMMARIZE)))
    assert outcome.result.success
    summaries = [m for m in outcome.session.history if m.kind is MessageKind.SUMMARY]
    assert len(summaries) == 1
    assert outcome.result.details["turns_summarized"] > 0
    assert PATH.search(summaries[0].text)
    assert outcome.budget_after.utilization_percent() <= 60


def test_the_budget_policy_clears_enrichment_and_keeps_what_is_protected(
    demo: gcengine.Session,
) -> None:
    outcome = gcengine.run_gc(demo, gcengine.load_gc_config(json.dumps(BUDGET_80_60)))
    assert outcome.result.success
    assert outcome.result.details["enrichment_cleared"] is True
    assert outcome.budget_after.entries[InstructionSource.ENRICHMENT].total_tokens() == 0
    assert outcome.budget_after.utilization_percent() <= 60
    kept = {m.message_id for m in outcome.session.history}
    protected = [i for i, p in leaf_policies(demo).items() if p is not GCPolicy.EPHEMERAL]
    assert all(message_id in kept for message_id in protected)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), turns=st.integers(1, 60))
def test_any_seed_and_length_makes_a_session_that_reads_back_whole(seed: int, turns: int) -> None:
    data = generate_demo_session(DemoShape(turns=turns, seed=seed))
    assert generate_demo_session(DemoShape(turns=turns, seed=seed)) == data
    session = gcengine.load_session(data, counter=gcengine.ApproxCounter())
    assert len(session.turns()) == turns
    policies = leaf_policies(session)
    assert policies[session.history[0].message_id] is GCPolicy.LOCKED
    for message_id, turn_type in recorded_turn_types(data).items():
        if turn_type.startswith("clarification"):
            assert policies[message_id] is GCPolicy.PRESERVABLE
    call_ids = [c.id for m in session.history for c in m.function_calls]
    answer_ids = [r.call_id for m in session.history for r in m.function_responses]
    assert call_ids == answer_ids
    assert len(set(call_ids)) == len(call_ids)


@pytest.mark.parametrize(
    ("shape", "key"),
    [
        ({"turns": 0}, "turns"),
        ({"model": "unknown-model"}, "model"),
        ({"fill_percent": 0}, "fill_percent"),
        ({"fill_percent": 120}, "fill_percent"),
    ],
)
def test_a_shape_it_cannot_make_is_refused_by_name(shape: dict[str, Any], key: str) -> None:
    with pytest.raises(gcengine.ConfigError) as raised:
        DemoShape(**shape)
    assert raised.value.key == key
