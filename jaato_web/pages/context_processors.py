"""What every page may need: the user's projects, the current one, what they may do, and
whether background work has a worker to take it."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.http import HttpRequest

from jaato_web.dashboard import selectors
from jaato_web.dashboard.models import Project
from jaato_web.teams.access import CURRENT_PROJECT_KEY, Access, roles_of
from jaato_web.teams.permissions import Action, role_allows


def projects(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    access: Access | None = getattr(request, "access", None)
    roles = access.roles if access is not None else roles_of(user)
    current_id = request.session.get(CURRENT_PROJECT_KEY)
    if current_id not in roles:
        current_id = min(roles) if roles else None
    page_project = access.project_id if access is not None and access.project_id else current_id

    def lazy_projects() -> list[Project]:
        return list(Project.objects.filter(pk__in=roles).order_by("name"))

    return {
        "my_projects": lazy_projects,
        "current_project_id": current_id,
        # What the signed-in user may do in the project the page shows: ``can.run`` etc.
        "can": access.can(page_project) if access is not None else {},
        "my_role": roles.get(page_project) if page_project is not None else None,
        # What they may do in at least one of their projects (the header's links).
        "can_any": {
            action.value: any(role_allows(role, action) for role in roles.values())
            for action in Action
        },
    }


def background(request: HttpRequest) -> dict[str, Any]:
    """``worker_absent``: the worker status when no worker has been seen for a lease's length
    (else None), read only by a page that shows waiting work, and once."""

    @cache
    def worker_absent() -> selectors.WorkerStatus | None:
        status = selectors.worker_status()
        return status if status.absent else None

    return {"worker_absent": worker_absent}
