"""The context planner: plan a stored session's next request, or items sent as they are.

Both call the planning the Plan tab calls (``dashboard.previews``), so the API answers the
plan the page shows. Planning stores nothing. A planner config is named by one of its
versions (``planner_config_version_id``) or given as settings; configs themselves are stored,
versioned and reviewed through ``/api/policies`` with ``kind`` "planner".
"""

from __future__ import annotations

import time

from django.http import HttpRequest
from ninja import Router

import gcengine
from jaato_web.api.auth import VIEW, access_of
from jaato_web.api.schemas import InlinePlanIn, PlannerConfigRef, PlanOut, Problem, SessionPlanIn
from jaato_web.dashboard import previews, services
from jaato_web.dashboard.models import PolicyKind
from jaato_web.errors import InputError

router = Router(tags=["planner"])


def _settings(request: HttpRequest, ref: PlannerConfigRef) -> gcengine.PlannerConfig | None:
    if ref.planner_config_version_id is not None and ref.config is not None:
        raise InputError("give planner_config_version_id or config, not both", "config")
    if ref.planner_config_version_id is not None:
        version = access_of(request).policy_version(
            ref.planner_config_version_id, PolicyKind.PLANNER
        )
        return services.planner_config_validated(version.config)
    if ref.config is not None:
        return services.planner_config_validated(ref.config)
    return None


def _answer(
    plan: gcengine.ContextPlan,
    decisions: bool,
    started: float,
    pins: previews.SessionPins | None = None,
) -> dict[str, object]:
    return {
        "status_line": plan.status_line,
        "telemetry": plan.telemetry,
        "plan": plan if decisions else None,
        "pins": list(pins.pins) if pins else [],
        "notes": list(pins.notes) if pins else [],
        "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
    }


@router.post(
    "/sessions/{int:session_id}/plan",
    response={200: PlanOut, 400: Problem, 404: Problem},
    summary="Plan a stored session's next request",
    auth=VIEW,
)
def plan_session(
    request: HttpRequest, session_id: int, payload: SessionPlanIn
) -> dict[str, object]:
    """The session as it stands (its last user message is the one answered), for ``model``
    or typed caps, with its own pins at ``pin_priority`` and ``pin_ttl``. Every item gets a
    decision: ``code`` (``recent``, ``budget/behind_cut``, ...) and ``explanation``. A pin the
    planner cannot take (a tool call or result on its own) is left aside, said in ``notes``.
    Nothing is stored."""
    started = time.perf_counter()
    session = access_of(request).session(session_id)
    # "unlimited" is the only word the schema lets through: a sticky pin.
    ttl = gcengine.TTLState.UNLIMITED if isinstance(payload.pin_ttl, str) else payload.pin_ttl
    planned = previews.plan_session(
        session,
        caps=previews.CapsChoice(
            model=payload.model or None,
            context_length=payload.context_length,
            max_completion_tokens=payload.max_completion_tokens,
            max_prompt_tokens=payload.max_prompt_tokens,
            request_max_tokens=payload.request_max_tokens,
        ),
        config=_settings(request, payload),
        pins=previews.PinChoice(priority=gcengine.Priority(payload.pin_priority), ttl=ttl),
    )
    return _answer(planned.plan, payload.decisions, started, planned.pins)


@router.post(
    "/plan",
    response={200: PlanOut, 400: Problem, 404: Problem},
    summary="Plan items sent as they are",
    auth=VIEW,
)
def plan_inline(request: HttpRequest, payload: InlinePlanIn) -> dict[str, object]:
    """An agent's own next request: its items (``gcengine.PlannerItem``: id, source, role,
    tokens, seq, turn, pins' priority and TTL, tool call ids), the model (its window and output
    limit from the model table) and/or caps, and the planner settings. ``plan_id`` and
    ``request_id`` go into the telemetry record; without ``plan_id`` it is a digest of the
    inputs. Commit the plan on the caller's side once the request completed (TTLs move on per
    committed plan). Nothing is stored."""
    started = time.perf_counter()
    plan = previews.plan_inline(
        payload.items,
        previews.inline_caps(payload.model, payload.caps),
        _settings(request, payload),
        plan_id=payload.plan_id,
        request_id=payload.request_id,
    )
    return _answer(plan, payload.decisions, started)
