"""Trying a session against another context window: only the limit changes."""

from __future__ import annotations

import pytest

import gcengine
from gcengine import SessionShape, generate_session_file

BUDGET = gcengine.load_gc_config({"type": "budget", "threshold_percent": 80, "target_percent": 60})


@pytest.fixture(scope="module")
def session() -> gcengine.Session:
    # About 8 % of a 200,000-token window: no policy has anything to do at this size.
    return gcengine.load_session(generate_session_file(SessionShape(turns=40, seed=5)))


def test_a_smaller_window_changes_the_limit_and_nothing_else(session: gcengine.Session) -> None:
    small = gcengine.with_context_limit(session, 8_000)

    assert small.context_limit == small.budget.context_limit == 8_000
    assert small.context_limit_origin is gcengine.ContextLimitOrigin.OVERRIDE
    assert small.history == session.history
    assert small.budget.total_tokens() == session.budget.total_tokens()
    assert small.budget.utilization_percent() > 100 > session.budget.utilization_percent()
    assert session.context_limit != 8_000  # the original is untouched


def test_policies_act_on_the_smaller_window(session: gcengine.Session) -> None:
    small = gcengine.with_context_limit(session, 12_000)

    assert gcengine.would_collect(session, BUDGET)[0] is False
    assert gcengine.would_collect(small, BUDGET)[0] is True
    outcome = gcengine.run_gc(small, BUDGET)
    assert outcome.result.items_collected > 0
    assert outcome.budget_after.context_limit == 12_000
    assert outcome.budget_after.total_tokens() <= 12_000 * 0.6
    replay = gcengine.simulate(small, BUDGET)
    assert replay.context_limit == 12_000
    assert replay.events


def test_the_same_window_is_the_same_session(session: gcengine.Session) -> None:
    assert gcengine.with_context_limit(session, session.context_limit) is session


@pytest.mark.parametrize("limit", [0, 999, -5, True, 8000.0])
def test_a_window_that_is_not_a_size_is_refused(session: gcengine.Session, limit: object) -> None:
    with pytest.raises(gcengine.ConfigError, match="at least 1,000 tokens") as caught:
        gcengine.with_context_limit(session, limit)  # type: ignore[arg-type]

    assert caught.value.key == "context_limit"
