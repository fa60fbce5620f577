"""What a segment is: its kind, and its anchors as a sentence shows them.

A stash records both for every segment it keeps, and the reachability model, which finds
them, scores and explains segments with them; they sit here, below both, so the stash a
collection's result carries needs nothing above the collection machinery.
"""

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


def describe(anchor: str) -> str:
    """An anchor (``kind:value``) as a sentence shows it: a path or code as written, an
    identifier (a ``name:`` anchor) in backticks."""
    kind, _, value = anchor.partition(":")
    return f"`{value}`" if kind == "name" else value
