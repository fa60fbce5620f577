"""The sentences run, preview and replay pages write: each one true for the figures it tells."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from jaato_web.dashboard import presenters
from jaato_web.dashboard.presenters import Left, SummaryView

BUDGET = {
    "type": "budget",
    "threshold_percent": 80.0,
    "target_percent": 60.0,
    "pressure_percent": 90.0,
    "preserve_recent_turns": 5,
}
CONTINUOUS = {**BUDGET, "pressure_percent": 0}


class FakeRun:
    """A finished run's stored figures (the ``GCRun`` fields the run page reads)."""

    def __init__(self, **figures: Any) -> None:
        self.plugin = "gc_budget"
        self.config = BUDGET
        self.context_limit = 1000
        self.tokens_before = 850
        self.tokens_after = 590
        self.items_collected = 12
        self.result: dict[str, Any] = {"details": {"pressure_applied": False}}
        self.locked_after: int | None = 40
        self.preservable_after: int | None = 100
        self.eligible_after: int | None = 450
        self.__dict__.update(figures)


def summary(**fields: Any) -> SummaryView:
    values: dict[str, Any] = {
        "number": 1,
        "message_id": "gc_summary_1",
        "covers": "1–93",
        "covers_count": 93,
        "covers_summary": "",
        "summarizer": "extractive",
        "tokens": 583,
        "text": "…",
        "written_by_run": True,
    }
    return SummaryView(**(values | fields))


# --- Counts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "noun", "plural", "said"),
    [
        (1, "turn", "", "1 turn"),
        (0, "turn", "", "0 turns"),
        (1234567, "token", "", "1,234,567 tokens"),
        (1, "summary", "summaries", "1 summary"),
        (2, "summary", "summaries", "2 summaries"),
    ],
)
def test_a_count_agrees_with_its_noun(count: int, noun: str, plural: str, said: str) -> None:
    assert presenters.counted(count, noun, plural) == said


# --- What drew a chart -----------------------------------------------------------------------


def test_a_chart_names_the_version_and_the_mode() -> None:
    version = type("V", (), {"policy": type("P", (), {"name": "Budget 80/60"}), "number": 3})

    assert presenters.chart_title(presenters.policy_name(version), BUDGET) == (
        "Budget 80/60 v3, threshold mode"
    )
    assert presenters.chart_title(presenters.policy_name(None), CONTINUOUS) == (
        "a pasted gc.json, continuous mode"
    )
    assert presenters.policy_name(None, "Budget 80/60 v3") == "Budget 80/60 v3 (deleted since)"


def test_a_session_without_turns_has_nothing_to_replay() -> None:
    snapshot = type("S", (), {"source_format": "jaato_budget_snapshot", "turn_count": 0})
    empty = type("S", (), {"source_format": "jaato", "turn_count": 0})

    assert presenters.no_turns(snapshot) == (
        "This session is a budget snapshot: it has no turns to replay."
    )
    assert presenters.no_turns(empty) == "This session has no turns to replay."


# --- A run's page ----------------------------------------------------------------------------


def test_a_run_that_removed_nothing_below_its_target_says_so() -> None:
    run = FakeRun(tokens_before=300, tokens_after=300, items_collected=0)

    story = presenters.run_story(run, [])

    assert story.outcome == (
        "This run removed nothing: usage was already at or below the policy's 60 % target "
        "(30.0 % of the window)."
    )
    assert story.nothing == story.outcome
    assert story.summaries_none == (
        "No summaries: this run removed nothing, and the session held none."
    )
    assert "without summarizing" not in story.summaries_none
    assert story.over_limit is None


def test_a_run_that_removed_nothing_above_its_target_says_what_it_may_not_remove() -> None:
    run = FakeRun(
        tokens_before=700,
        tokens_after=700,
        items_collected=0,
        locked_after=200,
        preservable_after=300,
        eligible_after=200,
    )

    story = presenters.run_story(run, [])

    assert story.nothing.startswith(
        "This run removed nothing: usage was 70.0 % of the window, above the 60 % target"
    )
    assert "200 locked tokens, which no policy removes" in story.nothing
    assert "300 preservable tokens, which it takes only at its 90 % pressure threshold" in (
        story.nothing
    )
    assert "it keeps the 5 most recent turns and every turn that holds preservable" in (
        story.nothing
    )


