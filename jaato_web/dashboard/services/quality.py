"""Compaction quality for a project: its retention gates and price table, and the engine's
scores as runs, replays and uploads store them.

A project that never set its gates or prices uses the engine's defaults, and keeps using them
as they change; one that saved its own keeps its own. How scores are stored is ``storage``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.urls import reverse

import gcengine
from jaato_web.dashboard.audit import audit_record
from jaato_web.dashboard.models import AgentSession, AuditAction, Project, SummaryProvider
from jaato_web.dashboard.services import stored_sessions
from jaato_web.dashboard.services.common import project_prices

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    Actor = AbstractBaseUser | AnonymousUser | None


def project_gates(project: Project) -> dict[gcengine.AnchorClass, float]:
    """The least recall per class the project accepts."""
    if project.retention_gates is None:
        return dict(gcengine.DEFAULT_RETENTION_GATES)
    return gcengine.load_retention_gates(project.retention_gates)


def project_quality_save(*, project: Project, gates: Any, prices: Any, actor: Actor = None) -> None:
    """Store the project's gates (``{"decisions": 0.95}``) and price table (a list of model
    entries), each checked by the engine first (``RetentionGateError`` and
    ``PriceTableError`` name the class, or the entry and field, at fault). ``None`` goes back
    to the engine's defaults."""
    checked_gates = None if gates is None else gcengine.load_retention_gates(gates)
    checked_prices = None if prices is None else gcengine.load_price_table(prices)
    with transaction.atomic():
        project.retention_gates = (
            None
            if checked_gates is None
            else {cls.value: minimum for cls, minimum in checked_gates.items()}
        )
        project.prices = (
            None if checked_prices is None else [p.model_dump() for p in checked_prices]
        )
        project.save(update_fields=["retention_gates", "prices"])
        audit_record(
            project=project,
            actor=actor,
            action=AuditAction.QUALITY,
            target=f"quality gates and prices of {project.name}",
            target_url=reverse("project_quality", args=[project.pk]),
            detail={
                "gates": project.retention_gates,
                "prices": [p["model"] for p in project.prices] if project.prices else None,
            },
        )


def project_provider_save(
    *,
    project: Project,
    protocol: str,
    model: str,
    base_url: str,
    api_key: str | None,
    timeout: float,
    actor: Actor = None,
) -> SummaryProvider | None:
    """Store the provider that writes the project's summaries, or (``protocol`` empty) turn
    model-written summaries off. ``api_key`` None keeps the stored key, "" removes it. The
    audit log names the provider and whether a key is set, never the key."""
    with transaction.atomic():
        provider = SummaryProvider.objects.select_for_update().filter(project=project).first()
        if not protocol:
            if provider is not None:
                provider.delete()
            provider = None
        else:
            provider = provider or SummaryProvider(project=project)
            provider.protocol, provider.model = protocol, model
            provider.base_url, provider.timeout = base_url, timeout
            if api_key is not None:
                provider.api_key = api_key
            provider.save()
        audit_record(
            project=project,
            actor=actor,
            action=AuditAction.QUALITY,
            target=f"summary provider of {project.name}",
            target_url=reverse("project_quality", args=[project.pk]),
            detail={
                "provider": protocol or None,
                "model": provider.model if provider else None,
                "base_url": (provider.base_url or None) if provider else None,
                "key_set": bool(provider and provider.api_key),
            },
        )
    return provider


def session_recorded_cost(session: AgentSession) -> gcengine.SessionCost:
    """What the session cost as the agent ran it: every call the upload recorded (each of its
    contexts, its compaction call and sub-agents from a zip with the ``subagents`` folder),
    priced with the project's table."""
    engine = stored_sessions.engine_session_of(session)
    return gcengine.recorded_cost(engine, project_prices(session.project))
