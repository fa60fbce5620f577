"""True windows and true counts on real Claude Code transcripts: the window the agent ran in,
with where it came from, and the context counted as the provider counts it (its figure just
before each compaction within 10 % of the agent's own ``preTokens``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcengine
from gcengine.budget import GCPolicy, InstructionSource
from gcengine.context_limits import choose_window, model_limits
from gcengine.formats import dump_session, load_session
from gcengine.session import ContextLimitOrigin, Session, build_budget, history_before
from gcengine.session.build import UNSEEN_OVERHEAD_KEY
from gcengine.tokens import ScaledCounter, count_message, counter_by_name, load_counter
from tests.engine.strategies import jaato_session_files

FIXTURES = Path(__file__).parent.parent / "fixtures" / "formats"
SPOTTER = FIXTURES / "spotter"
# file, the agent's own figure at its compaction (preTokens), its trigger
COMPACTED = [
    (SPOTTER / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", 142_431, "manual"),
    (SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d.jsonl", 167_094, "auto"),
    (SPOTTER / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl", 170_251, "auto"),
    (FIXTURES / "codemie_code" / "session-624a4a58.jsonl", 155_979, "auto"),
]
IDS = ["spotter-ae4a77f8", "spotter-258c7280", "spotter-4d5611e5", "codemie-624a4a58"]


def overhead_entry(session: Session) -> gcengine.SourceEntry | None:
    system = session.budget.get_entry(InstructionSource.SYSTEM)
    return system.children.get(UNSEEN_OVERHEAD_KEY) if system is not None else None


def history_figures(session: Session) -> int:
    counter = counter_by_name(session.token_counter)
    return sum(count_message(message, counter) for message in session.history)


@pytest.mark.parametrize(("path", "pre_tokens", "trigger"), COMPACTED, ids=IDS)
def test_claude_sessions_ran_in_200k_and_say_why(path: Path, pre_tokens: int, trigger: str) -> None:
    session = load_session(path)
    assert session.context_limit == 200_000
    assert session.context_limit_origin is ContextLimitOrigin.MODEL
    source = session.context_limit_source or ""
    assert "model table" in source
    assert "200,000" in source
    if trigger == "auto":  # the agent's own auto-compaction is the evidence, and says so
        assert f"auto-compacted at {pre_tokens:,}" in source
        assert "fits it" in source


@pytest.mark.parametrize(("path", "pre_tokens", "trigger"), COMPACTED, ids=IDS)
def test_the_context_before_each_compaction_is_the_agents_own_figure(
    path: Path, pre_tokens: int, trigger: str
) -> None:
    calibrated = load_session(path)
    local = load_session(path, counter=load_counter())  # cl100k as it is, nothing scaled
    (compaction,) = calibrated.compactions
    assert compaction.tokens_before == pre_tokens
    counted = history_before(calibrated, compaction).budget.total_tokens()
    uncalibrated = history_before(local, local.compactions[0]).budget.total_tokens()
    assert abs(counted - pre_tokens) <= 0.10 * pre_tokens
    assert uncalibrated < 0.70 * pre_tokens  # what the local count alone said: far under


def test_usage_at_the_compaction_reads_what_the_agent_saw() -> None:
    session = load_session(COMPACTED[1][0])
    before = history_before(session, session.compactions[0])
    report = gcengine.usage_report(before, gcengine.GCConfig())
    assert 80 <= report.percent_used <= 90  # the agent compacted at 83.5 % of 200,000
    assert report.context_limit == 200_000


@pytest.mark.parametrize(("path", "pre_tokens", "trigger"), COMPACTED, ids=IDS)
def test_the_unseen_prompt_is_one_locked_entry_and_the_budget_adds_up(
    path: Path, pre_tokens: int, trigger: str
) -> None:
    session = load_session(path)
    entry = overhead_entry(session)
    assert entry is not None
    assert entry.gc_policy is GCPolicy.LOCKED
    assert "system prompt, tool definitions" in (entry.label or "")
    # The recorded prompt of the history's first call, less the messages it saw (the summary
    # and the first request): Claude Code sends more after a compaction than at the start.
    ids = {message.message_id for message in session.history}
    first = next(u for u in session.recorded_usage if u.message_id in ids).prompt_tokens
    assert session.unseen_overhead == entry.tokens
    assert 0.75 * first <= entry.tokens <= first
    assert len(session.context_overheads) == len(session.compactions) + 1
    assert session.context_overheads[-1] == entry.tokens
    # The context now, as the provider counts it, is the last call's prompt within 10 %
    # (cl100k alone: 44-69 % of it).
    last = session.recorded_prompt_tokens
    assert last is not None
    assert abs(session.budget.total_tokens() - last) <= 0.10 * last
    assert session.budget.total_tokens() == history_figures(session) + entry.tokens
    assert session.token_counting.counter.startswith("scaled:")
    assert not session.token_counting.exact


def test_a_collection_keeps_the_overhead_and_the_scale() -> None:
    session = load_session(COMPACTED[1][0])
    before = history_before(session, session.compactions[0])
    outcome = gcengine.run_gc(
        before,
        gcengine.GCConfig(plugin="gc_budget", target_percent=40.0, preserve_recent_turns=0),
        "manual",
    )
    after = outcome.session
    assert after.token_counter == session.token_counter
    assert overhead_entry(after) is not None
    assert after.budget.total_tokens() == history_figures(after) + (after.unseen_overhead or 0)
    assert after.budget.total_tokens() < before.budget.total_tokens()


def test_a_jaato_file_keeps_the_window_source_and_the_scale() -> None:
    session = load_session(COMPACTED[2][0])
    again = load_session(dump_session(session).encode())
    assert again.context_limit_source == session.context_limit_source
    assert again.token_counter == session.token_counter
    assert again.unseen_overhead == session.unseen_overhead
    assert again.context_overheads == session.context_overheads
    assert again.budget.total_tokens() == session.budget.total_tokens()


def test_a_session_without_enough_calls_is_counted_as_it_is() -> None:
    session = load_session(SPOTTER / "short.jsonl")  # one model call: nothing to measure
    assert session.token_counter == load_counter().name
    assert session.unseen_overhead is None
    assert overhead_entry(session) is None


def test_a_window_override_names_what_it_replaced() -> None:
    session = load_session(COMPACTED[1][0])
    smaller = gcengine.with_context_limit(session, 50_000)
    assert smaller.context_limit_origin is ContextLimitOrigin.OVERRIDE
    assert smaller.context_limit_source == (
        "override: 50,000 tokens instead of the session's 200,000 (model)"
    )


def test_the_model_table_gives_claude_4_its_standard_window() -> None:
    for model in ("claude-opus-4-6", "claude-sonnet-4-6", "claude-sonnet-4-5-20250929"):
        limits = model_limits(model)
        assert limits is not None
        assert limits.context_length == 200_000
    extended = model_limits("claude-opus-4-6[1m]")
    assert extended is not None
    assert extended.context_length == 1_000_000
    plain = model_limits("gpt-4o[1m]")  # only Claude ids take the suffix
    assert plain is not None
    assert plain.context_length == 128_000


def test_what_the_file_shows_decides_the_window() -> None:
    above = choose_window("claude-opus-4-6", peak_prompt=350_000)
    assert (above.limit, above.origin) == (1_000_000, "inferred")
    assert "350,000" in above.source
    late = choose_window("claude-opus-4-6", auto_compactions=[958_000])
    assert (late.limit, late.origin) == (1_000_000, "inferred")
    assert "958,000" in late.source
    file = choose_window("claude-opus-4-6", file_limit=64_000, auto_compactions=[167_000])
    assert (file.limit, file.origin) == (64_000, "file")
    odd = choose_window("claude-opus-4-6", auto_compactions=[40_000])  # a user's own threshold
    assert (odd.limit, odd.origin) == (200_000, "model")
    assert "fits no standard window" in odd.source


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    file=jaato_session_files(),
    factor=st.floats(min_value=0.5, max_value=4.0),
    overhead=st.integers(min_value=0, max_value=200_000),
)
def test_the_budget_is_the_history_plus_the_unseen_overhead(
    file: dict[str, object], factor: float, overhead: int
) -> None:
    history = load_session(file, counter=load_counter()).history
    counter = ScaledCounter(load_counter(), factor)
    budget = build_budget(history, counter, context_limit=200_000, unseen_overhead=overhead or None)
    figures = sum(count_message(message, counter) for message in history)
    assert budget.total_tokens() == figures + overhead
    assert budget.locked_tokens() >= overhead
    assert counter_by_name(counter.name).name == counter.name


def test_the_usage_report_says_why_the_window_is_what_it_is() -> None:
    session = load_session(COMPACTED[2][0])
    report = gcengine.usage_report(session, gcengine.GCConfig())
    assert report.context_limit_source == session.context_limit_source
    assert "auto-compacted at 170,251" in (report.context_limit_source or "")
