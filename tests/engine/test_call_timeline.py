"""A session's model calls as a timeline, on real Claude Code transcripts and on a generated
long autonomous turn: every call once, its input split, its place, and the compactions
between calls with the size after each."""

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

FORMATS = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
SPOTTER = FORMATS / "spotter"

# Per real transcript: calls (distinct message.id), calls before its compaction, the
# compaction's recorded size before it, and the first call after it as input / cache write /
# cache read (tests/fixtures/formats/README.md and the transcripts' own rows).
REAL = {
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": (217, 142_431, (3, 23_812, 21_448)),
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl": (152, 167_094, (3, 12_497, 21_460)),
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl": (139, 170_251, (3, 14_600, 21_478)),
}


@pytest.fixture(scope="module")
def real_sessions() -> dict[str, gcengine.Session]:
    return {name: gcengine.load_session(SPOTTER / name) for name in REAL}


@pytest.mark.parametrize("name", list(REAL))
def test_every_call_of_a_real_transcript_once_with_its_compaction(
    real_sessions: dict[str, gcengine.Session], name: str
) -> None:
    calls, before, (fresh, written, read) = REAL[name]
    session = real_sessions[name]
    timeline = gcengine.call_timeline(session)

    assert len(timeline.calls) == calls
    assert [c.number for c in timeline.calls] == list(range(1, calls + 1))
    # Each call's input is split as the provider reported it, and the parts add up.
    for call in timeline.calls:
        assert call.uncached_tokens is not None
        cached = (call.cache_read_tokens or 0) + (call.cache_write_tokens or 0)
        assert call.uncached_tokens + cached == call.prompt_tokens
    (compaction,) = timeline.compactions
    assert compaction.tokens_before == before
    # Claude Code 2.1 writes no size after; the first call after records it.
    assert compaction.tokens_after == fresh + written + read
    assert compaction.tokens_after_source == "first call after"
    first_after = timeline.calls[compaction.after_calls]
    assert (first_after.uncached_tokens, first_after.cache_write_tokens) == (fresh, written)
    assert first_after.cache_read_tokens == read
    # The calls before it are in the context it ended; those after, in the history.
    assert {c.context for c in timeline.calls[: compaction.after_calls]} == {0}
    assert {c.context for c in timeline.calls[compaction.after_calls :]} == {1}
    # The last call before it sent less than the compaction's own figure, never more.
    assert timeline.calls[compaction.after_calls - 1].prompt_tokens <= before


@pytest.mark.parametrize("name", list(REAL))
def test_each_real_call_saw_the_messages_before_its_response(
    real_sessions: dict[str, gcengine.Session], name: str
) -> None:
    session = real_sessions[name]
    timeline = gcengine.call_timeline(session)
    (compaction,) = session.compactions
    contexts = [compaction.context_before, [m.message_id for m in session.history]]
    turn_of = {m.message_id: m.turn_index for m in [*compaction.replaced, *session.history]}
    for call in timeline.calls:
        assert call.messages_seen is not None
        assert contexts[call.context][call.messages_seen] == call.message_id
        assert call.turn_index == turn_of[call.message_id]
    # Calls go forward: within a context, each later call saw more.
    for earlier, later in zip(timeline.calls, timeline.calls[1:], strict=False):
        if earlier.context == later.context:
            assert (later.messages_seen or 0) > (earlier.messages_seen or 0)


def test_the_codemie_claude_code_session_through_bedrock() -> None:
    session = gcengine.load_session(FORMATS / "codemie_code" / "session-624a4a58.jsonl")
    timeline = gcengine.call_timeline(session)
    assert len(timeline.calls) == 55
    (compaction,) = timeline.compactions
    assert compaction.tokens_before == 155_979
    assert compaction.tokens_after == 10 + 13_277 + 23_254
    assert timeline.calls[compaction.after_calls - 1].prompt_tokens == 155_741


def test_a_size_the_file_records_after_a_compaction_is_kept_as_the_files() -> None:
    rows = generated_claude_code_rows(Shape(turns=6, compact_after=(2,)))
    timeline = gcengine.call_timeline(gcengine.load_session(jsonl(rows)))
    (compaction,) = timeline.compactions
    assert (compaction.tokens_after, compaction.tokens_after_source) == (902, "file")
    # Two calls a turn (a tool call, then the answer) for the three turns before it.
    assert compaction.after_calls == 6


def test_a_long_autonomous_turn_is_hundreds_of_calls_and_one_compaction() -> None:
    session = gcengine.load_session(
        jsonl(generated_autonomous_claude_code_rows((300,), compact_after=170))
    )
    timeline = gcengine.call_timeline(session)
    assert len(timeline.calls) == 300
    (compaction,) = timeline.compactions
    assert compaction.after_calls == 170
    assert compaction.tokens_before == 190_000
    assert (compaction.tokens_after, compaction.tokens_after_source) == (30_000, "first call after")
    assert timeline.calls[169].prompt_tokens == 189_000
    assert {c.turn_index for c in timeline.calls[:170]} == {0}
    assert [c.uncached_tokens for c in timeline.calls[:2]] == [2, 2]


def test_a_session_without_recorded_usage_has_no_calls() -> None:
    session = gcengine.load_session(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )
    assert gcengine.call_timeline(session) == gcengine.CallTimeline()


def test_the_codex_rollout_has_each_of_its_calls_placed() -> None:
    (path,) = (FORMATS / "codemie_code").glob("rollout-*.jsonl")
    timeline = gcengine.call_timeline(gcengine.load_session(path))
    assert len(timeline.calls) == 66
    assert all(call.messages_seen is not None for call in timeline.calls)
    assert timeline.compactions == []
