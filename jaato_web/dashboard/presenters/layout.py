"""How pages lay out what every family draws: the size of a server-drawn chart, and the pager
of a paged list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CHART_WIDTH = 900
CHART_HEIGHT = 260
# The policy pages draw their charts in a column about half as wide: drawn in a box of that
# size, the labels keep their size on screen instead of shrinking with the whole chart.
COMPACT_CHART_WIDTH = 440
COMPACT_CHART_HEIGHT = 190


@dataclass(frozen=True)
class Pager:
    """A page of a list and the query changes that reach its neighbours.

    ``previous`` and ``next`` are mappings for ``{% querystring request.GET pager.next %}``,
    which keeps the rest of the query (search, sort, other lists' pages); page 1 drops the
    parameter.
    """

    page: Any
    param: str
    previous: dict[str, int | None] | None
    next: dict[str, int | None] | None


def pager(page: Any, param: str) -> Pager:
    previous = next_ = None
    if page.has_previous():
        number = page.previous_page_number()
        previous = {param: number if number > 1 else None}
    if page.has_next():
        next_ = {param: page.next_page_number()}
    return Pager(page=page, param=param, previous=previous, next=next_)