def test_a_run_that_removed_content_says_how_much_and_where_usage_ended() -> None:
    story = presenters.run_story(FakeRun(), [])

    assert story.outcome == (
        "This run removed 12 items and freed 260 tokens: usage went from 85.0 % to 59.0 % "
        "of the window, at or below the policy's 60 % target."
    )
    assert story.nothing == ""
    assert story.summaries_none == (
        "No summaries: this run removed content without summarizing it, and the session held none."
    )


def test_a_run_that_summarized_says_so() -> None:
    story = presenters.run_story(FakeRun(items_collected=1), [summary()])

    assert "This run removed 1 item and freed 260 tokens" in story.outcome
    assert story.outcome.endswith("It summarized 93 turns into summary 1 (583 tokens).")


def test_a_summary_kept_from_the_session_is_not_told_as_written_by_the_run() -> None:
    story = presenters.run_story(FakeRun(), [summary(written_by_run=False)])

    assert "summarized" not in story.outcome


def test_a_run_left_over_the_window_is_warned_with_its_reason() -> None:
    run = FakeRun(
        config=CONTINUOUS,
        tokens_before=1500,
        tokens_after=1456,
        locked_after=56,
        preservable_after=1200,
        eligible_after=200,
    )

    story = presenters.run_story(run, [])

    assert story.over_limit is not None
    assert story.over_limit.sentence == (
        "Still over the window by 456 tokens after this run (145.6 % of 1,000)."
    )
    assert story.over_limit.reason == (
        "What is left is what this policy may not remove: 56 locked tokens, which no policy "
        "removes; 1,200 preservable tokens, which it takes only under pressure, and "
        "continuous mode has none; 200 eligible tokens it keeps by its rules: it keeps the 5 "
        "most recent turns and every turn that holds preservable content."
    )
    # The warning tells the reason; the outcome does not repeat it.
    assert "may not remove" not in story.outcome


def test_a_run_stored_before_its_leftovers_were_kept_still_gives_the_rules() -> None:
    run = FakeRun(
        tokens_after=1200,
        locked_after=None,
        preservable_after=None,
        eligible_after=None,
        result={"details": {}},
        config={**BUDGET, "pinned_turn_indices": [3, 4, 5, 9]},
    )

    story = presenters.run_story(run, [])

    assert story.over_limit is not None
    assert story.over_limit.reason == (
        "What is left is what this policy may not remove: it keeps the 5 most recent turns "
        "and pinned turns 4–6, 10."
    )


def test_a_turn_strategy_keeps_what_lies_outside_the_conversation() -> None:
    run = FakeRun(plugin="gc_truncate", tokens_after=1100, result={"details": {}})

    story = presenters.run_story(run, [])

    assert story.over_limit is not None
    assert "it keeps the 5 most recent turns and everything outside the conversation" in (
        story.over_limit.reason
    )
    assert "pressure" not in story.over_limit.reason


# --- A preview -------------------------------------------------------------------------------


def preview(**figures: Any) -> presenters.PreviewStory:
    values: dict[str, Any] = {
        "strategy": "gc_budget",
        "tokens_before": 850,
        "tokens_after": 590,
        "limit": 1000,
        "items": 12,
        "config": BUDGET,
        "details": {"pressure_applied": False},
        "left": Left(40, 100, 450),
    }
    return presenters.preview_story(**(values | figures))


def test_a_preview_under_its_target_has_nothing_to_remove() -> None:
    story = preview(tokens_before=100, tokens_after=100, items=0)

    assert story.nothing == (
        "Nothing to remove: usage is already at or below the policy's 60 % target "
        "(10.0 % of the window)."
    )
    assert (story.short_of_target, story.over_limit) == ("", None)


