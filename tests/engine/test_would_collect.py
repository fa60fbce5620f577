"""``would_collect``: whether a policy's GC would start by itself on a session as it is now."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import ApproxCounter, GCConfig, GCTriggerReason, Session, would_collect
from gcengine.synthetic import SessionShape, generate_session_file

STRATEGIES = ["truncate", "summarize", "hybrid", "budget", "reachability"]
TURNS = 12


def loaded() -> Session:
    counter = ApproxCounter()
    return gcengine.load_session(
        generate_session_file(SessionShape(turns=TURNS, seed=9)), counter=counter
    )


SESSION = loaded()


def at_usage(percent: float) -> Session:
    """The session with its context limit set so that it is at ``percent`` percent usage."""
    limit = max(1, round(SESSION.budget.total_tokens() * 100 / percent))
    session = SESSION.model_copy(update={"context_limit": limit})
    session.budget = gcengine.rebuild_budget(session, ApproxCounter())
    return session


def policy(**fields: object) -> GCConfig:
    return gcengine.load_gc_config(fields, env={})


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_threshold_mode_triggers_at_the_threshold(strategy: str) -> None:
    config = policy(type=strategy, threshold_percent=80, target_percent=60)
    assert would_collect(at_usage(85), config) == (True, GCTriggerReason.THRESHOLD)
    assert would_collect(at_usage(70), config) == (False, None)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_continuous_mode_triggers_above_the_target(strategy: str) -> None:
    config = policy(type=strategy, threshold_percent=80, target_percent=60, pressure_percent=0)
    assert would_collect(at_usage(65), config) == (True, GCTriggerReason.CONTINUOUS)
    assert would_collect(at_usage(55), config) == (False, None)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_turn_limit_triggers_below_the_threshold(strategy: str) -> None:
    below = at_usage(20)
    assert would_collect(below, policy(type=strategy, max_turns=TURNS)) == (
        True,
        GCTriggerReason.TURN_LIMIT,
    )
    assert would_collect(below, policy(type=strategy, max_turns=TURNS + 1)) == (False, None)
    assert would_collect(below, policy(type=strategy)) == (False, None)


def test_without_auto_trigger_nothing_starts_by_itself() -> None:
    config = policy(type="budget", auto_trigger=False, max_turns=1)
    assert would_collect(at_usage(99), config) == (False, None)


@settings(max_examples=50, deadline=None)
@given(
    st.floats(min_value=1, max_value=200),
    st.floats(min_value=1, max_value=200),
    st.sampled_from(STRATEGIES),
    st.booleans(),
)
def test_more_usage_never_stops_a_collection_that_less_usage_starts(
    lower: float, higher: float, strategy: str, continuous: bool
) -> None:
    lower, higher = sorted((lower, higher))
    config = policy(type=strategy, pressure_percent=0 if continuous else 90)
    if would_collect(at_usage(lower), config)[0]:
        assert would_collect(at_usage(higher), config)[0]
