"""The sessions list and the session page, with the forms that start runs and replays."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import get_template
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

import gcengine
from jaato_web.dashboard import background, presenters, selectors, services, storage
from jaato_web.dashboard.models import AgentSession, PolicyVersion, Project
from jaato_web.http import (
    PageRequest,
    htmx_target,
    local_url,
    query_id,
    redirect_after_post,
)
from jaato_web.pages import forms, fragments
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
    search = request.GET.get("q", "").strip()[: selectors.SEARCH_MAX_CHARS]
    sort = request.GET.get("sort", "newest")
    if sort not in SORT_LABELS:
        sort = "newest"
    archived = request.GET.get("archived") == "1"
    sessions = selectors.session_list(project=project, search=search, sort=sort, archived=archived)
    page = selectors.page_of(sessions, request.GET.get("page"), selectors.SESSIONS_PER_PAGE)
    context = {
        "page": page,
        "pager": presenters.pager(page, "page"),
        "search": search,
        "sort": sort,
        "sorts": SORT_LABELS,
        "project": project,
        "archived": archived,
    }
    template = "sessions/list.html#session-table" if request.htmx else "sessions/list.html"
    return render(request, template, context)


@require_GET
@vary_on_headers("HX-Request", "HX-Target")
@requires(Action.VIEW)
def session_detail(request: PageRequest, session_id: int) -> HttpResponse:
    session = request.access.session(session_id)
    project = session.project
    if "turn" in request.GET:
        return _jump_to_turn(request, session)
    target = htmx_target(request)
    if target == "history":
        context = {"session": session, **_history(request, project, session)}
        return render(request, "sessions/detail.html#history", context)
    if target == "runs":
        context = {"session": session, **_runs(session, request.GET)}
        return render(request, "sessions/detail.html#runs", context)
    if target == "model-call-list":
        context = {"session": session, **_calls(session, request.GET)}
        return render(request, "sessions/detail.html#model-calls", context)
    return _session_page(request, project, session)


def _jump_to_turn(request: PageRequest, session: AgentSession) -> HttpResponse:
    """ "Go to turn N" (JAATO's numbering, from 1): the history page that holds it, there."""
    number = query_id(request.GET.get("turn"))
    query = request.GET.copy()
    del query["turn"]
    page = None
    if number:
        page = selectors.turn_page_number(
            session=session, turn_index=presenters.turn_index_of(number)
        )
    url = reverse("session_detail", args=[session.pk])
    if page is None:
        first, last = _turn_numbers(session) or (1, session.turn_count)
        messages.error(
            request,
            f"{session.label} has no turn {request.GET.get('turn')}: "
            f"its turns run from {first:,} to {last:,}.",
        )
        return redirect(f"{url}?{query.urlencode()}#history-heading")
    query["turns"] = str(page)
    return redirect(f"{url}?{query.urlencode()}#turn-{number}")


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
            run = background.run_start(session=session, actor=request.user, **form.run_arguments())
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
            requested = background.replay_request(
                session=session,
                policy_version=form.chosen_version(),
                context_limit=form.chosen_window(),
                compaction_id=form.chosen_compaction(),
                actor=request.user,
            )
        except gcengine.GCEngineError as error:  # a bad gc.json, or no such compaction
            form.add_error("policy_version", str(error))
        else:
            if requested.compaction_id:  # its own page sets it beside the agent's usage
                return redirect_after_post(request, reverse("replay_detail", args=[requested.pk]))
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
    window_form = forms.WindowForm(request.GET if "window" in request.GET else None)
    window = window_form.chosen()
    # Both forms start on the project's default policy, the one uploads run, and carry the
    # window the page is looked at with.
    initial = {
        "policy_version": next(
            (str(v.pk) for v in versions if v.policy_id == project.default_policy_id), ""
        ),
        "window": window,
    }
    replay = selectors.replay_shown(session=session, replay_id=query_id(request.GET.get("replay")))
    # The replay's select starts on the version that drew the chart beside it, when offered.
    replay_initial = initial
    if replay is not None and any(v.pk == replay.policy_version_id for v in versions):
        replay_initial = {**initial, "policy_version": str(replay.policy_version_id)}
    context = {
        "session": session,
        "window_form": window_form,
        "window": window,
        "usage": presenters.usage_bar(
            limit=window or session.context_limit,
            total=session.total_tokens,
            locked=session.locked_tokens,
            preservable=session.preservable_tokens,
            eligible=session.eligible_tokens,
        ),
        "tree": fragments.budget_tree(
            session,
            label="Budget of the session",
            url=reverse("session_tree", args=[session.pk]),
        ),
        "legend": presenters.policy_legend(),
        "drift": presenters.drift_view(session.drift, session.token_counter),
        "run_form": run_form
        or forms.RunForm(initial=initial, versions=versions, plugins=services.plugin_names()),
        "replay_form": replay_form or forms.ReplayForm(initial=replay_initial, versions=versions),
        "replay": replay,
        "no_turns": "" if session.turn_count else presenters.no_turns(session),
        "usage_chart": presenters.usage_chart(session.agent_state, window or session.context_limit),
        "compaction_retention": _compaction_retention(session),
        **_history(request, project, session, versions),
        **_runs(session, request.GET),
        **_calls(session, request.GET),
        "cost_rows": presenters.session_cost_rows(
            session.agent_state.get("cost_groups") or [], services.project_prices(project)
        ),
    }
    return render(request, "sessions/detail.html", context, status=status)


def _compaction_retention(session: AgentSession) -> dict[str, presenters.RetentionView | None]:
    """Each compaction the agent performed, scored as a policy's collection is, by id."""
    gates = services.project_gates(session.project)
    return {
        c["id"]: presenters.retention_view(
            storage.retention_read(c.get("retention")), gates, what="the compaction"
        )
        for c in session.agent_state.get("compactions") or []
    }


def _history(
    request: PageRequest,
    project: Project,
    session: AgentSession,
    versions: list[PolicyVersion] | None = None,
) -> dict[str, Any]:
    """The history's page of turns, with what pins them. ``versions`` are the project's
    policies when the caller has them already (for the "pin in a policy" choice)."""
    page = selectors.session_turn_page(session=session, number=request.GET.get("turns"))
    here = services.session_pins(session=session)
    default_policy = selectors.pin_policy(project=project)
    by_policy = selectors.policy_pins(policy=default_policy)
    # Where the agent compacted, by the turn it compacted before (JAATO's numbering).
    compacted_before = {c["before_turn"]: c for c in session.agent_state.get("compactions") or []}
    can_pin = request.access.allows(session.project_id, Action.PIN)
    path = request.get_full_path()

    def draw() -> SafeString:
        context = {
            "session": session,
            "turns": presenters.turn_views(page, session_pins=here, policy_pins=by_policy),
            "compacted_before": compacted_before,
            "default_policy": default_policy,
            "can": {"pin": can_pin},
            "request": request,
            "csrf_token": fragments.CSRF_PLACEHOLDER,
        }
        return mark_safe(get_template("sessions/detail.html#turn-list").render(context))

    # A stored session's turns never change: the page is drawn again only for other pins, a
    # renamed default policy, another role or another address (its forms come back to it).
    shown = (
        page.number,
        page.paginator.per_page,
        _frozen_pins(here),
        _frozen_pins(by_policy),
        (default_policy.pk, default_policy.name) if default_policy else None,
        can_pin,
        path,
    )
    turn_list = fragments.stored_session_fragment(session, "turns", shown, draw)
    return {
        "turn_numbers": _turn_numbers(session),
        "turn_pager": presenters.pager(page, "turns"),
        "turn_list": fragments.with_csrf_token(turn_list, request),
        "session_pins": presenters.pin_summary(*here),
        "default_policy": default_policy,
        "default_policy_pins": presenters.pin_summary(*by_policy),
        "pin_policy_choices": (
            selectors.policy_latest_versions(project=project) if versions is None else versions
        ),
    }


def _turn_numbers(session: AgentSession) -> tuple[int, int] | None:
    """The numbers of the history's first and last turns, as the history shows them."""
    found = selectors.turn_index_range(session=session)
    return (
        None if found is None else (gcengine.turn_number(found[0]), gcengine.turn_number(found[1]))
    )


def _frozen_pins(pins: presenters.Pins) -> tuple[tuple[int, ...], tuple[str, ...]]:
    turns, ids = pins
    return tuple(sorted(turns)), tuple(sorted(ids))


@require_POST
@vary_on_headers("HX-Request")
@requires(Action.PIN)
def session_pin(request: PageRequest, session_id: int) -> HttpResponse:
    """Pin or unpin one turn of this session only (``turn``), or one message (``message``);
    with htmx the answer is the turn's pin toggle."""
    session = request.access.session(session_id)
    turn_index = query_id(request.POST.get("turn"))
    message_id = request.POST.get("message") or None
    error = ""
    pinned = False
    try:
        pinned = services.session_pin(
            session=session,
            turn_index=turn_index,
            message_id=message_id if turn_index is None else None,
            actor=request.user,
        )
    except services.PinError as problem:
        error = problem.reason
    if not request.htmx:
        if error:
            messages.error(request, error)
        else:
            what = (
                gcengine.turn_label(turn_index)
                if turn_index is not None
                else f"message {message_id}"
            )
            state = "pinned in this session" if pinned else "no longer pinned in this session"
            messages.success(request, f"{what.capitalize()} is {state}.")
        return redirect(_back_to(request, session))
    context = {
        "session": session,
        "turn_index": turn_index,
        "pinned_here": pinned,
        "pin_error": error,
    }
    return render(request, "sessions/detail.html#pin-toggle", context)


@require_POST
@requires(Action.PIN)
def session_pins_to_policy(request: PageRequest, session_id: int) -> HttpResponse:
    """Add this session's pins to a policy, for every session it runs on, as one version."""
    session = request.access.session(session_id)
    policy = request.access.policy(query_id(request.POST.get("policy")) or 0)
    turns, ids = services.session_pins(session=session)
    try:
        version = services.policy_pins_change(
            policy=policy,
            change=services.PinChange(pin_turns=tuple(sorted(turns)), pin_messages=tuple(ids)),
            message=request.POST.get("message", ""),
            session=session,
            actor=request.user,
        )
    except services.PinError as problem:
        messages.error(request, problem.reason)
    else:
        messages.success(
            request,
            f"{policy.name} version {version.number}: {version.message}. "
            "These pins now apply to every session the policy runs on.",
        )
    return redirect(_back_to(request, session))


def _back_to(request: PageRequest, session: AgentSession) -> str:
    """Where a form on the session page returns: the page it came from, on this site."""
    url = request.POST.get("next", "")
    if local_url(request, url):
        return url
    return reverse("session_detail", args=[session.pk])


# A long autonomous session makes hundreds of model calls: its table is paged.
CALLS_PER_PAGE = 100


def _calls(session: AgentSession, query: QueryDict) -> dict[str, Any]:
    """A page of the model calls the file recorded, each with its input split and output, and
    the compactions between them; open when a page of it was asked for."""
    state = session.agent_state
    page = Paginator(state.get("calls") or [], CALLS_PER_PAGE).get_page(query.get("calls"))
    return {
        "call_page": page,
        "call_rows": presenters.call_rows(page.object_list, state.get("compactions") or []),
        "call_pager": presenters.pager(page, "calls"),
        "calls_open": "calls" in query,
    }


def _runs(session: AgentSession, query: QueryDict) -> dict[str, Any]:
    archived = query.get("archived_runs") == "1"
    page = selectors.page_of(
        selectors.run_list(session=session, archived=archived),
        query.get("runs"),
        selectors.RUNS_PER_PAGE,
    )
    return {
        "run_page": page,
        "run_pager": presenters.pager(page, "runs"),
        "archived_runs": archived,
    }
