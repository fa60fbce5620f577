"""Budget tree fragments: one node's children, a slice at a time, for a session or a run.

The conversation node of a 10,000-turn session has 10,000 children, so a node opens with its
first ``selectors.NODES_PER_PAGE`` children and a "load more" row that fetches the next slice.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from jaato_web.dashboard import presenters, selectors
from jaato_web.dashboard.models import AgentSession, GCRun
from jaato_web.http import PageRequest, query_int
from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action

TEMPLATE = "components/tree.html#tree-children"


@require_GET
@requires(Action.VIEW)
def session_tree(request: PageRequest, session_id: int) -> HttpResponse:
    session = request.access.session(session_id)
    url = reverse("session_tree", args=[session.pk])
    return _children(request, session, None, url)


@require_GET
@requires(Action.VIEW)
def run_tree(request: PageRequest, run_id: int) -> HttpResponse:
    run = request.access.run(run_id)
    url = reverse("run_tree", args=[run.pk])
    return _children(request, run.session, run, url)


def _children(
    request: PageRequest, session: AgentSession, run: GCRun | None, url: str
) -> HttpResponse:
    path = request.GET.get("path", "")
    offset = query_int(request.GET.get("offset"))
    nodes, more = selectors.budget_children_slice(
        session=session, run=run, parent_path=path, offset=offset
    )
    # Shares are of the session's tokens before any run, so both trees of a run use one scale.
    context = {
        "tree": {
            "rows": presenters.tree_rows(nodes, session.total_tokens),
            "url": url,
            "path": path,
            "more_offset": offset + len(nodes) if more else None,
        }
    }
    return render(request, TEMPLATE, context)
