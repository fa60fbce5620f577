"""The tool-pair report: every result without its call and every call without its result, in
every format, and no collection ever making a new one."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import Role, Session, ToolPairProblemKind, run_gc
from gcengine.tokens import TokenCounter
from tests.engine.agent_transcripts import GENERATORS, Shape, shapes
from tests.engine.strategies import policy
from tests.engine.test_formats import ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES

STRATEGIES = ["truncate", "summarize", "hybrid", "budget", "reachability"]
ORPHAN, UNANSWERED = ToolPairProblemKind.ORPHAN_RESULT, ToolPairProblemKind.UNANSWERED_CALL


def problems(session: Session) -> set[tuple[str, str, str]]:
    return {(p.kind.value, p.call_id, p.message_id) for p in gcengine.tool_pair_report(session)}


def test_a_complete_session_has_no_problem(counter: TokenCounter) -> None:
    for source in (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC):
        assert gcengine.tool_pair_report(gcengine.load_session(source, counter=counter)) == []


def test_an_openai_tool_message_whose_call_is_gone_is_an_orphan(counter: TokenCounter) -> None:
    data = copy.deepcopy(OPENAI_CHAT)
    del data["messages"][2]  # the assistant message that made the call
    session = gcengine.load_session(data, counter=counter)
    [problem] = gcengine.tool_pair_report(session)
    tool_message = session.history[1]
    assert (problem.kind, problem.call_id, problem.message_id) == (
        ORPHAN,
        "call_01",
        tool_message.message_id,
    )
    assert (problem.turn, problem.position, problem.agent_id) == (0, 1, None)


def test_an_openai_call_without_its_tool_message_is_unanswered(counter: TokenCounter) -> None:
    data = copy.deepcopy(OPENAI_CHAT)
    del data["messages"][3]
    session = gcengine.load_session(data, counter=counter)
    [problem] = gcengine.tool_pair_report(session)
    assert (problem.kind, problem.call_id, problem.tool_name) == (UNANSWERED, "call_01", "read_log")
    assert problem.message_id == session.history[1].message_id


def test_a_second_result_for_one_anthropic_call_is_an_orphan(counter: TokenCounter) -> None:
    data = copy.deepcopy(ANTHROPIC)
    data["messages"].insert(3, copy.deepcopy(data["messages"][2]))
    session = gcengine.load_session(data, counter=counter)
    [problem] = gcengine.tool_pair_report(session)
    assert (problem.kind, problem.call_id, problem.position) == (ORPHAN, "toolu_01", 3)


def test_problems_are_listed_in_history_order_with_their_turns(counter: TokenCounter) -> None:
    data = copy.deepcopy(OPENAI_CHAT)
    data["messages"] += [
        {"role": "user", "content": "And lint?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_02",
                    "type": "function",
                    "function": {"name": "lint", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_99", "content": "no call made this"},
    ]
    session = gcengine.load_session(data, counter=counter)
    report = gcengine.tool_pair_report(session)
    assert [(p.kind, p.call_id, p.turn) for p in report] == [
        (UNANSWERED, "call_02", 1),
        (ORPHAN, "call_99", 1),
    ]


@pytest.mark.parametrize("name", sorted(GENERATORS))
@pytest.mark.parametrize("breakage", ["unanswered", "orphan"])
def test_a_broken_pair_is_found_in_every_format(
    name: str, breakage: str, counter: TokenCounter
) -> None:
    shape = Shape(turns=3, tool_every=1, break_pairs=breakage, seed=7)  # type: ignore[arg-type]
    session = gcengine.load_session(GENERATORS[name](shape), counter=counter)
    [problem] = gcengine.tool_pair_report(session)
    assert problem.kind is (UNANSWERED if breakage == "unanswered" else ORPHAN)
    assert problem.call_id == "call_7_0_0"
    holder = session.history[problem.position]
    assert holder.message_id == problem.message_id
    assert problem.turn == holder.turn_index == 0
    if breakage == "unanswered":
        assert problem.tool_name == "read_file"
        assert "call_7_0_0" in [c.id for c in holder.function_calls]
    else:
        assert "call_7_0_0" in [r.call_id for r in holder.function_responses]


def test_sub_agents_are_reported_under_their_id(counter: TokenCounter) -> None:
    from tests.engine.agent_transcripts import generated_claude_code_rows, jsonl

    rows = generated_claude_code_rows(Shape(turns=2, seed=3))
    side = generated_claude_code_rows(Shape(turns=2, seed=4, break_pairs="unanswered"))
    rows += [{**r, "isSidechain": True, "agentId": "a9"} for r in side if r["type"] != "summary"]
    session = gcengine.load_session(jsonl(rows), counter=counter)
    [problem] = gcengine.tool_pair_report(session)
    assert (problem.agent_id, problem.kind) == ("a9", UNANSWERED)


def at_usage(session: Session, usage: float, counter: TokenCounter) -> Session:
    """The session with a context limit that puts it at ``usage`` percent."""
    limit = max(1, int(session.budget.total_tokens() * 100 / usage))
    tight = session.model_copy(update={"context_limit": limit})
    tight.budget = gcengine.rebuild_budget(tight, counter)
    return tight


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(sorted(GENERATORS)),
    strategy=st.sampled_from(STRATEGIES),
    shape=shapes(max_turns=10),
    usage=st.floats(60, 160),
    preserve=st.integers(0, 3),
    data=st.data(),
)
def test_no_collection_makes_a_new_broken_pair_in_any_format(
    name: str,
    strategy: str,
    shape: Shape,
    usage: float,
    preserve: int,
    data: st.DataObject,
    counter: TokenCounter,
) -> None:
    session = at_usage(
        gcengine.load_session(GENERATORS[name](shape), counter=counter), usage, counter
    )
    target = data.draw(st.integers(10, 50))
    config = policy(
        type=strategy,
        target_percent=target,
        threshold_percent=target + 10,
        preserve_recent_turns=preserve,
        notify_on_gc=data.draw(st.booleans()),
    )
    before = problems(session)
    outcome = run_gc(session, config)
    assert outcome.result.success
    assert problems(outcome.session) <= before


def _chat_sessions(counter: TokenCounter) -> list[Any]:
    broken = copy.deepcopy(OPENAI_CHAT)
    del broken["messages"][3]
    return [gcengine.load_session(s, counter=counter) for s in (OPENAI_CHAT, broken, ANTHROPIC)]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_no_collection_makes_a_new_broken_pair_in_openai_or_anthropic_sessions(
    strategy: str, counter: TokenCounter
) -> None:
    for session in _chat_sessions(counter):
        tight = at_usage(session, 150, counter)
        outcome = run_gc(
            tight,
            policy(type=strategy, target_percent=10, threshold_percent=20, preserve_recent_turns=0),
        )
        assert problems(outcome.session) <= problems(tight)


def test_a_user_message_between_a_call_and_its_result_keeps_them_in_one_turn(
    counter: TokenCounter,
) -> None:
    data = copy.deepcopy(ANTHROPIC)
    data["messages"].insert(2, {"role": "user", "content": "While that runs: check lint too."})
    session = gcengine.load_session(data, counter=counter)
    [turn] = session.turns()
    assert [m.role for m in turn.messages] == [
        Role.USER,
        Role.MODEL,
        Role.USER,
        Role.TOOL,
        Role.MODEL,
    ]
    # A collection that removes the oldest turns now takes the call with its result.
    tight = at_usage(session, 150, counter)
    for strategy in STRATEGIES:
        outcome = run_gc(tight, policy(type=strategy, target_percent=10, threshold_percent=20))
        assert gcengine.tool_pair_report(outcome.session) == []


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_the_user_speaking_while_a_tool_runs_never_parts_the_pair(
    name: str, counter: TokenCounter
) -> None:
    shape = Shape(turns=6, tool_every=1, break_pairs="interleaved", seed=5)
    session = at_usage(
        gcengine.load_session(GENERATORS[name](shape), counter=counter), 150, counter
    )
    turn_of = {m.message_id: m.turn_index for m in session.history}
    call_turns = {c.id: turn_of[m.message_id] for m in session.history for c in m.function_calls}
    for message in session.history:
        for response in message.function_responses:
            assert call_turns[response.call_id] == message.turn_index
    for strategy in STRATEGIES:
        config = policy(
            type=strategy, target_percent=20, threshold_percent=30, preserve_recent_turns=1
        )
        assert gcengine.tool_pair_report(run_gc(session, config).session) == []


def test_a_stray_result_reusing_an_answered_call_id_joins_no_turns(counter: TokenCounter) -> None:
    data = copy.deepcopy(OPENAI_CHAT)
    data["messages"] += [
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "You are welcome."},
        {"role": "tool", "tool_call_id": "call_01", "content": "late copy"},
    ]
    session = gcengine.load_session(data, counter=counter)
    assert [t.index for t in session.turns()] == [0, 1]
    [problem] = gcengine.tool_pair_report(session)
    assert (problem.kind, problem.turn, problem.position) == (ORPHAN, 1, 6)
