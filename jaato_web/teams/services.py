"""Writes for projects, members, API tokens and sign-in attempts; each change is audited."""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from jaato_web.dashboard.audit import audit_record
from jaato_web.dashboard.models import AuditAction, Project
from jaato_web.errors import InputError, without_nul
from jaato_web.teams.access import TOKEN_PREFIX, token_digest
from jaato_web.teams.models import ApiToken, Membership, SignInAttempt
from jaato_web.teams.permissions import Role

if TYPE_CHECKING:
    from django.contrib.auth.models import User

security_log = logging.getLogger("jaato_web.security")

# Sign-in throttling: this many failures within the window lock out further attempts for the
# same user name, or from the same address, until the window has passed.
SIGN_IN_WINDOW = timedelta(minutes=15)
SIGN_IN_MAX_FAILURES_PER_USER = 5
SIGN_IN_MAX_FAILURES_PER_ADDRESS = 20


class MembershipError(InputError):
    """A membership change that would leave a project without an admin, or names no one."""


# --- Projects and members --------------------------------------------------------------------


@transaction.atomic
def project_create(*, name: str, creator: User) -> Project:
    """A new project; its creator is its first admin."""
    name = without_nul(name, "name").strip()[:200] or "Untitled project"
    base = slugify(name)[:40] or "project"
    slug, n = base, 1
    while Project.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    project = Project.objects.create(name=name, slug=slug)
    Membership.objects.create(project=project, user=creator, role=Role.ADMIN)
    audit_record(
        project=project,
        actor=creator,
        action=AuditAction.PROJECT_CREATE,
        target=project.name,
        target_url=reverse("member_list", args=[project.pk]),
    )
    return project


def _admins_left(project: Project, without: Membership) -> bool:
    return (
        Membership.objects.filter(project=project, role=Role.ADMIN).exclude(pk=without.pk).exists()
    )


@transaction.atomic
def member_add(*, project: Project, user: User, role: Role, actor: User | None) -> Membership:
    try:
        with transaction.atomic():
            membership = Membership.objects.create(project=project, user=user, role=role)
    except IntegrityError:
        raise MembershipError(f"{user.get_username()} is already a member.", "username") from None
    audit_record(
        project=project,
        actor=actor,
        action=AuditAction.MEMBER_ADD,
        target=user.get_username(),
        target_url=reverse("member_list", args=[project.pk]),
        detail={"role": role.value},
    )
    return membership


@transaction.atomic
def member_set_role(*, membership: Membership, role: Role, actor: User | None) -> Membership:
    locked = Membership.objects.select_for_update().get(pk=membership.pk)
    if locked.role == role:
        return locked
    if locked.role == Role.ADMIN and not _admins_left(locked.project, locked):
        raise MembershipError(
            "A project needs at least one admin; make someone else admin first.", "role"
        )
    before = locked.role
    locked.role = role
    locked.save(update_fields=["role"])
    audit_record(
        project=locked.project,
        actor=actor,
        action=AuditAction.MEMBER_ROLE,
        target=locked.user.get_username(),
        target_url=reverse("member_list", args=[locked.project_id]),
        detail={"from": before, "to": role.value},
    )
    return locked


@transaction.atomic
def member_remove(*, membership: Membership, actor: User | None) -> None:
    locked = Membership.objects.select_for_update().get(pk=membership.pk)
    if locked.role == Role.ADMIN and not _admins_left(locked.project, locked):
        raise MembershipError(
            "A project needs at least one admin; make someone else admin first.", "membership"
        )
    locked.delete()
    audit_record(
        project=locked.project,
        actor=actor,
        action=AuditAction.MEMBER_REMOVE,
        target=locked.user.get_username(),
        target_url=reverse("member_list", args=[locked.project_id]),
        detail={"role": locked.role},
    )


# --- API tokens ------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewToken:
    """The stored token and its secret, which exists only in this object and the page
    that shows it once."""

    token: ApiToken
    secret: str


@transaction.atomic
def token_create(*, user: User, name: str, projects: list[Project]) -> NewToken:
    """A token for ``projects`` (each must be one of the user's); only its digest is kept."""
    member_of = set(Membership.objects.filter(user=user).values_list("project_id", flat=True))
    if not projects or any(p.pk not in member_of for p in projects):
        raise MembershipError(
            "A token reaches only projects you are a member of; pick at least one.", "projects"
        )
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=without_nul(name, "name").strip()[:100] or "token",
        prefix=secret[: len(TOKEN_PREFIX) + 6],
        digest=token_digest(secret),
    )
    token.projects.set(projects)
    for project in projects:
        audit_record(
            project=project,
            actor=user,
            action=AuditAction.TOKEN_CREATE,
            target=f"token {token.name} ({token.prefix}…)",
        )
    return NewToken(token=token, secret=secret)


@transaction.atomic
def token_revoke(*, token: ApiToken, actor: User) -> None:
    if token.revoked_at is not None:
        return
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    for project in token.projects.all():
        audit_record(
            project=project,
            actor=actor,
            action=AuditAction.TOKEN_REVOKE,
            target=f"token {token.name} ({token.prefix}…)",
        )


# --- Sign-in throttling ----------------------------------------------------------------------


def sign_in_blocked(*, username: str, ip_address: str | None) -> bool:
    """Whether too many recent failures for this name or from this address forbid a try.

    A name's failures count from its last successful sign-in, so an honest typo does not
    linger; an address's count only ages out, so guessing many names from one place stops.
    """
    name = username.lower()[:150]
    since = timezone.now() - SIGN_IN_WINDOW
    last_success = (
        SignInAttempt.objects.filter(username=name, succeeded=True, created_at__gte=since)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    failures = SignInAttempt.objects.filter(succeeded=False, created_at__gte=since)
    by_name = failures.filter(username=name, created_at__gt=last_success or since)
    if by_name.count() >= SIGN_IN_MAX_FAILURES_PER_USER:
        return True
    return (
        ip_address is not None
        and failures.filter(ip_address=ip_address).count() >= SIGN_IN_MAX_FAILURES_PER_ADDRESS
    )


def sign_in_record(*, username: str, ip_address: str | None, succeeded: bool) -> None:
    """Keep every attempt (the table throttling reads); failures also go to the security log."""
    name = username.lower()[:150]
    SignInAttempt.objects.create(username=name, ip_address=ip_address, succeeded=succeeded)
    if not succeeded:
        security_log.warning("failed sign-in for %r from %s", name, ip_address or "unknown")
