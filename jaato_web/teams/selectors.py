"""Reads for the account and project pages, and the audit log's filters."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date, timedelta
from typing import TYPE_CHECKING

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from jaato_web.dashboard.models import AuditEvent, Project
from jaato_web.teams.models import ApiToken, Membership

if TYPE_CHECKING:
    from django.contrib.auth.models import User

AUDIT_PER_PAGE = 50


def my_memberships(*, user: User) -> QuerySet[Membership]:
    return Membership.objects.filter(user=user).select_related("project").order_by("project__name")


def project_members(*, project: Project) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    )


def membership_get(*, project: Project, membership_id: int) -> Membership:
    return get_object_or_404(
        Membership.objects.select_related("user", "project"), pk=membership_id, project=project
    )


def my_tokens(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).prefetch_related("projects").order_by("-created_at")


def audit_events(
    *,
    projects: Collection[int],
    action: str = "",
    actor: str = "",
    since: date | None = None,
    until: date | None = None,
) -> QuerySet[AuditEvent]:
    """Events of these projects, newest first, narrowed by the filters that are given."""
    events = AuditEvent.objects.filter(project__in=projects).select_related("project")
    if action:
        events = events.filter(action=action)
    if actor:
        events = events.filter(actor_name__iexact=actor.strip())
    if since:
        events = events.filter(created_at__date__gte=since)
    if until:
        events = events.filter(created_at__date__lt=until + timedelta(days=1))
    return events.order_by("-created_at", "-pk")
