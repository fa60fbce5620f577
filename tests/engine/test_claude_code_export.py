"""A collected Claude Code session written back as a Claude Code transcript: the rows it kept,
its tool pairs and its ``parentUuid`` chain intact, a fraction of the original's size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import gcengine
from gcengine import MessageKind, SourceFormat
from gcengine.messages import tool_pair_problems
from gcengine.tokens import TokenCounter

SPOTTER = Path(__file__).parents[1] / "fixtures" / "formats" / "spotter"
COMPACTED = sorted(p for p in SPOTTER.glob("*.jsonl") if p.name != "short.jsonl")
WINDOW = 30_000
POLICIES = {
    "budget": {
        "type": "gc_budget",
        "threshold_percent": 80,
        "target_percent": 60,
        "pressure_percent": 90,
        "preserve_recent_turns": 1,
    },
    "summarize": {
        "type": "gc_summarize",
        "threshold_percent": 80,
        "target_percent": 60,
        "preserve_recent_turns": 1,
    },
}


def collected(path: Path, policy: str, counter: TokenCounter) -> gcengine.Session:
    session = gcengine.with_context_limit(gcengine.load_session(path, counter=counter), WINDOW)
    return gcengine.run_gc(session, gcengine.load_gc_config(POLICIES[policy])).session


def same_fields(row: dict[str, Any], *left_out: str) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in {"content", *left_out}}


def rows_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("path", COMPACTED, ids=lambda p: p.name[:8])
def test_a_collected_session_exports_as_a_claude_code_transcript_it_reads_back(
    path: Path, policy: str, counter: TokenCounter
) -> None:
    original = path.read_bytes()
    after = collected(path, policy, counter)

    text = gcengine.dump_in_source_format(after)
    assert text is not None
    assert gcengine.source_export_suffix(after) == "jsonl"
    rows = rows_of(text)
    back = gcengine.load_session(text.encode(), counter=counter)

    # The rows it kept, and only those, in order, under their own ids.
    kept = [m.message_id for m in after.history if "source" in m.metadata]
    assert [m.message_id for m in back.history if m.message_id in set(kept)] == kept
    assert len(back.history) == len(after.history)
    assert back.source_format is SourceFormat.CLAUDE_CODE
    assert [m.kind for m in back.history] == [m.kind for m in after.history]
    assert not tool_pair_problems(back.history)
    # The chain: walked back from the last row it visits every row written, in order.
    by_id = {row["uuid"]: row for row in rows}
    walked = [rows[-1]["uuid"]]
    while (parent := by_id[walked[-1]].get("parentUuid")) is not None:
        walked.append(parent)
    assert walked[::-1] == [row["uuid"] for row in rows]
    # A kept row is the row read, but for its parent and its display copy of a tool's output.
    read_rows = [json.loads(line) for line in original.splitlines()]
    source_rows = {row["uuid"]: row for row in read_rows if "uuid" in row}
    for row in rows:
        read = source_rows.get(row["uuid"])
        if read is None:
            continue
        assert same_fields(row, "parentUuid", "message") == same_fields(
            read, "parentUuid", "message", "toolUseResult"
        )
        if "message" in read:
            assert same_fields(row["message"]) == same_fields(read["message"])
            assert (
                read["message"]["content"]
                in (
                    row["message"]["content"],
                    [{"type": "text", "text": row["message"]["content"]}],
                )
                or row["type"] == "user"
            )
    # Far smaller than the original, and than the same session as a JAATO file.
    assert len(text.encode()) < len(original) / 4
    assert len(text.encode()) < len(gcengine.dump_session(after, indent=None).encode()) / 4


def test_a_summary_the_collector_wrote_is_a_row_in_claude_codes_shape(
    counter: TokenCounter,
) -> None:
    after = collected(COMPACTED[0], "summarize", counter)
    written = [m for m in after.history if "source" not in m.metadata]
    assert written  # the run wrote a summary of its own
    rows = {row["uuid"]: row for row in rows_of(gcengine.dump_in_source_format(after) or "")}
    for message in written:
        [row] = [r for r in rows.values() if r["message"]["content"] == message.text]
        assert row["type"] == "user"
        assert row["sessionId"] == after.session_id
        assert row.get("isCompactSummary") or row.get("isMeta")
    assert all(m.kind is not MessageKind.CHAT for m in written)


def test_a_format_that_cannot_hold_a_collected_session_is_not_written(
    counter: TokenCounter,
) -> None:
    session = gcengine.load_session(
        json.dumps([{"role": "user", "content": "hi"}]).encode(), counter=counter
    )
    assert gcengine.dump_in_source_format(session) is None
    assert gcengine.source_export_suffix(session) is None
