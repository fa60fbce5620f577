"""The reachability strategy with a summarizer: a digest of what it stashes, where the stashed
turns stood, its tokens counted against the target, and a restore that still gives back the
history the run started from."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import gcengine
from gcengine import MessageKind, Session
from gcengine.strategies import strategy_spec
from gcengine.tokens import TokenCounter, count_message
from tests.engine.test_reachability import (
    coding_history,
    demo_scenarios,
    demo_session,
    reachability,
    session_of,
)


@pytest.fixture
def coding(counter: TokenCounter) -> Session:
    return session_of(coding_history(), counter)


def digesting(**fields: Any) -> gcengine.GCConfig:
    return reachability(plugin_config={"summarizer": "digest"}, **fields)


def summaries(session: Session) -> list[gcengine.Message]:
    return [m for m in session.history if m.kind is MessageKind.SUMMARY]


def test_without_a_summarizer_it_writes_no_summary(coding: Session) -> None:
    outcome = gcengine.run_gc(coding, reachability(target_percent=40, preserve_recent_turns=2))
    assert outcome.result.stash is not None
    assert outcome.result.stash.segments
    assert not summaries(outcome.session)
    assert outcome.result.stash.summary_id is None


def test_a_digest_of_what_it_stashes_stands_where_the_stashed_turns_were(
    coding: Session, counter: TokenCounter
) -> None:
    outcome = gcengine.run_gc(
        coding, digesting(target_percent=40, preserve_recent_turns=2, notify_on_gc=True)
    )
    result, stash = outcome.result, outcome.result.stash
    assert stash is not None
    (summary,) = summaries(outcome.session)
    assert stash.summary_id == summary.message_id
    assert summary.metadata["summarizer"] == "digest"
    # it covers the turns the stash took from, and says what they did
    stashed_turns = sorted({s.turn_index for s in stash.segments if s.turn_index is not None})
    assert summary.metadata["covers_turns"] == stashed_turns
    assert "src/billing/invoice.py" in summary.text
    # it opens the first turn anything was stashed from (a summary never splits a turn)
    history = outcome.session.history
    at = history.index(summary)
    first_turn = min(stashed_turns)
    assert [m.message_id for m in history[:at]] == [
        m.message_id for m in coding.history if (m.turn_index or 0) < first_turn
    ]
    after = next(m for m in history[at + 1 :] if m.kind is MessageKind.CHAT)
    assert after.turn_index == first_turn
    # its tokens are counted: in the result, and against the target
    tokens = count_message(summary, counter)
    assert result.details["summary_tokens"] == tokens
    freed = sum(item.tokens_freed for item in result.removal_list)
    notice = next(m for m in history if m.kind is MessageKind.NOTICE)
    assert result.tokens_after == (
        result.tokens_before - freed + tokens + count_message(notice, counter)
    )
    assert result.tokens_after <= coding.context_limit * 40 // 100
    assert outcome.budget_after.total_tokens() == result.tokens_after


def test_the_summary_counts_as_it_takes_so_the_target_is_still_reached(
    coding: Session,
) -> None:
    """Without a summary a run stops as soon as usage is at the target; with one it takes as
    much more as the summary may cost, so usage with the summary in is at the target too."""
    plain = gcengine.run_gc(coding, reachability(target_percent=45, preserve_recent_turns=2))
    digested = gcengine.run_gc(coding, digesting(target_percent=45, preserve_recent_turns=2))
    target = coding.context_limit * 45 // 100
    assert plain.result.tokens_after <= target
    assert summaries(digested.session)
    assert digested.result.tokens_after <= target
    assert len(digested.result.removal_list) >= len(plain.result.removal_list)


def test_restore_after_a_digest_marks_the_summary_then_gives_back_the_original(
    coding: Session,
) -> None:
    outcome = gcengine.run_gc(
        coding, digesting(target_percent=40, preserve_recent_turns=2, notify_on_gc=True)
    )
    stash = outcome.result.stash
    assert stash is not None
    ids = [s.segment_id for s in stash.segments]
    assert len(ids) >= 2
    partly = gcengine.restore(outcome.session, stash, ids[:1])
    (summary,) = summaries(partly)
    assert summary.metadata["restored_segments"] == ids[:1]
    assert set(stash.segments[0].message_ids) <= {m.message_id for m in partly.history}
    if len(ids) > 2:
        (summary,) = summaries(gcengine.restore(partly, stash, ids[1:2]))
        assert summary.metadata["restored_segments"] == sorted(ids[:2])
    whole = gcengine.restore(partly, stash, ids[1:])
    assert whole.history == coding.history


@pytest.mark.parametrize(("turns", "seed", "target"), [(40, 3, 30), (30, 11, 15), (25, 7, 10)])
def test_restoring_everything_after_a_digest_gives_back_the_session(
    turns: int, seed: int, target: int
) -> None:
    """On the demo's sessions (figures the file recorded, clarifications, pins) the history and
    the budget the run started from."""
    session = gcengine.load_session(
        gcengine.generate_demo_session(gcengine.DemoShape(turns=turns, seed=seed))
    )
    outcome = gcengine.run_gc(session, digesting(target_percent=target))
    stash = outcome.result.stash
    assert stash is not None
    assert stash.summary_id in {m.message_id for m in outcome.session.history}
    back = gcengine.restore(outcome.session, stash, [s.segment_id for s in stash.segments])
    assert back.history == session.history
    assert back.budget == session.budget


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=demo_scenarios())
def test_with_a_digest_the_target_is_reached_and_restoring_everything_undoes_the_run(
    scenario: dict[str, Any],
) -> None:
    session = demo_session(scenario)
    config = digesting(**scenario["policy"])
    outcome = gcengine.run_gc(session, config)
    result = outcome.result
    target = session.context_limit * scenario["policy"]["target_percent"] // 100
    if result.tokens_after > target:  # then it took all it may, as a run aiming at 0 does
        everything = gcengine.run_gc(
            session, digesting(**scenario["policy"] | {"target_percent": 0})
        )
        assert [i.message_ids for i in result.removal_list] == [
            i.message_ids for i in everything.result.removal_list
        ]
    stash = result.stash
    if stash is None or not stash.segments:
        return
    back = gcengine.restore(outcome.session, stash, [s.segment_id for s in stash.segments])
    assert back.history == session.history
    assert back.budget == session.budget


def test_a_summary_as_long_as_what_it_covers_is_not_written(coding: Session) -> None:
    outcome = gcengine.run_gc(
        coding,
        reachability(
            target_percent=40,
            preserve_recent_turns=2,
            plugin_config={"summarizer": lambda request: "word " * 50_000},
        ),
    )
    assert not summaries(outcome.session)
    assert outcome.result.stash is not None
    assert outcome.result.stash.summary_id is None
    assert "summary_skipped" in outcome.result.details


def test_the_policy_editor_knows_reachability_reads_the_summarizer() -> None:
    spec = strategy_spec("gc_reachability")
    assert "plugin_config.summarizer" in spec.reads
    assert "max_summary_tokens" in spec.reads
    assert "summary" in spec.inserts
    (row,) = [f for f in gcengine.PLUGIN_CONFIG_FIELDS if f.key == "summarizer"]
    assert "gc_reachability" in row.strategies
    loaded = gcengine.load_gc_config(
        {"type": "reachability", "plugin_config": {"summarizer": "digest"}}, env={}
    )
    assert loaded.plugin_config["summarizer"] == "digest"
    with pytest.raises(gcengine.ConfigError, match="summarizer"):
        gcengine.load_gc_config(
            {"type": "reachability", "plugin_config": {"summarizer": "poetry"}}, env={}
        )
