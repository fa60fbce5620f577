"""Presenters the pages use: plain values in, template-ready values out (no database)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.core.paginator import Paginator

import gcengine
from jaato_web.dashboard import presenters, storage

# Stored parts as the upload writes them (``storage.part_row``), read back by the presenters.
CALL = storage.part_row(
    gcengine.Part.from_function_call(gcengine.FunctionCall(name="read_file", args={}))
)
RESULT = storage.part_row(
    gcengine.Part.from_function_response(
        gcengine.FunctionResponse(name="read_file", result={"ok": True})
    )
)
THOUGHT = storage.part_row(gcengine.Part.from_thought("hmm"))


def text_part(text: str) -> storage.StoredPart:
    return storage.part_row(gcengine.Part.from_text(text))


@pytest.mark.parametrize(
    ("indices", "text"),
    [([], ""), ([5], "5"), ([1, 2, 3, 7, 9, 10], "1–3, 7, 9–10"), ([4, 2, 3, 3], "2–4")],
)
def test_turn_ranges(indices: list[int], text: str) -> None:
    assert presenters.turn_ranges(indices) == text


def test_usage_bar_parts_are_shares_of_the_session_within_the_window() -> None:
    bar = presenters.usage_bar(limit=200, total=100, locked=10, preservable=30, eligible=60)

    assert bar.placed == [
        ("locked", 0.0, 5.0),
        ("preservable", 5.0, 15.0),
        ("eligible", 20.0, 30.0),
        ("other", 50.0, 0.0),
    ]
    assert (bar.limit_x, bar.over_by, bar.percent) == (100.0, 0, 50.0)


def test_usage_bar_over_the_window_keeps_the_proportions_and_marks_the_edge() -> None:
    # 816.6 % of the window: preservable is 11 % of the tokens and must stay 11 % of the bar.
    bar = presenters.usage_bar(
        limit=200_000, total=1_633_283, locked=0, preservable=179_661, eligible=1_453_622
    )

    widths = {name: width for name, _, width in bar.placed}
    assert widths["preservable"] == pytest.approx(11.0, abs=0.01)
    assert widths["eligible"] == pytest.approx(89.0, abs=0.01)
    assert sum(widths.values()) == pytest.approx(100.0, abs=0.01)
    assert bar.limit_x == pytest.approx(12.25, abs=0.01)
    assert bar.over_by == 1_433_283
    assert round(bar.percent, 1) == 816.6
    assert bar.shares["preservable"] == pytest.approx(11.0, abs=0.01)


@pytest.mark.parametrize(
    ("number", "previous", "next_"),
    [(1, None, {"page": 2}), (2, {"page": None}, {"page": 3}), (3, {"page": 2}, None)],
)
def test_pager_links_drop_the_parameter_for_page_one(
    number: int, previous: dict[str, int | None] | None, next_: dict[str, int] | None
) -> None:
    page = Paginator(list(range(25)), 10).page(number)

    pager = presenters.pager(page, "page")

    assert pager.previous == previous
    assert pager.next == next_


def test_parts_fold_tool_calls_under_the_tool_name() -> None:
    call = presenters.part_view(CALL)
    result = presenters.part_view(RESULT)
    thought = presenters.part_view(THOUGHT)
    text = presenters.part_view(text_part("hello"))

    assert (call.folded, call.heading) == (True, "Tool call: read_file")
    assert result.heading == "Tool result: read_file"
    assert (thought.folded, thought.heading) == (True, "Reasoning")
    assert (text.folded, text.heading) == (False, "")


def test_message_views_mark_pins_removals_and_preview() -> None:
    messages: list[storage.StoredMessage] = [
        {
            "id": "m1",
            "role": "user",
            "kind": "chat",
            "tokens": 12,
            "policy": "locked",
            "counted_by": "recorded",
            "parts": [text_part("Fix   the build")],
            "metadata": {},
        },
        {
            "id": "m2",
            "role": "model",
            "kind": "chat",
            "tokens": 30,
            "policy": "ephemeral",
            "counted_by": "recorded",
            "parts": [
                storage.part_row(
                    gcengine.Part.from_function_call(
                        gcengine.FunctionCall(name="run_tests", args={})
                    )
                )
            ],
            "metadata": {},
        },
    ]

    views = presenters.message_views(messages, pinned_ids=["m1"], removed_ids=["m2"])

    assert [(v.pinned, v.removed) for v in views] == [(True, False), (False, True)]
    assert views[0].policy == "locked"
    assert views[0].preview == "Fix the build"
    assert views[1].preview == "Tool call: run_tests"
    only = presenters.removed_message_views(messages, ["m2"])
    assert [v.message_id for v in only] == ["m2"]


def test_turn_views_pin_by_turn_index_or_message_id() -> None:
    def turn(position: int, index: int, message_id: str) -> SimpleNamespace:
        message: storage.StoredMessage = {
            "id": message_id,
            "role": "user",
            "kind": "chat",
            "tokens": 1,
            "policy": "ephemeral",
            "counted_by": "recorded",
            "parts": [],
            "metadata": {},
        }
        return SimpleNamespace(
            position=position,
            turn_index=index,
            kind="chat",
            tokens=1,
            policy="ephemeral",
            tool_calls=0,
            preview="",
            messages=[message],
        )

    turns = [turn(0, 0, "a"), turn(1, 1, "b"), turn(2, 2, "c"), turn(3, 3, "d")]

    views = presenters.turn_views(turns, session_pins=([1], []), policy_pins=([3], ["c"]))

    assert [v.pinned for v in views] == [False, True, True, True]
    assert [v.pinned_here for v in views] == [False, True, False, False]
    assert [v.pinned_by_policy for v in views] == [False, False, True, True]


def test_drift_view_without_recorded_figures() -> None:
    drift = presenters.drift_view(
        {"counter": "tiktoken:cl100k_base", "compared_messages": 0, "largest": []}, "x"
    )

    assert drift.has_figures is False
    assert drift.counter == "tiktoken:cl100k_base"


def test_drift_view_works_out_differences() -> None:
    drift = presenters.drift_view(
        {
            "counter": "c",
            "compared_messages": 2,
            "recorded_total": 100,
            "counted_total": 110,
            "difference": 10,
            "difference_percent": 10.0,
            "provider_prompt_tokens": 120,
            "counted_context_tokens": 115,
            "largest": [{"message_id": "m", "label": "turn_1", "recorded": 40, "counted": 50}],
        },
        "c",
    )

    assert drift.has_figures is True
    assert drift.provider_difference == -5
    assert drift.largest[0].difference == 10


def test_run_figures_before_and_after() -> None:
    run = SimpleNamespace(
        tokens_before=150_000,
        tokens_after=90_000,
        turns_after=12,
        percent=lambda tokens: None if tokens is None else tokens / 200_000 * 100,
    )

    rows = presenters.run_figures(run, SimpleNamespace(turn_count=20))

    assert [(r.label, r.before, r.after) for r in rows] == [
        ("Tokens", "150,000", "90,000"),
        ("Share of the context limit", "75.0 %", "45.0 %"),
        ("Turns", "20", "12"),
    ]


def test_replay_chart_carries_its_percentages() -> None:
    series = {
        "plugin": "gc_budget",
        "context_limit": 100,
        "threshold_percent": 80.0,
        "target_percent": 60.0,
        "pressure_percent": 90.0,
        "continuous_mode": False,
        "steps": [[0, "post_turn", 50, 50], [1, "post_turn", 85, 55], [2, "post_turn", 70, 70]],
        "events": [
            {
                "turn_index": 1,
                "point": "post_turn",
                "reason": "threshold",
                "success": True,
                "items": 2,
                "tokens_before": 85,
                "tokens_after": 55,
                "error": None,
            }
        ],
    }

    chart = presenters.replay_chart(series)
    events = presenters.replay_events(series, gcengine.DEFAULT_RETENTION_GATES)

    assert (chart.threshold_percent, chart.target_percent, chart.pressure_percent) == (80, 60, 90)
    assert chart.collections == 1
    assert chart.peak_percent == 85.0
    assert events[0].reason == "threshold"
    assert events[0].point == "post turn"


def test_a_long_replay_says_where_usage_ended_and_its_line_ends_there() -> None:
    """A long series is thinned to keep each stretch's lowest and highest points; the figures
    beside the chart, and the line's last point, are still where usage ended."""
    turns = presenters.CHART_MAX_POINTS * 3
    # A ripple: each turn rises to 61 % and a collection brings it back to 60 %; near the end
    # one collection goes down to 55 %, and the last turn peaks at 62 % and ends at 59.5 %.
    steps = [[turn, "post_turn", 61, 60] for turn in range(turns - 2)]
    steps += [[turns - 2, "post_turn", 61, 55], [turns - 1, "post_turn", 62, 59.5]]
    series = {
        "plugin": "gc_budget",
        "context_limit": 100,
        "threshold_percent": 80.0,
        "target_percent": 60.0,
        "pressure_percent": 0,
        "continuous_mode": True,
        "steps": steps,
        "events": [],
    }

    chart = presenters.replay_chart(series)

    assert (chart.peak_percent, chart.final_percent) == (62.0, 59.5)
    assert len(chart.points.split()) <= presenters.CHART_MAX_POINTS + 1
    last_y = float(chart.points.split()[-1].split(",")[1])
    assert last_y == round(chart.height - 59.5 / 100 * chart.height, 1)


def test_the_usage_chart_of_one_turn_names_that_turn_once() -> None:
    chart = presenters.usage_chart({"usage": [[1, 1200], [1, 1500]]}, 8_192)

    assert chart is not None
    assert [label for _, label in chart.x_ticks] == ["turn 1"]