def test_a_preview_that_reaches_its_target_says_nothing_more() -> None:
    assert preview() == presenters.PreviewStory(nothing="", short_of_target="", over_limit=None)


def test_a_preview_that_stops_above_the_target_says_why() -> None:
    story = preview(tokens_after=700)

    assert story.short_of_target.startswith(
        "It would stop at 70.0 % of the window, above the 60 % target. "
        "What is left is what this policy may not remove: 40 locked tokens"
    )


def test_a_preview_left_over_the_window_warns() -> None:
    story = preview(tokens_before=2000, tokens_after=1500, left=Left(500, 1000, 0))

    assert story.over_limit is not None
    assert story.over_limit.sentence == (
        "Still over the window by 500 tokens after this collection (150.0 % of 1,000)."
    )
    assert story.over_limit.reason == (
        "What is left is what this policy may not remove: 500 locked tokens, which no policy "
        "removes; 1,000 preservable tokens, which it takes only at its 90 % pressure threshold."
    )


# --- A replay --------------------------------------------------------------------------------


def event(turn: int, before: int, after: int, **fields: Any) -> dict[str, Any]:
    return {
        "turn_index": turn,
        "point": "post_turn",
        "reason": "threshold",
        "success": True,
        "items": 3,
        "tokens_before": before,
        "tokens_after": after,
        "error": None,
    } | fields


def series(
    usage: list[tuple[int, int]], events: list[dict[str, Any]], *, continuous: bool = False
) -> dict[str, Any]:
    """A replay series over a 100-token window: usage before and after GC at each turn."""
    return {
        "plugin": "gc_budget",
        "context_limit": 100,
        "threshold_percent": 80.0,
        "target_percent": 60.0,
        "pressure_percent": None if continuous else 90.0,
        "continuous_mode": continuous,
        "steps": [[i, "post_turn", before, after] for i, (before, after) in enumerate(usage)],
        "events": events,
    }


SAWTOOTH = series(
    [(40, 40), (81, 55), (70, 70), (85, 58), (75, 75)],
    [event(1, 81, 55), event(3, 85, 58)],
)


def test_a_sawtooth_is_told_only_when_the_collections_drew_one() -> None:
    story = presenters.replay_story(SAWTOOTH, BUDGET)

    assert story.sentences == [
        "GC collected 2 times over 5 checks.",
        "Usage peaked at 85.0 % of the context limit and ended at 75.0 %.",
        "Each time usage reached the 80 % threshold, GC brought it down to the 60 % target: "
        "the sawtooth.",
    ]
    assert story.over_limit == ""


def test_one_collection_is_not_a_sawtooth() -> None:
    story = presenters.replay_story(series([(40, 40), (81, 55)], [event(1, 81, 55)]), BUDGET)

    assert story.sentences[0] == "GC collected once over 2 checks."
    assert story.sentences[-1] == (
        "GC collected once, when usage reached the 80 % threshold, bringing usage down to 55.0 %."
    )
    assert not any("sawtooth" in s for s in story.sentences)


def test_collections_that_stay_above_the_threshold_are_not_a_sawtooth() -> None:
    stuck = series(
        [(81, 79), (90, 85), (95, 88)], [event(0, 81, 79), event(1, 90, 85), event(2, 95, 88)]
    )

    story = presenters.replay_story(stuck, BUDGET)

    assert story.sentences[-1] == (
        "2 of 3 collections left usage at or above the 80 % threshold, so GC collected again "
        "at the next check."
    )


def test_a_replay_that_never_reached_the_threshold_says_so() -> None:
    story = presenters.replay_story(series([(10, 10), (30, 30)], []), BUDGET)

    assert story.sentences == [
        "GC never ran over 2 checks.",
        "Usage peaked at 30.0 % of the context limit and ended at 30.0 %.",
        "Usage never reached the 80 % threshold.",
    ]


