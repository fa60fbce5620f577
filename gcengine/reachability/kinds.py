"""How much each kind of segment matters in the score."""

from __future__ import annotations

from gcengine.gc.segments import SegmentKind

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
