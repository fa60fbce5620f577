"""Paging shared by the API's list endpoints: numbered pages, or offset slices of a tree level."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from jaato_web.dashboard import presenters, selectors


def paged(items: QuerySet[Any], page: int, per_page: int) -> dict[str, Any]:
    current = selectors.page_of(items, page, per_page)
    return {
        "page": current.number,
        "pages": current.paginator.num_pages,
        "count": current.paginator.count,
        "items": list(current.object_list),
    }


def node_page(
    nodes: list[selectors.TreeNode], total: int, parent: str, offset: int
) -> dict[str, Any]:
    return {
        "parent_path": parent,
        "offset": max(offset, 0),
        "total": total,
        "items": [
            {
                "path": n.path,
                "parent_path": n.parent_path,
                "key": n.key,
                "label": n.label,
                "depth": n.depth,
                "policy": n.policy,
                "indicator": presenters.indicator(n.policy),
                "tokens": n.tokens,
                "child_count": n.child_count,
            }
            for n in nodes
        ],
    }
