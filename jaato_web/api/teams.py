"""Projects, members and the audit log, under the same permission table as the pages."""

from __future__ import annotations

from datetime import date, datetime

from django.contrib.auth import get_user_model
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from jaato_web.api.auth import MANAGE_MEMBERS, VIEW, access_of
from jaato_web.api.paging import paged
from jaato_web.api.schemas import Id, ObjectIn, PageNumber
from jaato_web.dashboard.models import AuditAction, AuditEvent, Project
from jaato_web.errors import without_nul
from jaato_web.teams import selectors, services
from jaato_web.teams.models import Membership
from jaato_web.teams.permissions import Role

router = Router(tags=["teams"])


class ProjectOut(Schema):
    id: int
    name: str
    slug: str
    role: str


class MemberOut(Schema):
    id: int
    username: str
    role: str
    created_at: datetime

    @staticmethod
    def resolve_username(membership: Membership) -> str:
        return membership.user.get_username()


class MemberIn(ObjectIn):
    username: str
    role: Role = Role.VIEWER


class RoleIn(ObjectIn):
    role: Role


class AuditEventOut(Schema):
    id: int
    project: int | None
    actor: str
    action: AuditAction
    target: str
    target_url: str
    detail: dict[str, object]
    created_at: datetime

    @staticmethod
    def resolve_project(event: AuditEvent) -> int | None:
        return event.project_id

    @staticmethod
    def resolve_actor(event: AuditEvent) -> str:
        return event.actor_name


class AuditPage(Schema):
    count: int
    page: int
    pages: int
    items: list[AuditEventOut]


def _project(request: HttpRequest, project_id: int) -> Project:
    access_of(request).check(project_id)
    return get_object_or_404(Project, pk=project_id)


@router.get("/projects", response=list[ProjectOut], summary="Your projects and roles", auth=VIEW)
def list_projects(request: HttpRequest) -> list[dict[str, object]]:
    """With a token: the projects it reaches (and your role in each)."""
    roles = access_of(request).roles
    projects = Project.objects.filter(pk__in=roles).order_by("name")
    return [{"id": p.pk, "name": p.name, "slug": p.slug, "role": roles[p.pk]} for p in projects]


@router.get(
    "/projects/{int:project_id}/members", response=list[MemberOut], summary="Members", auth=VIEW
)
def list_members(request: HttpRequest, project_id: int) -> list[Membership]:
    return list(selectors.project_members(project=_project(request, project_id)))


@router.post(
    "/projects/{int:project_id}/members",
    response={201: MemberOut, 400: dict[str, str]},
    summary="Add a member",
    auth=MANAGE_MEMBERS,
)
def add_member(request: HttpRequest, project_id: int, payload: MemberIn) -> Status[object]:
    project = _project(request, project_id)
    without_nul(payload.username, "username")  # a lookup PostgreSQL would refuse
    user = get_user_model().objects.filter(username=payload.username, is_active=True).first()
    if user is None:
        return Status(
            400, {"detail": f"no active user named {payload.username!r}", "key": "username"}
        )
    membership = services.member_add(
        project=project, user=user, role=payload.role, actor=access_of(request).user
    )
    return Status(201, membership)


@router.patch(
    "/projects/{int:project_id}/members/{int:membership_id}",
    response={200: MemberOut, 400: dict[str, str]},
    summary="Change a member's role",
    auth=MANAGE_MEMBERS,
)
def set_role(
    request: HttpRequest, project_id: int, membership_id: int, payload: RoleIn
) -> Status[object]:
    project = _project(request, project_id)
    membership = selectors.membership_get(project=project, membership_id=membership_id)
    changed = services.member_set_role(
        membership=membership, role=payload.role, actor=access_of(request).user
    )
    return Status(200, changed)


@router.delete(
    "/projects/{int:project_id}/members/{int:membership_id}",
    response={204: None, 400: dict[str, str]},
    summary="Remove a member",
    auth=MANAGE_MEMBERS,
)
def remove_member(request: HttpRequest, project_id: int, membership_id: int) -> Status[object]:
    project = _project(request, project_id)
    membership = selectors.membership_get(project=project, membership_id=membership_id)
    services.member_remove(membership=membership, actor=access_of(request).user)
    return Status(204, None)


@router.get("/audit", response=AuditPage, summary="The audit log, filtered", auth=VIEW)
def audit_log(
    request: HttpRequest,
    project: Id | None = None,
    action: AuditAction | None = None,
    actor: str = "",
    since: date | None = None,
    until: date | None = None,
    page: PageNumber = 1,
) -> dict[str, object]:
    """Events of one project (``project``) or of every project you reach, newest first."""
    access = access_of(request)
    if project is not None:
        access.check(project)
    events = selectors.audit_events(
        projects=[project] if project is not None else access.project_ids,
        action=action or "",
        actor=actor,
        since=since,
        until=until,
    )
    return paged(events, page, selectors.AUDIT_PER_PAGE)
