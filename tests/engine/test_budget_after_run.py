"""The budget after a run is updated from the budget before (the turns left alone taken over,
the leaves of the messages kept in the turns it took a part of taken over with their new
policy and time); on any generated session and with every strategy, run after run, it is the
budget rebuilt from scratch, entry by entry and field by field."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import InstructionBudget, InstructionSource, Session, TokenCounter
from gcengine.conversation import budget_index
from gcengine.demo.shape import DemoShape
from gcengine.demo.story import generate_demo_session
from gcengine.running import run_gc
from tests.engine.strategies import policy, session_at

STRATEGIES = ["truncate", "summarize", "hybrid", "budget", "reachability"]
INDEX_FIELDS = (
    "tokens",
    "counted_by",
    "policies",
    "created_at",
    "closing",
    "exchanges",
    "exchange_groups",
    "original",
)
FIELDS = ("source", "tokens", "gc_policy", "label", "metadata", "created_at", "message_ids")


def synthetic_sessions(counter: TokenCounter) -> st.SearchStrategy[Session]:
    """Sessions of ``gcengine.synthetic``'s generator, of every shape it has, at a usage
    that makes a run take something."""
    return st.builds(
        lambda turns, usage, shape: session_at(turns, usage, counter, **shape),
        st.integers(1, 24),
        st.floats(70, 99),
        st.fixed_dictionaries(
            {
                "tool_every": st.integers(0, 3),
                "parallel_calls": st.integers(1, 3),
                "thoughts": st.booleans(),
                "user_chars": st.sampled_from([20, 400]),
                "model_chars": st.sampled_from([20, 600]),
                "tool_result_chars": st.sampled_from([50, 2000]),
                "seed": st.integers(0, 1_000),
            }
        ),
    )


def demo_sessions(counter: TokenCounter) -> st.SearchStrategy[Session]:
    """Sessions of the demo generator (the dashboard's sample story)."""
    return st.builds(
        lambda turns, fill, seed: gcengine.load_session(
            generate_demo_session(DemoShape(turns=turns, fill_percent=fill, seed=seed)),
            counter=counter,
        ),
        st.integers(1, 30),
        st.floats(70, 100),
        st.integers(0, 1_000),
    )


def assert_same_budget(updated: InstructionBudget, rebuilt: InstructionBudget) -> None:
    """Every entry of both trees, in order, with every field equal; then the whole."""
    walked = list(updated.entries[InstructionSource.CONVERSATION].walk())
    expected = list(rebuilt.entries[InstructionSource.CONVERSATION].walk())
    assert [key for key, _ in walked] == [key for key, _ in expected]
    for (key, entry), (_, other) in zip(walked, expected, strict=True):
        for field in FIELDS:
            assert getattr(entry, field) == getattr(other, field), f"{key}: {field}"
    assert updated.snapshot() == rebuilt.snapshot()
    assert updated == rebuilt
    # What the next run reads instead of the tree: the conversation laid out flat.
    index, expected_index = budget_index(updated), budget_index(rebuilt)
    assert index is not None
    assert expected_index is not None
    assert index.layout == expected_index.layout
    for field in INDEX_FIELDS:
        assert getattr(index, field) == getattr(expected_index, field), field


@pytest.mark.parametrize("name", STRATEGIES)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_the_budget_after_each_of_several_runs_equals_the_budget_rebuilt_from_scratch(
    name: str, data: st.DataObject, counter: TokenCounter
) -> None:
    """A second and third run start from a budget that was itself updated, on turns whose
    closing answers the first marked: each budget after is still the rebuilt one."""
    session = data.draw(st.one_of(synthetic_sessions(counter), demo_sessions(counter)))
    knobs: dict[str, Any] = data.draw(
        st.fixed_dictionaries(
            {
                "target_percent": st.sampled_from([10, 40, 60]),
                "preserve_recent_turns": st.integers(0, 3),
            }
        )
    )
    for _ in range(3):
        outcome = run_gc(session, policy(type=name, **knobs))
        assert_same_budget(outcome.budget_after, gcengine.rebuild_budget(outcome.session, counter))
        session = outcome.session
