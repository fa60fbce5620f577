"""Archive and delete: a session, run or policy hidden from lists and pickers (or shown again),
and deleted with what it takes with it, said first on the page that asks to confirm."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from jaato_web.dashboard.audit import audit_record
from jaato_web.dashboard.models import AgentSession, AuditAction, BudgetNode, GCRun, Policy, Project
from jaato_web.dashboard.services.common import project_set_default_policy

if TYPE_CHECKING:
    from jaato_web.dashboard.services.common import Actor


def item_described(item: AgentSession | GCRun | Policy) -> tuple[str, str, Project]:
    """How pages and the audit log name an item: its kind, its name, and its project."""
    if isinstance(item, AgentSession):
        return "session", item.label, item.project
    if isinstance(item, GCRun):
        return "run", f"run {item.pk} of {item.session.label}", item.session.project
    return ("planner config" if item.is_planner else "policy"), item.name, item.project


@transaction.atomic
def archive_set(
    *, item: AgentSession | GCRun | Policy, archived: bool, actor: Actor = None
) -> None:
    """Hide a session, run or policy from lists and pickers (or show it again). Nothing is
    removed: an archived item still opens by its address, and its runs and comments stay."""
    if (item.archived_at is not None) == archived:
        return
    if isinstance(item, Policy) and archived and item.project.default_policy_id == item.pk:
        # An archived policy is offered nowhere, so it cannot go on running on every upload.
        project_set_default_policy(project=item.project, policy=None, actor=actor)
    item.archived_at = timezone.now() if archived else None
    type(item).objects.filter(pk=item.pk).update(archived_at=item.archived_at)
    kind, name, project = item_described(item)
    audit_record(
        project=project,
        actor=actor,
        action=AuditAction.ARCHIVE if archived else AuditAction.UNARCHIVE,
        target=f"{kind} {name}" if kind != "run" else name,
        target_url=_url_of(item),
        detail={"kind": kind, "id": item.pk},
    )


@dataclass(frozen=True)
class DeletionPlan:
    """What deleting an item takes with it, for the page that asks to confirm."""

    kind: str
    name: str
    runs: int = 0
    replays: int = 0
    comments: int = 0
    versions: int = 0
    default_policy: bool = False


def deletion_plan(*, item: AgentSession | GCRun | Policy) -> DeletionPlan:
    kind, name, project = item_described(item)
    if isinstance(item, AgentSession):
        return DeletionPlan(
            kind,
            name,
            runs=item.runs.count(),
            replays=item.replays.count(),
            comments=item.runs.aggregate(n=Count("comments"))["n"] or 0,
        )
    if isinstance(item, GCRun):
        return DeletionPlan(kind, name, comments=item.comments.count())
    return DeletionPlan(
        kind,
        name,
        versions=item.versions.count(),
        comments=item.versions.aggregate(n=Count("comments"))["n"] or 0,
        default_policy=project.default_policy_id == item.pk,
    )


@transaction.atomic
def item_delete(*, item: AgentSession | GCRun | Policy, actor: Actor = None) -> None:
    """Delete a session (with its original upload, turns, runs, replays and their comments),
    a run (with its ledger, summaries and comments), or a policy (with its versions; runs of
    it keep the gc.json they used). The audit log keeps a record of it."""
    kind, name, project = item_described(item)
    plan = deletion_plan(item=item)
    pk = item.pk
    if isinstance(item, AgentSession):
        # A budget node may belong to one of the session's runs as well: delete them first.
        BudgetNode.objects.filter(session=item).delete()
    item.delete()
    audit_record(
        project=project,
        actor=actor,
        action=AuditAction.DELETE,
        target=f"{kind} {name}" if kind != "run" else name,
        detail={"kind": kind, "id": pk, **{k: v for k, v in vars(plan).items() if v}},
    )


def _url_of(item: AgentSession | GCRun | Policy) -> str:
    if isinstance(item, AgentSession):
        return reverse("session_detail", args=[item.pk])
    if isinstance(item, GCRun):
        return reverse("run_detail", args=[item.pk])
    return reverse("policy_versions", args=[item.pk])
