"""Figures in words, as every page and sentence writes them: counts with the noun they agree
with, percentages, lists, turn numbers and ranges, and dollars. One spelling each, so a figure
reads the same on every page that shows it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import gcengine

MISSING_SHARE = "n/a"


def counted(count: int, noun: str, plural: str = "") -> str:
    """``1 turn``, ``1,234 turns``: a count with its separators and the noun it agrees with."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def percent_text(value: float) -> str:
    """A percentage already worked out, with one decimal: ``62.5 %``."""
    return f"{value:.1f} %"


def setting_text(value: Any) -> str:
    """A percentage from a gc.json as its author wrote it: 60, 62.5."""
    return f"{float(value):g} %"


def listed(parts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def turn_number_of(index: int | None) -> int | None:
    """The number a person reads for the turn with stable index ``index`` (the engine's
    ``turn_number``: index 0 is turn 1), or None for what no turn holds."""
    return None if index is None else gcengine.turn_number(index)


def turn_index_of(number: int) -> int:
    """The stable index of the turn a person names by ``number`` (from 1): the inverse of
    ``gcengine.turn_number``, for a turn typed in a form or a query."""
    return number - 1


def turn_numbers(indices: Iterable[int]) -> list[int]:
    """Stable turn indices as the numbers a person reads, in their order."""
    return [gcengine.turn_number(index) for index in indices]


def turn_ranges(indices: Iterable[int]) -> str:
    """``[1, 2, 3, 7, 9, 10]`` as ``1–3, 7, 9–10``."""
    spans: list[list[int]] = []
    for index in sorted(set(indices)):
        if spans and index == spans[-1][1] + 1:
            spans[-1][1] = index
        else:
            spans.append([index, index])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)


def share(value: float | None) -> str:
    """A recall or a rate as a percentage with one decimal: ``0.949`` -> ``94.9 %``."""
    return MISSING_SHARE if value is None else f"{value * 100:.1f} %"


def dollars(value: float) -> str:
    """Dollars with cents, or four decimals under a dollar: ``$21.22``, ``$0.0063``."""
    return f"${value:,.2f}" if value >= 0.995 else f"${value:.4f}"
