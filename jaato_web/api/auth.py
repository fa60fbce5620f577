"""The ``auth=`` of every API operation: one per action of the permission table.

An operation names what it does (``auth=RUN``); the same ``Access`` the pages use then finds
objects only among the caller's projects (404 elsewhere) and refuses a role without the action
(403). A bearer token reaches only the projects it was made for.
"""

from __future__ import annotations

from django.http import HttpRequest

from jaato_web.dashboard.models import Project
from jaato_web.teams.access import Access, ApiAccess
from jaato_web.teams.permissions import Action

VIEW = ApiAccess(Action.VIEW)
COMMENT = ApiAccess(Action.COMMENT)
REVIEW = ApiAccess(Action.REVIEW)
UPLOAD = ApiAccess(Action.UPLOAD)
RUN = ApiAccess(Action.RUN)
PIN = ApiAccess(Action.PIN)
EDIT_POLICY = ApiAccess(Action.EDIT_POLICY)
DELETE = ApiAccess(Action.DELETE)
MANAGE_MEMBERS = ApiAccess(Action.MANAGE_MEMBERS)


def access_of(request: HttpRequest) -> Access:
    access = request.auth  # type: ignore[attr-defined]
    assert isinstance(access, Access)
    return access


def project_of(request: HttpRequest, project_id: int | None) -> Project:
    """The project named by ``?project=``, or the caller's first project allowing the action."""
    return access_of(request).project(project_id)
