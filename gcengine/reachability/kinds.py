"""The kinds of segment, and how much each matters in the score."""

from __future__ import annotations

from enum import StrEnum


class SegmentKind(StrEnum):
    """What a segment is, for its importance in the score (design document 001's types)."""

    MESSAGE = "message"
    CODE = "code"
    LOG = "log"
    NOTE = "note"
    DECISION = "decision"
    SUMMARY = "summary"
    TOOL_OUTPUT = "tool output"


# Decisions matter most, logs least (the seed's order; a tool's other output sits between).
IMPORTANCE: dict[SegmentKind, float] = {
    SegmentKind.DECISION: 1.0,
    SegmentKind.NOTE: 0.8,
    SegmentKind.SUMMARY: 0.7,
    SegmentKind.CODE: 0.6,
    SegmentKind.MESSAGE: 0.5,
    SegmentKind.TOOL_OUTPUT: 0.4,
    SegmentKind.LOG: 0.2,
}
