"""Writing the audit log: one call per change, inside the change's own transaction.

Services call ``audit_record`` right where they change something, so an event exists exactly
when its change was committed: a failed upload or a refused save leaves no event behind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jaato_web.dashboard.models import AuditAction, AuditEvent, Project

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


SYSTEM_ACTOR = "system"


def actor_name(actor: AbstractBaseUser | AnonymousUser | None) -> str:
    """Who to name for a change: the user, or "system" for work nobody asked for directly."""
    if actor is None or not actor.is_authenticated:
        return SYSTEM_ACTOR
    return actor.get_username()


def audit_record(
    *,
    project: Project | None,
    actor: AbstractBaseUser | AnonymousUser | None,
    action: AuditAction,
    target: str,
    target_url: str = "",
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    user = actor if actor is not None and actor.is_authenticated else None
    return AuditEvent.objects.create(
        project=project,
        actor_id=user.pk if user is not None else None,
        actor_name=actor_name(actor),
        action=action,
        target=target[:300],
        target_url=target_url,
        detail=detail or {},
    )
