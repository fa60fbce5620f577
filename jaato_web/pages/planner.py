"""The Plan tab of a session, its step-through, and the planner configs' own pages.

The tab plans the session's next request with the context planner (``dashboard.previews``):
for the model picked (or caps typed), a planner config and the session's pins. Its form is a
GET, so a plan has an address; htmx swaps the plan (``#plan``), a page of what is sent or
left out (``#included``, ``#excluded``) and the step-through (``#steps``), each a
``{% partialdef %}`` of ``planner/session.html``, and every one is an ordinary link without
JavaScript.

Planner configs are policies of kind "planner": listed and edited here, their versions,
comparisons, restores, reviews, archive and delete are the policies' own pages.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

import gcengine
from jaato_web.dashboard import (
    presenters,
    previews,
    selectors,
    services,
    storage,
)
from jaato_web.dashboard.models import AgentSession, Policy, PolicyKind
from jaato_web.http import PageRequest, htmx_target, query_id
from jaato_web.pages.planner_forms import (
    MODEL_CHOICES,
    PlanForm,
    PlannerConfigForm,
    planner_defaults,
    planner_form_values,
    planner_help,
)
from jaato_web.pages.policies_forms import PolicySaveForm
from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action

UNITS_PER_PAGE = 25
PLAN_PARTS = ("plan", "included", "excluded")


def _form(request: PageRequest, session: AgentSession) -> PlanForm:
    versions = selectors.policy_version_choices(project=session.project, kind=PolicyKind.PLANNER)
    # Always bound: every field is optional, and an empty query plans with the defaults.
    return PlanForm(request.GET, versions=list(versions), session_model=session.model_name)


def _config(request: PageRequest, form: PlanForm) -> gcengine.PlannerConfig | None:
    version_id = form.config_version_id()
    if version_id is None:
        return None
    version = request.access.policy_version(version_id, PolicyKind.PLANNER)
    return services.planner_config_validated(version.config)


def _planned(
    request: PageRequest, session: AgentSession, form: PlanForm
) -> previews.SessionPlan | None:
    """The plan the form asks for; None (with the reason on the form) when it cannot be
    made."""
    if not form.is_valid():
        return None
    try:
        return previews.plan_session(
            session, caps=form.caps(), config=_config(request, form), pins=form.pins()
        )
    except gcengine.PlannerError as error:
        form.add_error(None, str(error))
        return None


def _plan_context(
    request: PageRequest, planned: previews.SessionPlan, form: PlanForm
) -> dict[str, Any]:
    plan = planned.plan
    choice = planned.caps_choice
    session = planned.session
    origin = presenters.caps_origin(
        planned.caps,
        typed_window=choice.context_length is not None,
        typed_output=choice.max_completion_tokens is not None,
        file_window=choice.model is None
        and choice.context_length is None
        and session.context_limit_origin == gcengine.ContextLimitOrigin.FILE,
    )
    names = previews.turn_names(session)
    included = Paginator(presenters.included_units(plan, names), UNITS_PER_PAGE)
    excluded = Paginator(presenters.excluded_units(plan, names), UNITS_PER_PAGE)
    sent_page = included.get_page(request.GET.get("sent"))
    left_page = excluded.get_page(request.GET.get("left"))
    return {
        "planned": planned,
        "plan": plan,
        "budget_rows": presenters.budget_rows(plan, origin, form.config_label()),
        "sections": presenters.section_bars(plan),
        "sent_page": sent_page,
        "sent_pager": presenters.pager(sent_page, "sent"),
        "left_page": left_page,
        "left_pager": presenters.pager(left_page, "left"),
        "included_codes": presenters.code_counts(plan.telemetry.included_by_reason),
        "excluded_codes": presenters.code_counts(plan.telemetry.excluded_by_reason),
    }


def _page(request: PageRequest, session: AgentSession, form: PlanForm) -> dict[str, Any]:
    planned = _planned(request, session, form)
    turns, ids = services.session_pins(session=session)
    return {
        "session": session,
        "form": form,
        "models": MODEL_CHOICES,
        "pins": presenters.pin_summary(turns, ids),
        "per_page": previews.STEPS_PER_PAGE,
        **(_plan_context(request, planned, form) if planned is not None else {}),
    }


@require_GET
@vary_on_headers("HX-Request", "HX-Target")
@requires(Action.VIEW)
def session_plan(request: PageRequest, session_id: int) -> HttpResponse:
    """What the session's next request would send for the model and settings chosen."""
    session = request.access.session(session_id)
    form = _form(request, session)
    context = _page(request, session, form)
    target = htmx_target(request)
    if target in PLAN_PARTS:
        return render(request, f"planner/session.html#{target}", context)
    return render(request, "planner/session.html", context)


def _steps_context(request: PageRequest, session: AgentSession, form: PlanForm) -> dict[str, Any]:
    if not form.is_valid():
        return {
            "per_page": previews.STEPS_PER_PAGE,
            "steps_error": "Fix the choices above to step through the turns.",
        }
    try:
        page = previews.plan_steps(
            session,
            caps=form.caps(),
            config=_config(request, form),
            pins=form.pins(),
            start=form.cleaned_data.get("start"),
            repin=form.cleaned_data["repin"],
        )
    except gcengine.PlannerError as error:
        return {"per_page": previews.STEPS_PER_PAGE, "steps_error": str(error)}
    return {
        "per_page": previews.STEPS_PER_PAGE,
        "steps": page,
        "chart": presenters.step_chart(page.steps, page.prompt_budget),
    }


