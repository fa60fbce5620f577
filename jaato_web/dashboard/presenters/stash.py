"""The reachability pages: the reference graph around a turn, drawn as boxes and lines
(what the turn refers to, its segments, what refers to it) with the same facts as text.
"""

from __future__ import annotations

from dataclasses import dataclass

import gcengine

# What a side of the picture shows at most; the text beneath lists them all.
GRAPH_SIDE_MAX = 10
_BOX_WIDTH, _BOX_HEIGHT, _ROW, _TOP = 220, 26, 34, 30
_COLUMNS = (10, 270, 530)
_LABEL_CHARS = 32


@dataclass(frozen=True)
class GraphBox:
    """A segment drawn as a box: its corner, its label (shortened to fit; ``title`` is the
    whole), and what it is."""

    x: int
    y: int
    label: str
    title: str
    kind: str
    reachable: bool
    root: bool

    @property
    def text_x(self) -> int:
        return self.x + 8

    @property
    def text_y(self) -> int:
        return self.y + _BOX_HEIGHT // 2


@dataclass(frozen=True)
class GraphLine:
    x1: int
    y1: int
    x2: int
    y2: int
    title: str


@dataclass(frozen=True)
class GraphRow:
    """One reference, in words: ``source`` names ``how``, which ``target`` holds."""

    source: str
    target: str
    how: str


@dataclass(frozen=True)
class ReferencePicture:
    """The reference graph around a turn, drawn: what it refers to on the left, its segments
    in the middle, what refers to it on the right; and the same facts as rows of text."""

    turn_number: int
    width: int
    height: int
    box_width: int
    box_height: int
    columns: tuple[int, int, int]
    boxes: list[GraphBox]
    lines: list[GraphLine]
    outgoing: list[GraphRow]
    incoming: list[GraphRow]
    more_outgoing: int
    more_incoming: int


def _shortened(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def _how(how: str) -> str:
    """How a reference goes, in words: an anchor as written, or the explicit kinds."""
    return {
        "reply": "its reply reports the tool output",
        "summary": "its summary covers the turn",
    }.get(how, f"names {how}")


def reference_picture(graph: gcengine.TurnReferences) -> ReferencePicture:
    """Boxes and lines for ``graph`` (at most ``GRAPH_SIDE_MAX`` boxes a side), every
    reference listed in words."""
    left, middle, right = _COLUMNS
    boxes: list[GraphBox] = []
    centre: dict[str, int] = {}
    for row, segment in enumerate(graph.segments):
        y = _TOP + row * _ROW
        centre[segment.segment_id] = y
        boxes.append(
            GraphBox(
                middle,
                y,
                _shortened(segment.label),
                f"{segment.label}: {segment.kind.value}, {segment.tokens:,} tokens",
                segment.kind.value,
                segment.reachable,
                segment.root,
            )
        )
    lines: list[GraphLine] = []

    def side(references: list[gcengine.Reference], outgoing: bool) -> int:
        placed: dict[str, int] = {}
        for reference in references:
            other_id = reference.target_id if outgoing else reference.source_id
            other_label = reference.target_label if outgoing else reference.source_label
            if other_id not in placed:
                if len(placed) == GRAPH_SIDE_MAX:
                    continue
                placed[other_id] = _TOP + len(placed) * _ROW
                boxes.append(
                    GraphBox(
                        left if outgoing else right,
                        placed[other_id],
                        _shortened(other_label),
                        other_label,
                        "other",
                        False,
                        False,
                    )
                )
            own_y = centre[reference.source_id if outgoing else reference.target_id]
            other_y = placed[other_id]
            middle_y = _BOX_HEIGHT // 2
            sentence = f"{reference.source_label} {_how(reference.how)} ({reference.target_label})"
            if outgoing:
                lines.append(
                    GraphLine(
                        middle, own_y + middle_y, left + _BOX_WIDTH, other_y + middle_y, sentence
                    )
                )
            else:
                lines.append(
                    GraphLine(
                        right, other_y + middle_y, middle + _BOX_WIDTH, own_y + middle_y, sentence
                    )
                )
        unique = {r.target_id if outgoing else r.source_id for r in references}
        return len(unique) - len(placed)

    more_outgoing = side(graph.outgoing, outgoing=True)
    more_incoming = side(graph.incoming, outgoing=False)
    rows = max(
        len(graph.segments),
        min(GRAPH_SIDE_MAX, len({r.target_id for r in graph.outgoing})),
        min(GRAPH_SIDE_MAX, len({r.source_id for r in graph.incoming})),
        1,
    )
    return ReferencePicture(
        turn_number=graph.turn_number,
        width=right + _BOX_WIDTH + 10,
        height=_TOP + rows * _ROW,
        box_width=_BOX_WIDTH,
        box_height=_BOX_HEIGHT,
        columns=_COLUMNS,
        boxes=boxes,
        lines=lines,
        outgoing=[GraphRow(r.source_label, r.target_label, _how(r.how)) for r in graph.outgoing],
        incoming=[GraphRow(r.source_label, r.target_label, _how(r.how)) for r in graph.incoming],
        more_outgoing=more_outgoing,
        more_incoming=more_incoming,
    )