def test_a_policy_that_never_triggers_on_its_own_says_so() -> None:
    story = presenters.replay_story(
        series([(90, 90), (99, 99)], []), {**BUDGET, "auto_trigger": False}
    )

    assert story.sentences[-1] == "This policy never collects on its own (auto_trigger is off)."


def test_a_ripple_is_told_only_when_continuous_mode_kept_usage_under_the_target() -> None:
    ripple = series(
        [(50, 50), (62, 59), (63, 60)], [event(1, 62, 59), event(2, 63, 60)], continuous=True
    )
    above = series(
        [(50, 50), (62, 59), (70, 65)], [event(1, 62, 59), event(2, 70, 65)], continuous=True
    )

    assert presenters.replay_story(ripple, CONTINUOUS).sentences[-1] == (
        "GC collected whenever usage rose above the 60 % target, keeping it in a ripple just "
        "under it."
    )
    assert presenters.replay_story(above, CONTINUOUS).sentences[-1] == (
        "GC collected whenever usage rose above the 60 % target; 1 of 2 collections could not "
        "bring it back under the target."
    )


def test_a_replay_over_the_window_counts_the_checks_it_stays_over() -> None:
    over = series(
        [(90, 90), (130, 120), (150, 146), (100, 100)],
        [event(1, 130, 120), event(2, 150, 146)],
        continuous=True,
    )

    story = presenters.replay_story(over, CONTINUOUS)

    assert story.over_limit == (
        "Usage stays over the limit at 2 of 4 checks; peak 150.0 %. 2 collections ended above "
        "the window: what was left is what this policy may not remove."
    )


def test_failed_collections_are_told_as_failures() -> None:
    failed = event(1, 90, 90, success=False, error="the summarizer is down")

    story = presenters.replay_story(series([(50, 50), (90, 90)], [failed]), BUDGET)

    assert story.sentences[0] == "GC failed once over 2 checks and never collected."
    assert story.sentences[-1] == "Every collection failed: the summarizer is down."


def test_a_replay_without_steps_tells_nothing() -> None:
    assert presenters.replay_story(series([], []), BUDGET) == presenters.ReplayStory([], "")


# --- Replays stored before they named their version ------------------------------------------

NAMING = importlib.import_module(
    "jaato_web.dashboard.migrations.0004_replay_policy_version_and_run_left"
)


def test_a_stored_replay_is_matched_to_the_version_it_holds_with_the_sessions_pins() -> None:
    version = {**BUDGET, "pinned_turn_indices": [2]}

    assert NAMING._drew(version, version)
    assert NAMING._drew(version, {**version, "pinned_turn_indices": [2, 7]})
    assert not NAMING._drew(version, {**version, "pinned_turn_indices": [7]})
    assert not NAMING._drew(version, {**version, "target_percent": 50.0})
    assert not NAMING._drew(BUDGET, {**BUDGET, "max_turns": 40})


def test_a_summary_not_written_is_said_and_why() -> None:
    run = FakeRun(
        result={"details": {"summary_skipped": "the summary would not be smaller than the turns"}}
    )

    story = presenters.run_story(run, [])

    assert "It wrote no summary (the summary would not be smaller than the turns)" in story.outcome
    assert "so those turns were dropped" in story.outcome


def test_a_hybrid_run_that_kept_its_middle_says_why_it_wrote_no_summary() -> None:
    reason = "dropping 9 of the 12 ancient turns reached the target, so the 20 middle turns..."
    run = FakeRun(result={"details": {"middle_kept": reason}})

    story = presenters.run_story(run, [])

    assert f"It wrote no summary: {reason.rstrip('.')}." in story.outcome


def test_a_run_that_took_nothing_repeats_the_strategys_reason() -> None:
    run = FakeRun(
        items_collected=0,
        tokens_after=850,
        result={"details": {"message": "Nothing useful to collect: the notice would cost more"}},
    )

    story = presenters.run_story(run, [])

    assert story.nothing.startswith("This run removed nothing")
    assert "The strategy said: Nothing useful to collect: the notice would cost more." in (
        story.nothing
    )
