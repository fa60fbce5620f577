"""The sessions list and the session page, with the forms that start runs and replays."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

import gcengine
from jaato_web.dashboard import presenters, selectors, services
from jaato_web.dashboard.models import AgentSession, Project
from jaato_web.http import (
    PageRequest,
    htmx_target,
    query_id,
    redirect_after_post,
)
from jaato_web.pages import forms
from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action

SORT_LABELS = {
    "newest": "Newest first",
    "oldest": "Oldest first",
    "tokens": "Most tokens",
    "utilization": "Highest utilization",
    "turns": "Most turns",
    "name": "Name",
}
SEARCH_MAX_CHARS = 200


@require_GET
@requires(Action.VIEW)
def home(request: PageRequest) -> HttpResponse:
    """The sessions list is the dashboard's front page."""
    return redirect("session_list")


@require_GET
@vary_on_headers("HX-Request")
@requires(Action.VIEW)
def session_list(request: PageRequest) -> HttpResponse:
    project = request.access.project(query_id(request.GET.get("project")), request)
    search = request.GET.get("q", "").strip()[:SEARCH_MAX_CHARS]
    sort = request.GET.get("sort", "newest")
    if sort not in SORT_LABELS:
        sort = "newest"
    sessions = selectors.session_list(project=project, search=search, sort=sort)
    page = selectors.page_of(sessions, request.GET.get("page"), selectors.SESSIONS_PER_PAGE)
    context = {
        "page": page,
        "pager": presenters.pager(page, "page"),
        "search": search,
        "sort": sort,
        "sorts": SORT_LABELS,
        "project": project,
    }
    template = "sessions/list.html#session-table" if request.htmx else "sessions/list.html"
    return render(request, template, context)


@require_GET
@vary_on_headers("HX-Request", "HX-Target")
@requires(Action.VIEW)
def session_detail(request: PageRequest, session_id: int) -> HttpResponse:
    session = request.access.session(session_id)
    project = session.project
    target = htmx_target(request)
    if target == "history":
        context = {"session": session, **_history(project, session, request.GET)}
        return render(request, "sessions/detail.html#history", context)
    if target == "runs":
        context = {"session": session, **_runs(session, request.GET)}
        return render(request, "sessions/detail.html#runs", context)
    return _session_page(request, project, session)


@require_POST
@requires(Action.RUN)
def run_create(request: PageRequest, session_id: int) -> HttpResponse:
    """Queue a GC run from the session page, then go to the run's page."""
    session = request.access.session(session_id)
    project = session.project
    versions = selectors.policy_latest_versions(project=project)
    form = forms.RunForm(request.POST, versions=versions, plugins=services.plugin_names())
    if form.is_valid():
        try:
            run = services.run_start(session=session, actor=request.user, **form.run_arguments())
        except gcengine.ConfigError as error:
            form.add_error("gc_json" if form.cleaned_data["gc_json"].strip() else None, str(error))
        except gcengine.GCEngineError as error:  # the plugin cannot be loaded
            form.add_error("plugin", str(error))
        else:
            return redirect_after_post(request, reverse("run_detail", args=[run.pk]))
    if request.htmx:
        context = {"session": session, "run_form": form}
        return render(request, "sessions/detail.html#run-form", context, status=400)
    return _session_page(request, project, session, run_form=form, status=400)


@require_POST
@requires(Action.RUN)
def replay_create(request: PageRequest, session_id: int) -> HttpResponse:
    """Replay the session under a stored policy (or show the replay already made)."""
    session = request.access.session(session_id)
    project = session.project
    form = forms.ReplayForm(
        request.POST, versions=selectors.policy_latest_versions(project=project)
    )
    if form.is_valid():
        try:
            requested = services.replay_request(
                session=session, config=form.chosen_version().config, actor=request.user
            )
        except gcengine.ConfigError as error:
            form.add_error("policy_version", str(error))
        else:
            if not request.htmx:
                url = reverse("session_detail", args=[session.pk])
                return redirect(f"{url}?replay={requested.pk}#replay")
            # Read again: with a synchronous task backend it has already finished.
            replay = selectors.replay_shown(session=session, replay_id=requested.pk)
            context = {"session": session, "replay": replay, "replay_form": form}
            return render(request, "sessions/detail.html#replay", context)
    if request.htmx:
        context = {"session": session, "replay_form": form}
        return render(request, "sessions/detail.html#replay", context, status=400)
    return _session_page(request, project, session, replay_form=form, status=400)


def _session_page(
    request: PageRequest,
    project: Project,
    session: AgentSession,
    *,
    run_form: forms.RunForm | None = None,
    replay_form: forms.ReplayForm | None = None,
    status: int = 200,
) -> HttpResponse:
    versions = selectors.policy_latest_versions(project=project)
    # Both forms start on the project's default policy, the one uploads run.
    initial = {
        "policy_version": next(
            (str(v.pk) for v in versions if v.policy_id == project.default_policy_id), ""
        )
    }
    nodes, _ = selectors.budget_children_slice(session=session)
    context = {
        "session": session,
        "usage": presenters.usage_bar(
            limit=session.context_limit,
            total=session.total_tokens,
            locked=session.locked_tokens,
            preservable=session.preservable_tokens,
            eligible=session.eligible_tokens,
        ),
        "tree": {
            "rows": presenters.tree_rows(nodes, session.total_tokens),
            "url": reverse("session_tree", args=[session.pk]),
        },
        "legend": presenters.policy_legend(),
        "drift": presenters.drift_view(session.drift, session.token_counter),
        "run_form": run_form
        or forms.RunForm(initial=initial, versions=versions, plugins=services.plugin_names()),
        "replay_form": replay_form or forms.ReplayForm(initial=initial, versions=versions),
        "replay": selectors.replay_shown(session=session, replay_id=request.GET.get("replay")),
        **_history(project, session, request.GET),
        **_runs(session, request.GET),
    }
    return render(request, "sessions/detail.html", context, status=status)


def _history(project: Project, session: AgentSession, query: QueryDict) -> dict[str, Any]:
    page = selectors.session_turn_page(session=session, number=query.get("turns"))
    pin_policy = selectors.pin_policy(project=project)
    pinned_turns, pinned_ids = selectors.policy_pins(policy=pin_policy)
    return {
        "turn_pager": presenters.pager(page, "turns"),
        "turns": presenters.turn_views(page, pinned_turns, pinned_ids),
        "default_policy_pins": bool(pinned_turns or pinned_ids),
        # What the per-turn pin toggle (policies/pin_toggle.html) needs.
        "pin_policy": pin_policy,
        "pinned_turns": pinned_turns,
    }


def _runs(session: AgentSession, query: QueryDict) -> dict[str, Any]:
    page = selectors.page_of(
        selectors.run_list(session=session), query.get("runs"), selectors.RUNS_PER_PAGE
    )
    return {"run_page": page, "run_pager": presenters.pager(page, "runs")}
