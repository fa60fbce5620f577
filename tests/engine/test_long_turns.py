"""Collection inside long autonomous turns, and the agent's own compaction summary.

A coding agent works in one request followed by hundreds of model calls; every strategy must
be able to take that turn's older exchanges (never parting a call from its result), keep the
latest exchanges and the current request, and keep the summary the agent wrote when it
compacted its own context unless usage is under pressure.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import GCConfig, Message, MessageKind, Part, Role, Session
from gcengine.messages import tool_traffic
from gcengine.session import tool_pair_report
from gcengine.strategies import starter_policies
from gcengine.tokens import TokenCounter

from .autonomous import autonomous_history, session_at_usage
from .strategies import policy

SPOTTER = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "spotter"
STRATEGIES = ("gc_truncate", "gc_summarize", "gc_hybrid", "gc_budget", "gc_reachability")
POLICIES = {
    **starter_policies(),
    **{
        f"{name} 80/60": {"type": name, "threshold_percent": 80, "target_percent": 60}
        for name in STRATEGIES
    },
}


def _kept(outcome: gcengine.GCOutcome) -> set[str]:
    return {m.message_id for m in outcome.session.history}


@pytest.fixture(scope="module")
def autonomous(counter: TokenCounter) -> Session:
    """One request and 400 messages of tool work, at 84 % of its window."""
    return session_at_usage(autonomous_history(400), counter, 84)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_starter_policy_collects_a_one_turn_session_to_its_target(
    autonomous: Session, name: str
) -> None:
    config = policy(**POLICIES[name])
    outcome = gcengine.run_gc(autonomous, config)
    target = autonomous.context_limit * config.target_percent / 100
    assert outcome.result.success
    assert outcome.budget_after.total_tokens() <= target
    assert tool_pair_report(outcome.session) == []
    assert "request" in _kept(outcome)


def _exchange_calls(history: list[Message]) -> list[str]:
    """The ids of the messages making calls, in order."""
    return [m.message_id for m in history if (t := tool_traffic(m)) is not None and t[0]]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_latest_exchanges_stay(autonomous: Session, strategy: str) -> None:
    config = policy(type=strategy, target_percent=30, preserve_recent_exchanges=25)
    outcome = gcengine.run_gc(autonomous, config)
    assert outcome.result.items_collected > 0
    latest = _exchange_calls(autonomous.history)[-25:]
    assert set(latest) <= _kept(outcome)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_recent_turns_stay_whole_when_the_policy_keeps_no_exchange_count(
    autonomous: Session, strategy: str
) -> None:
    config = GCConfig.model_validate(
        {"type": strategy, "preserve_recent_turns": 1, "preserve_recent_exchanges": None}
    )
    outcome = gcengine.run_gc(autonomous, config)
    assert outcome.result.items_collected == 0
    assert outcome.session.history == autonomous.history


def _turns(*requests: str, tools_each: int = 30) -> list[Message]:
    """Turns of one request and ``tools_each`` exchanges each, the requests as given."""
    history: list[Message] = []
    for number, request in enumerate(requests):
        turn = autonomous_history(2 + 2 * tools_each, seed=number)
        for message in turn:
            message_id = f"t{number}-{message.message_id}"
            history.append(message.model_copy(update={"message_id": message_id}))
        history[-len(turn)] = history[-len(turn)].model_copy(
            update={"parts": [Part.from_text(request)]}
        )
    return history


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_current_task_stays_though_no_turn_is_kept(
    counter: TokenCounter, strategy: str
) -> None:
    history = _turns("Write the parser.", "Now add the tests for it.")
    history.append(
        Message(
            role=Role.USER,
            parts=[Part.from_text("[Request interrupted by user]")],
            message_id="interrupted",
        )
    )
    session = session_at_usage(history, counter, 95)
    config = policy(
        type=strategy, target_percent=5, preserve_recent_turns=0, preserve_recent_exchanges=0
    )
    outcome = gcengine.run_gc(session, config)
    assert outcome.result.items_collected > 0
    latest = next(m for m in history if m.text == "Now add the tests for it.")
    assert latest.message_id in _kept(outcome)
    assert tool_pair_report(outcome.session) == []


AGENT_SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The user asked for a parser; src/parse.py was written and its tests pass."
)


def _after_compaction(counter: TokenCounter, usage: float) -> Session:
    """An agent's compaction summary, then one long turn, at ``usage`` percent."""
    summary = Message(
        role=Role.USER,
        parts=[Part.from_text(AGENT_SUMMARY)],
        message_id="agent-summary",
        kind=MessageKind.SUMMARY,
    )
    return session_at_usage([summary, *autonomous_history(200)], counter, usage)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_agent_summary_stays_below_pressure(counter: TokenCounter, strategy: str) -> None:
    session = _after_compaction(counter, 85)
    outcome = gcengine.run_gc(session, policy(type=strategy, pressure_percent=90))
    assert outcome.result.items_collected > 0
    assert "agent-summary" in _kept(outcome)
    assert "agent_summaries_taken" not in outcome.result.details