@require_GET
@vary_on_headers("HX-Request")
@requires(Action.VIEW)
def session_plan_steps(request: PageRequest, session_id: int) -> HttpResponse:
    """A page of user turns, each planned and committed in turn: TTLs counting down, reviews
    asked, expired pins leaving. The Plan tab loads it after the plan."""
    session = request.access.session(session_id)
    form = _form(request, session)
    steps = _steps_context(request, session, form)
    if request.htmx:
        return render(request, "planner/session.html#steps", {"session": session, **steps})
    return render(request, "planner/session.html", {**_page(request, session, form), **steps})


# --- Planner configs -----------------------------------------------------------------------


@require_GET
@requires(Action.VIEW)
def planner_config_list(request: PageRequest) -> HttpResponse:
    project = request.access.project(query_id(request.GET.get("project")), request)
    archived = request.GET.get("archived") == "1"
    versions = selectors.policy_latest_versions(
        project=project, archived=archived, kind=PolicyKind.PLANNER
    )
    rows = [(v, presenters.planner_summary(v.config)) for v in versions]
    return render(
        request,
        "planner/configs.html",
        {"rows": rows, "project": project, "archived": archived},
    )


@require_http_methods(["GET", "POST"])
@requires(Action.EDIT_POLICY)
def planner_config_new(request: PageRequest) -> HttpResponse:
    project = request.access.project(query_id(request.GET.get("project")), request)
    return _editor(request, project.pk, None)


@require_http_methods(["GET", "POST"])
@requires(Action.EDIT_POLICY)
def planner_config_edit(request: PageRequest, config_id: int) -> HttpResponse:
    config = request.access.policy(config_id, PolicyKind.PLANNER)
    return _editor(request, config.project_id, config)


def _editor(request: PageRequest, project_id: int, config: Policy | None) -> HttpResponse:
    latest = selectors.policy_latest_version(policy=config) if config else None
    context: dict[str, Any] = {
        "config": config,
        "latest": latest,
        "shares_help": planner_help("shares"),
    }
    if request.method != "POST":
        form = PlannerConfigForm(
            initial=planner_form_values(latest.config) if latest else planner_defaults()
        )
        save_form = PolicySaveForm(
            new=config is None, initial={"base_version": latest.number if latest else None}
        )
        return render(
            request, "planner/config_edit.html", {**context, "form": form, "save_form": save_form}
        )
    form = PlannerConfigForm(request.POST)
    save_form = PolicySaveForm(request.POST, new=config is None)
    if form.is_valid() and save_form.is_valid():
        data = save_form.cleaned_data
        try:
            if config is None:
                config = services.policy_create(
                    project=request.access.project(project_id),
                    name=data["name"],
                    config=form.config(),
                    message=data["message"],
                    actor=request.user,
                    kind=PolicyKind.PLANNER,
                )
                messages.success(request, f"Created the planner config {config.name}, version 1.")
                return redirect("planner_config_edit", config_id=config.pk)
            version = services.policy_save(
                policy=config,
                config=form.config(),
                base_number=data["base_version"] or 0,
                message=data["message"],
                actor=request.user,
            )
        except services.PolicyNameError as error:
            save_form.add_error("name", error.reason)
        except services.PlannerConfigError as error:
            form.add_setting_error(error.key, error.reason)
        except services.PolicyConflict as conflict:
            context |= _conflict(conflict, form)
            # Saving again is now a deliberate choice made after seeing the difference.
            rebased = request.POST.copy()
            rebased["base_version"] = str(conflict.current.number)
            save_form = PolicySaveForm(rebased, new=False)
            save_form.is_valid()
            context["latest"] = conflict.current
        else:
            messages.success(request, f"Saved {config.name} version {version.number}.")
            return redirect("planner_config_edit", config_id=config.pk)
    context |= {"form": form, "save_form": save_form}
    return render(request, "planner/config_edit.html", context, status=400)


def _conflict(conflict: services.PolicyConflict, form: PlannerConfigForm) -> dict[str, Any]:
    flat = presenters.planner_flat
    return {
        "conflict": conflict,
        "conflict_rows": presenters.conflict_rows(
            flat(conflict.base_config or {}),
            flat(conflict.current.config),
            flat(form.config()),
            presenters.PLANNER_LABELS,
        ),
    }


@require_GET
@requires(Action.VIEW)
def planner_config_export(request: PageRequest, config_id: int, number: int) -> HttpResponse:
    """A version's settings as JSON, as ``gcengine.PlannerConfig`` reads them."""
    config = request.access.policy(config_id, PolicyKind.PLANNER)
    version = selectors.policy_version_by_number(policy=config, number=number)
    response = HttpResponse(
        storage.pretty_json(version.config) + "\n", content_type="application/json; charset=utf-8"
    )
    response["Content-Disposition"] = 'attachment; filename="planner.json"'
    return response
