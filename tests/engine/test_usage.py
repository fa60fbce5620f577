"""The usage report: figures that add up, and a health level that follows the policy's
thresholds in both of its modes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcengine import (
    HEALTH_ORDER,
    ApproxCounter,
    GCConfig,
    HealthLevel,
    Session,
    generate_session_file,
    health_level,
    load_gc_config,
    load_session,
    usage_report,
    with_context_limit,
)
from gcengine.synthetic import SessionShape

SHAPE = SessionShape(turns=12, user_chars=400, model_chars=600, tool_result_chars=1500, seed=7)
THRESHOLD_MODE = load_gc_config({"threshold_percent": 80, "target_percent": 60})
CONTINUOUS = load_gc_config({"threshold_percent": 80, "target_percent": 60, "pressure_percent": 0})


@pytest.fixture(scope="module")
def session() -> Session:
    return load_session(generate_session_file(SHAPE), counter=ApproxCounter())


def at_percent(session: Session, percent: float) -> Session:
    """The session against a window that puts its usage at ``percent``."""
    return with_context_limit(session, round(session.budget.total_tokens() * 100 / percent))


def test_figures_add_up_to_the_budget(session: Session) -> None:
    report = usage_report(session, THRESHOLD_MODE)
    budget = session.budget
    assert report.total_tokens == budget.total_tokens()
    assert sum(s.tokens for s in report.sources) == report.total_tokens
    assert report.tokens_remaining == budget.context_limit - report.total_tokens
    assert report.tiers.locked == budget.locked_tokens()
    assert report.tiers.eligible == budget.gc_eligible_tokens()
    assert report.turns == len(session.turns())
    assert "thinking" not in {s.source for s in report.sources}  # never sent to the model


@pytest.mark.parametrize(
    ("percent", "level", "starts"),
    [
        (50, HealthLevel.OK, False),
        (70, HealthLevel.ELEVATED, False),
        (85, HealthLevel.COLLECT, True),
        (95, HealthLevel.PRESSURE, True),
        (120, HealthLevel.OVER_LIMIT, True),
    ],
)
def test_threshold_mode_levels_follow_the_policy(
    session: Session, percent: float, level: HealthLevel, starts: bool
) -> None:
    report = usage_report(at_percent(session, percent), THRESHOLD_MODE)
    assert report.health is level
    assert report.gc_would_start is starts
    assert (report.trigger == "threshold") is starts


def test_a_collection_due_says_how_far_it_goes(session: Session) -> None:
    report = usage_report(at_percent(session, 85), THRESHOLD_MODE)
    target_tokens = int(report.context_limit * 0.60)
    assert report.tokens_over_target == report.total_tokens - target_tokens
    assert "at or above the policy's 80% threshold" in report.warnings[0]
    assert f"about {report.tokens_over_target:,} tokens" in report.warnings[0]
    assert report.summary().startswith("85.0% of the ")


def test_over_the_window_comes_first(session: Session) -> None:
    report = usage_report(at_percent(session, 120), THRESHOLD_MODE)
    assert report.warnings[0].endswith("the next request does not fit.")


def test_continuous_mode_collects_above_the_target_and_has_no_pressure(session: Session) -> None:
    assert usage_report(at_percent(session, 55), CONTINUOUS).health is HealthLevel.OK
    report = usage_report(at_percent(session, 65), CONTINUOUS)
    assert report.health is HealthLevel.COLLECT
    assert report.trigger == "continuous"
    assert "continuous mode" in report.warnings[0]
    assert usage_report(at_percent(session, 99), CONTINUOUS).health is HealthLevel.COLLECT


def test_a_policy_that_never_triggers_itself_says_so(session: Session) -> None:
    manual = load_gc_config({"threshold_percent": 80, "target_percent": 60, "auto_trigger": False})
    report = usage_report(at_percent(session, 85), manual)
    assert report.health is HealthLevel.COLLECT
    assert report.gc_would_start is False
    assert report.warnings[-1] == "The policy's auto_trigger is off: GC runs only when asked to."


def test_the_turn_limit_is_a_reason_of_its_own(session: Session) -> None:
    limited = load_gc_config({"threshold_percent": 80, "target_percent": 60, "max_turns": 5})
    report = usage_report(at_percent(session, 10), limited)
    assert report.health is HealthLevel.OK
    assert (report.gc_would_start, report.trigger) == (True, "turn_limit")
    assert "max_turns of 5" in report.warnings[0]


percents = st.floats(min_value=0, max_value=150, allow_nan=False)
configs = st.builds(
    lambda target, gap, pressure: GCConfig(
        threshold_percent=target + gap, target_percent=target, pressure_percent=pressure
    ),
    st.floats(min_value=1, max_value=60),
    st.floats(min_value=1, max_value=30),
    st.one_of(st.none(), st.floats(min_value=92, max_value=100)),
)


@given(configs, percents, percents)
def test_more_usage_is_never_healthier(config: GCConfig, a: float, b: float) -> None:
    low, high = sorted((a, b))
    limit = 100_000
    levels = [health_level(p, int(limit * p / 100), limit, config) for p in (low, high)]
    assert HEALTH_ORDER.index(levels[0]) <= HEALTH_ORDER.index(levels[1])


@given(configs, percents)
def test_below_the_target_is_always_ok(config: GCConfig, percent: float) -> None:
    limit = 100_000
    level = health_level(percent, int(limit * percent / 100), limit, config)
    assert (level is HealthLevel.OK) == (percent <= config.target_percent)