@pytest.mark.parametrize("strategy", ["gc_summarize", "gc_reachability", "gc_hybrid"])
def test_a_run_that_takes_the_agent_summary_under_pressure_says_so(
    counter: TokenCounter, strategy: str
) -> None:
    session = _after_compaction(counter, 95)
    config = policy(
        type=strategy,
        pressure_percent=90,
        target_percent=1,
        preserve_recent_exchanges=0,
        preserve_recent_turns=0,
        summarize_middle_turns=1000,
    )
    outcome = gcengine.run_gc(session, config)
    assert "agent-summary" not in _kept(outcome)
    assert outcome.result.details["agent_summaries_taken"] == ["agent-summary"]
    assert "pressure threshold (90%)" in outcome.result.details["agent_summary_note"]


@pytest.mark.parametrize("strategy", ["gc_summarize", "gc_hybrid"])
def test_an_agent_summary_alone_is_never_summarized_into_an_empty_summary(
    counter: TokenCounter, strategy: str
) -> None:
    summary = Message(
        role=Role.USER,
        parts=[Part.from_text(AGENT_SUMMARY * 40)],
        message_id="agent-summary",
        kind=MessageKind.SUMMARY,
    )
    history = [summary, *_turns("Go on.", tools_each=2)]
    session = session_at_usage(history, counter, 95)
    outcome = gcengine.run_gc(session, policy(type=strategy, pressure_percent=90))
    assert outcome.session.history == session.history
    assert not any(
        m.kind is MessageKind.SUMMARY and m.message_id != "agent-summary"
        for m in outcome.session.history
    )


def _real_sessions() -> list[Session]:
    return [
        gcengine.with_context_limit(gcengine.load_session(path), 200_000)
        for path in sorted(SPOTTER.glob("*-*.jsonl"))
    ]


@pytest.mark.parametrize("strategy", ["gc_summarize", "gc_reachability", "gc_hybrid"])
def test_the_compact_summary_of_a_real_claude_code_session_stays(strategy: str) -> None:
    """The three real sessions after their compaction begin with Claude Code's
    ``isCompactSummary`` row; collected hard below pressure, it stays and no summary of
    nothing is written."""
    for session in _real_sessions():
        (compaction,) = session.compactions
        summary_id = compaction.summary_message_id
        assert summary_id is not None
        config = policy(
            type=strategy, target_percent=5, pressure_percent=100, preserve_recent_turns=0
        )
        outcome = gcengine.run_gc(session, config)
        assert summary_id in _kept(outcome)
        written = [
            m
            for m in outcome.session.history
            if m.kind is MessageKind.SUMMARY and m.message_id != summary_id
        ]
        assert all(m.metadata.get("covers_turns") for m in written)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    messages=st.integers(20, 160),
    seed=st.integers(0, 1000),
    strategy=st.sampled_from(STRATEGIES),
    keep=st.integers(0, 12),
    usage=st.floats(70, 99),
    summary=st.booleans(),
)
def test_long_turn_invariants(
    counter: TokenCounter,
    messages: int,
    seed: int,
    strategy: str,
    keep: int,
    usage: float,
    summary: bool,
) -> None:
    """Whatever a strategy takes from a long turn: no call loses its result, the current
    request stays, the latest ``preserve_recent_exchanges`` exchanges stay, and an agent's
    compaction summary stays below the pressure threshold."""
    history = autonomous_history(messages, seed)
    if summary:
        history.insert(
            0,
            Message(
                role=Role.USER,
                parts=[Part.from_text(AGENT_SUMMARY)],
                message_id="agent-summary",
                kind=MessageKind.SUMMARY,
            ),
        )
    session = session_at_usage(history, counter, usage)
    config = policy(
        type=strategy, target_percent=20, pressure_percent=99.5, preserve_recent_exchanges=keep
    )
    outcome = gcengine.run_gc(session, config)
    kept = _kept(outcome)
    assert tool_pair_report(outcome.session) == []
    assert "request" in kept
    assert set(_exchange_calls(history)[len(_exchange_calls(history)) - keep :]) <= kept
    if summary:
        assert "agent-summary" in kept
