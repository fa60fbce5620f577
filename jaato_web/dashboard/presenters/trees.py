"""The budget tree as the tree view draws it: its rows, the legend of its policy tiers, and
the bar of a session's tokens against its window.

The tree is flattened once, when a session or a run is stored, so pages page through rows
instead of walking a 26,000-leaf tree per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gcengine


@dataclass(frozen=True)
class LegendEntry:
    policy: str
    description: str


def policy_legend() -> list[LegendEntry]:
    """Every policy tier the tree can show, most protective first, with what it means."""
    return [LegendEntry(p.value, p.description) for p in gcengine.POLICY_ORDER]


def indicator(policy: str) -> str:
    try:
        return gcengine.GCPolicy(policy).indicator
    except ValueError:
        return "?"


@dataclass(frozen=True)
class TreeRow:
    """A node as the tree view draws it: its share of the session's tokens (None for what is
    not sent to the model: earlier reasoning), policy, whether it opens."""

    path: str
    depth: int
    label: str
    policy: str
    tokens: int
    share_percent: float | None
    child_count: int
    node_id: str = ""

    @property
    def sent(self) -> bool:
        return self.share_percent is not None


# Providers drop earlier turns' reasoning from the prompt, so it is not part of a session's
# tokens; the tree shows it apart, with no share of a total it is not in.
NOT_SENT = gcengine.InstructionSource.THINKING.value


def tree_rows(nodes: Sequence[Any], total_tokens: int) -> list[TreeRow]:
    """Tree nodes (``selectors.TreeNode``) ready for the template."""
    return [
        TreeRow(
            path=node.path,
            depth=node.depth,
            label=node.label,
            policy=node.policy,
            tokens=node.tokens,
            share_percent=None
            if node.path.split("/", 1)[0] == NOT_SENT
            else (node.tokens / total_tokens * 100 if total_tokens else 0.0),
            child_count=node.child_count,
            node_id=node.node_id,
        )
        for node in nodes
    ]


@dataclass(frozen=True)
class UsageBar:
    """A session's tokens against its context window, split by what GC may and may not touch.

    The bar is as long as the larger of the session and the window, so each part's width is
    its share of the session's tokens whatever the usage: at 800 % the parts keep their
    proportions, the window's edge is a mark at an eighth of the bar, and what lies beyond it
    is the overflow.
    """

    limit: int
    total: int
    locked: int
    preservable: int
    eligible: int
    other: int

    @property
    def percent(self) -> float:
        return self.total / self.limit * 100 if self.limit else 0.0

    @property
    def over_by(self) -> int:
        """Tokens over the window; 0 when the session fits."""
        return max(self.total - self.limit, 0)

    @property
    def _scale(self) -> int:
        return max(self.total, self.limit, 1)

    @property
    def limit_x(self) -> float:
        """Where the window ends, as a share of the bar's length."""
        return round(self.limit / self._scale * 100, 2)

    @property
    def placed(self) -> list[tuple[str, float, float]]:
        """The parts laid end to end as (name, x, width), shares of the bar's length."""
        placed, x = [], 0.0
        for name, tokens in (
            ("locked", self.locked),
            ("preservable", self.preservable),
            ("eligible", self.eligible),
            ("other", self.other),
        ):
            width = tokens / self._scale * 100
            placed.append((name, round(x, 2), round(width, 2)))
            x += width
        return placed

    def share(self, tokens: int) -> float:
        """A part's share of the session's tokens (never of the window)."""
        return tokens / self.total * 100 if self.total else 0.0

    @property
    def shares(self) -> dict[str, float]:
        return {
            "locked": self.share(self.locked),
            "preservable": self.share(self.preservable),
            "eligible": self.share(self.eligible),
        }


def usage_bar(*, limit: int, total: int, locked: int, preservable: int, eligible: int) -> UsageBar:
    return UsageBar(
        limit=limit,
        total=total,
        locked=locked,
        preservable=preservable,
        eligible=eligible,
        other=max(total - locked - preservable - eligible, 0),
    )
