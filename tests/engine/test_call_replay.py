"""A replay steps through the agent's recorded model calls: a policy's threshold fires between
calls inside one long turn, and a replay at a compaction reads call by call beside the agent's."""

from __future__ import annotations

from pathlib import Path

import pytest

import gcengine
from tests.engine.agent_transcripts import (
    Shape,
    generated_autonomous_claude_code_rows,
    generated_claude_code_rows,
    jsonl,
)

SPOTTER = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "spotter"
BUDGET = {"type": "budget", "threshold_percent": 80, "target_percent": 60}


def policy(**fields: object) -> gcengine.GCConfig:
    return gcengine.load_gc_config({**BUDGET, **fields}, env={})


def test_a_policy_collects_between_calls_inside_a_long_turn() -> None:
    # Two requests: 60 calls, then 200 calls in one turn; the window fills during the second.
    rows = generated_autonomous_claude_code_rows((60, 200))
    session = gcengine.load_session(jsonl(rows)).model_copy(update={"context_limit": 40_000})
    assert session.turn_count() == 2

    replay = gcengine.simulate(session, policy(preserve_recent_turns=1))

    calls = [s for s in replay.steps if s.point == "pre_call"]
    assert [s.call_number for s in calls] == list(range(1, 261))
    first = next(e for e in replay.events if e.result.success and e.result.items_collected)
    # It ran before one of the second request's calls, not at the end of a turn.
    assert first.point == "pre_call"
    assert first.call_number is not None
    assert 61 < first.call_number < 260
    assert first.turn_index == 1
    assert first.result.tokens_before >= 0.8 * 40_000
    assert first.result.tokens_after <= 0.6 * 40_000
    # No check along the way is left over the window.
    assert max(s.tokens_after for s in replay.steps) < 40_000


def test_a_session_without_recorded_calls_still_steps_by_turn() -> None:
    session = gcengine.load_session(
        [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "two"},
            {"role": "user", "content": "three"},
            {"role": "assistant", "content": "four"},
        ]
    )
    replay = gcengine.simulate(session, policy())
    assert [(s.point, s.turn_index, s.call_number) for s in replay.steps] == [
        ("pre_message", 0, None),
        ("post_turn", 0, None),
        ("pre_message", 1, None),
        ("post_turn", 1, None),
    ]


def test_each_generated_call_is_checked_once_before_it_is_made() -> None:
    session = gcengine.load_session(jsonl(generated_claude_code_rows(Shape(turns=3))))
    replay = gcengine.simulate(session, policy(check_before_send=True))
    points = [(s.point, s.turn_index, s.call_number) for s in replay.steps]
    # A turn: checked before it is sent, before its two calls, after it.
    assert points[:4] == [
        ("pre_message", 0, None),
        ("pre_call", 0, 1),
        ("pre_call", 0, 2),
        ("post_turn", 0, None),
    ]
    assert len(points) == 12


@pytest.mark.parametrize(
    ("name", "calls"),
    [
        ("ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", 138),
        ("258c7280-ae70-4798-800f-63464d01a85d.jsonl", 102),
        ("4d5611e5-241a-462a-8d15-5122611a9569.jsonl", 61),
    ],
)
def test_a_replay_at_a_real_compaction_reads_call_by_call(name: str, calls: int) -> None:
    session = gcengine.load_session(SPOTTER / name)
    (compaction,) = session.compactions
    timeline = gcengine.call_timeline(session)
    assert timeline.compactions[0].after_calls == calls
    before = gcengine.history_before(session, compaction).model_copy(
        update={"context_limit": 80_000}
    )

    replay = gcengine.simulate(before, policy())

    at_calls = [s for s in replay.steps if s.point == "pre_call"]
    # Every call the agent made before it compacted, each once, beside its recorded size.
    assert [s.call_number for s in at_calls] == list(range(1, calls + 1))
    recorded = [timeline.calls[s.call_number - 1].prompt_tokens for s in at_calls if s.call_number]
    assert recorded[-1] <= (compaction.tokens_before or 0)
    # Under an 80,000-token window the policy's threshold is crossed between two calls, inside
    # a turn, and it is asked to collect there (what it can take of one turn is the
    # strategies' own matter), not only once the turn has ended.
    first = replay.events[0]
    assert first.point == "pre_call"
    assert first.call_number is not None
    assert first.result.tokens_before >= 0.8 * 80_000
    step = at_calls[first.call_number - 1]
    assert step.tokens_before == first.result.tokens_before
    assert first.turn_index == timeline.calls[first.call_number - 1].turn_index


@pytest.mark.parametrize(
    "name",
    ["258c7280-ae70-4798-800f-63464d01a85d.jsonl", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"],
)
def test_under_its_own_window_a_policy_collects_before_the_agent_compacted(name: str) -> None:
    """Each of these sessions auto-compacted at 167-170 k of a 200,000-token window; budget
    80/60, checked before every call, collects between two calls inside the turn, before the
    call where the agent compacted, down to its target."""
    session = gcengine.load_session(SPOTTER / name)
    (compaction,) = session.compactions
    timeline = gcengine.call_timeline(session)
    before = gcengine.history_before(session, compaction)

    replay = gcengine.simulate(before, policy())

    window = before.context_limit
    first = next(e for e in replay.events if e.result.items_collected)
    assert first.point == "pre_call"
    assert first.call_number is not None
    assert first.call_number < timeline.compactions[0].after_calls
    assert first.turn_index == timeline.calls[first.call_number - 1].turn_index
    assert first.result.tokens_before >= 0.8 * window
    assert first.result.tokens_after <= 0.6 * window
