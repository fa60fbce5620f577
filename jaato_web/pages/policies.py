"""Pages of the policy editor: list, import, edit with live preview, versions, pins, compare,
apply.

Views only parse input, call a service or selector, and render; the rules are the engine's
(through ``policy_forms``), dry runs are ``previews``, and every write is a service. Fragments
that htmx swaps live in the page templates as ``{% partialdef %}`` blocks, and every one of
them is also reachable without JavaScript through an ordinary form post.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

import gcengine
from jaato_web.dashboard import (
    background,
    presenters,
    previews,
    selectors,
    services,
    storage,
)
from jaato_web.dashboard.models import (
    AgentSession,
    JobStatus,
    Policy,
    PolicyKind,
    PolicyRanking,
    PolicyVersion,
    Project,
)
from jaato_web.http import query_id
from jaato_web.pages import forms
from jaato_web.pages.policies_forms import (
    APPLIES_TO,
    KEY_FIELDS,
    NOOP_PLACEHOLDERS,
    PLACEHOLDERS,
    PolicyForm,
    PolicyImportForm,
    PolicySaveForm,
    add_config_error,
    default_values,
    field_for_key,
    form_values,
)
from jaato_web.review import selectors as review_selectors
from jaato_web.teams.access import Access, requires
from jaato_web.teams.permissions import Action

# A preview shows this many ledger rows and counts the rest.
PREVIEW_LEDGER_ROWS = 30
# Pickers list the newest sessions; older ones are reachable by id (?session=).
SESSION_CHOICES = 200
# Pins make versions too, so a busy policy's history is paged.
VERSIONS_PER_PAGE = 50


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _access(request: HttpRequest) -> Access:
    access: Access = request.access  # type: ignore[attr-defined]
    return access


def _project(request: HttpRequest) -> Project:
    """The project a list or a new policy belongs to (``?project=``, else the current one)."""
    return _access(request).project(query_id(request.GET.get("project")), request)


def _session_choice(request: HttpRequest, project: Project, value: Any) -> AgentSession | None:
    """The session asked for (among the user's), else the project's newest; None when the
    project has none."""
    session_id = query_id(value)
    if session_id is not None:
        return _access(request).session(session_id)
    newest = selectors.session_choices(project=project).first()
    return selectors.session_get(projects=[project.pk], session_id=newest.pk) if newest else None


# --- List and default ----------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyRow:
    policy: Policy
    latest: PolicyVersion
    summary: presenters.PolicySummary
    is_default: bool


@require_GET
@requires(Action.VIEW)
def policy_list(request: HttpRequest) -> HttpResponse:
    project = _project(request)
    archived = request.GET.get("archived") == "1"
    rows = [
        PolicyRow(
            policy=version.policy,
            latest=version,
            summary=presenters.policy_summary(version.config),
            is_default=project.default_policy_id == version.policy_id,
        )
        for version in selectors.policy_latest_versions(project=project, archived=archived)
    ]
    return render(
        request,
        "policies/list.html",
        {
            "rows": rows,
            "project": project,
            "on_upload": project.run_default_policy_on_upload,
            "archived": archived,
        },
    )


@require_POST
@requires(Action.EDIT_POLICY)
def policy_default(request: HttpRequest, policy_id: int) -> HttpResponse:
    """Mark the policy as the project's default (it runs on every upload), or unmark it; the
    service's refusal (a planner config) is said on the list the button was on."""
    policy = _access(request).policy(policy_id)
    project = policy.project
    if request.POST.get("default") == "on":
        try:
            services.project_set_default_policy(project=project, policy=policy, actor=request.user)
        except services.PolicyKindError as refusal:
            messages.error(request, refusal.reason)
        else:
            messages.success(request, f"{policy.name} is now the default: it runs on every upload.")
    elif project.default_policy_id == policy.pk:
        services.project_set_default_policy(project=project, policy=None, actor=request.user)
        messages.success(request, f"{policy.name} is no longer the default; uploads run no GC.")
    return redirect(f"{reverse('policy_list')}?project={project.pk}")


# --- Editor --------------------------------------------------------------------------------


def _editor_context(
    request: HttpRequest,
    project: Project,
    policy: Policy | None,
    form: PolicyForm,
    save_form: PolicySaveForm,
    **extra: Any,
) -> dict[str, Any]:
    sessions = list(selectors.session_choices(project=project)[:SESSION_CHOICES])
    chosen = query_id(request.GET.get("session") or request.POST.get("session"))
    if chosen is None and sessions:
        chosen = sessions[0].pk
    return {
        "policy": policy,
        "form": form,
        "save_form": save_form,
        "sessions": sessions,
        "chosen_session": chosen,
        "applies_to": {k: " ".join(v) for k, v in APPLIES_TO.items()},
        "placeholders": PLACEHOLDERS,
        "noop_placeholders": NOOP_PLACEHOLDERS,
        "is_default": policy is not None and project.default_policy_id == policy.pk,
        "min_window": gcengine.MIN_CONTEXT_LIMIT,
        "chosen_window": forms.WindowForm(request.GET).chosen(),
        **extra,
    }


@require_http_methods(["GET", "POST"])
@requires(Action.EDIT_POLICY)
def policy_new(request: HttpRequest) -> HttpResponse:
    return _editor(request, None)


@require_http_methods(["GET", "POST"])
@requires(Action.EDIT_POLICY)
def policy_edit(request: HttpRequest, policy_id: int) -> HttpResponse:
    return _editor(request, _access(request).policy(policy_id, PolicyKind.GC))


def _editor(request: HttpRequest, policy: Policy | None) -> HttpResponse:
    project = policy.project if policy is not None else _project(request)
    latest = selectors.policy_latest_version(policy=policy) if policy else None
    if request.method != "POST":
        form = PolicyForm(initial=form_values(latest.config) if latest else default_values())
        save_form = PolicySaveForm(
            new=policy is None,
            initial={"base_version": latest.number if latest else None},
        )
        return render(
            request,
            "policies/editor.html",
            _editor_context(request, project, policy, form, save_form, latest=latest),
        )

    form = PolicyForm(request.POST)
    save_form = PolicySaveForm(request.POST, new=policy is None)
    extra: dict[str, Any] = {"latest": latest}
    if form.is_valid() and save_form.is_valid():
        data = save_form.cleaned_data
        try:
            if policy is None:
                policy = services.policy_create(
                    project=project,
                    name=data["name"],
                    config=form.gc_json(),
                    message=data["message"],
                    actor=request.user,
                )
                messages.success(request, f"Created {policy.name}, version 1.")
                return redirect("policy_edit", policy_id=policy.pk)
            version = services.policy_save(
                policy=policy,
                config=form.gc_json(),
                base_number=data["base_version"] or 0,
                message=data["message"],
                actor=request.user,
            )
        except services.PolicyNameError as error:
            save_form.add_error("name", error.reason)
        except gcengine.ConfigError as error:  # the form already asked the engine; a race
            add_config_error(form, error)
        except services.PolicyConflict as conflict:
            extra |= _conflict_context(conflict, form)
            # Saving again is now a deliberate choice made after seeing the difference.
            rebased = request.POST.copy()
            rebased["base_version"] = str(conflict.current.number)
            save_form = PolicySaveForm(rebased, new=False)
            save_form.is_valid()
            extra["latest"] = conflict.current
        else:
            messages.success(request, f"Saved {policy.name} version {version.number}.")
            return redirect("policy_edit", policy_id=policy.pk)
    return render(
        request,
        "policies/editor.html",
        _editor_context(request, project, policy, form, save_form, **extra),
    )


def _conflict_context(conflict: services.PolicyConflict, form: PolicyForm) -> dict[str, Any]:
    return {
        "conflict": conflict,
        "conflict_rows": presenters.conflict_rows(
            conflict.base_config or {},
            conflict.current.config,
            gcengine.dump_gc_config(form.config),
        ),
    }


# --- Live preview ----------------------------------------------------------------------------


@require_POST
@requires(Action.EDIT_POLICY)
def policy_preview(request: HttpRequest) -> HttpResponse:
    """What the form's policy would remove from the chosen session now; stores nothing."""
    project = _project(request)
    form = PolicyForm(request.POST)
    session = _session_choice(request, project, request.POST.get("session"))
    window = _window(request)
    context: dict[str, Any] = {"form": form, "session": session, "window": window}
    if session is not None and form.is_valid():
        context |= _preview_context(request, session, form.config, window)
    return render(request, "policies/editor.html#preview", context)


def _preview_retention(
    preview: previews.Preview, project: Project
) -> presenters.RetentionView | None:
    """What the preview's collection keeps of the anchors it takes out of view."""
    return presenters.retention_view(
        preview.retention, services.project_gates(project), what="this policy"
    )


def _window(request: HttpRequest) -> int | None:
    """The window the preview tries instead of the session's own (``window``), if any."""
    form = forms.WindowForm(request.POST)
    return form.chosen()


def _preview_context(
    request: HttpRequest, session: AgentSession, config: gcengine.GCConfig, window: int | None
) -> dict[str, Any]:
    result = previews.preview(session, config, window)
    series = previews.replay_cached(session, config, window)
    return {
        "preview": result,
        "retention": _preview_retention(result, session.project),
        "ledger": presenters.ledger_rows(result.items, PREVIEW_LEDGER_ROWS),
        "replay_quick": previews.replay_is_quick(session, config),
        **_chart_context(session, series, config, _edited_policy(request, config)),
    }


def _edited_policy(request: HttpRequest, config: gcengine.GCConfig) -> str:
    """How the editor's chart names what drew it: the saved version when the form still holds
    its gc.json, else that version with the unsaved edits, or a policy not saved yet."""
    policy_id = query_id(request.POST.get("policy"))
    if policy_id is None:
        return "the new policy (not saved yet)"
    policy = _access(request).policy(policy_id, PolicyKind.GC)
    latest = selectors.policy_latest_version(policy=policy)
    name = presenters.policy_name(latest)
    saved = gcengine.dump_gc_config(services.config_validated(latest.config))
    return name if saved == gcengine.dump_gc_config(config) else f"{name} with unsaved edits"


def _chart_context(
    session: AgentSession,
    series: dict[str, Any] | None,
    config: gcengine.GCConfig,
    policy: str,
) -> dict[str, Any]:
    """The replay chart of ``config`` on the session, named after ``policy``; a session
    without turns gets the sentence saying so instead."""
    if not session.turn_count:
        return {"chart": None, "replay": None, "no_turns": presenters.no_turns(session)}
    if series is None:
        return {"chart": None, "replay": None}
    config_json = gcengine.dump_gc_config(config)
    return {
        "chart": presenters.replay_chart(
            series,
            width=presenters.COMPACT_CHART_WIDTH,
            height=presenters.COMPACT_CHART_HEIGHT,
        ),
        "chart_label": presenters.chart_title(policy, config_json),
        "replay": presenters.replay_figures(series),
        "story": presenters.replay_story(series, config_json),
    }


@require_POST
@requires(Action.EDIT_POLICY)
def policy_preview_chart(request: HttpRequest) -> HttpResponse:
    """The replay chart for the form's policy; asked for separately because it costs more."""
    project = _project(request)
    form = PolicyForm(request.POST)
    session = _session_choice(request, project, request.POST.get("session"))
    window = _window(request)
    context: dict[str, Any] = {"form": form, "session": session, "window": window}
    if session is not None and form.is_valid():
        series = previews.replay(session, form.config, window) if session.turn_count else None
        policy = _edited_policy(request, form.config)
        context |= _chart_context(session, series, form.config, policy)
    return render(request, "policies/editor.html#preview-chart", context)


@require_GET
@requires(Action.VIEW)
def policy_version_chart(request: HttpRequest) -> HttpResponse:
    """The replay chart of a stored version on a session (the compare page loads two)."""
    project = _project(request)
    session = _session_choice(request, project, request.GET.get("session"))
    version_id = query_id(request.GET.get("version"))
    if session is None or version_id is None:
        return HttpResponseBadRequest("give session and version")
    version = _access(request).policy_version(version_id, PolicyKind.GC)
    config = services.config_validated(version.config)
    window = forms.WindowForm(request.GET).chosen()
    series = previews.replay(session, config, window) if session.turn_count else None
    return render(
        request,
        "policies/compare.html#compare-chart",
        {
            "session": session,
            "version": version,
            **_chart_context(session, series, config, presenters.policy_name(version)),
        },
    )


# --- Import and export -----------------------------------------------------------------------


def _import_context(form: PolicyImportForm, project: Project) -> dict[str, Any]:
    """The import page's context; its examples of both gc.json shapes name the strategy a
    new policy starts from."""
    return {"form": form, "project": project, "example_strategy": gcengine.NEW_POLICY_STRATEGY}


@require_http_methods(["GET", "POST"])
@requires(Action.EDIT_POLICY)
def policy_import(request: HttpRequest) -> HttpResponse:
    project = _project(request)
    if request.method != "POST":
        form = PolicyImportForm()
        return render(request, "policies/import.html", _import_context(form, project))
    form = PolicyImportForm(request.POST, request.FILES)
    status = 400
    if form.is_valid():
        name = form.cleaned_data["name"]
        message = form.cleaned_data["message"] or "imported"
        raw = b""
        try:
            raw = form.raw()
            policy = services.policy_import(
                project=project,
                data=raw,
                filename=form.filename(),
                name=name,
                message=message,
                actor=request.user,
            )
        except services.UploadTooLarge as error:
            form.add_error("file" if form.filename() else "text", error.reason)
            status = error.status
        except gcengine.ConfigError as error:
            # A bad value of a key the editor has a control for is fixed there, next to the
            # control; anything else (not JSON, an unknown key) is shown here, with its key.
            parsed = form.parsed(raw) if _has_control(error) else None
            editor = parsed is not None and _import_into_editor(
                request,
                project,
                parsed,
                name or services.policy_name_from_file(form.filename()),
                message,
                error,
            )
            if editor:
                return editor
            add_config_error(form, error)
        except services.PolicyNameError as error:
            form.add_error("name", error.reason)
        else:
            messages.success(request, f"Imported {policy.name} as version 1.")
            config, jaatos = services.jaato_config_validated(raw)
            if jaatos:
                messages.info(request, _jaatos_rules_note(policy.name, config))
            for warning in config.warnings:
                messages.warning(request, f"{policy.name}: {warning}")
            return redirect("policy_edit", policy_id=policy.pk)
    # Refused: the form again, with why, as the answer to a request that stored nothing.
    return render(request, "policies/import.html", _import_context(form, project), status=status)


def _jaatos_rules_note(name: str, config: gcengine.GCConfig) -> str:
    """Why an imported policy follows JAATO's rules, and where to choose the engine's."""
    return (
        f"{name} follows JAATO's rules: the file names JAATO's own {config.strategy_name} "
        "plugin and sets no rules, so it is read as JAATO runs it. The editor's Rules "
        "control says what that changes, and chooses the engine's rules instead."
    )


# Keys a gc.json may hold; an unknown key in a file has no control, even if a field is named
# like it ("strategy", "summarizer").
GC_JSON_KEYS = frozenset(gcengine.GCConfig.model_fields) | frozenset(KEY_FIELDS)


def _has_control(error: gcengine.ConfigError) -> bool:
    return error.key in GC_JSON_KEYS and field_for_key(PolicyForm(), error.key) is not None


def _import_into_editor(
    request: HttpRequest,
    project: Project,
    parsed: dict[str, Any],
    name: str,
    message: str,
    error: gcengine.ConfigError,
) -> HttpResponse | None:
    """Show the refused file in the editor, each engine message next to its control and the
    refusal on top naming its gc.json key, as the API does; None when the editor's reading of
    the file is valid (the problem is in the file's shape). Nothing was stored: a 400."""
    flat = gcengine.flatten_gc_json(parsed)
    if gcengine.implies_jaatos_rules(flat):  # as the file would be imported once fixed
        flat["rules"] = "jaato"
    form = PolicyForm(form_values(flat))
    if form.is_valid():
        return None
    save_form = PolicySaveForm(initial={"name": name, "message": message}, new=True)
    context = _editor_context(
        request, project, None, form, save_form, imported=str(error), latest=None
    )
    return render(request, "policies/editor.html", context, status=400)


@require_GET
@requires(Action.VIEW)
def policy_export(request: HttpRequest, policy_id: int, number: int) -> HttpResponse:
    """A version as the gc.json that makes JAATO run it as the engine does: the engine's
    plugin for JAATO, with the policy's rules (``gcengine.export_gc_json``)."""
    policy = _access(request).policy(policy_id, PolicyKind.GC)
    version = selectors.policy_version_by_number(policy=policy, number=number)
    document = gcengine.export_gc_json(services.config_validated(version.config))
    response = HttpResponse(
        storage.pretty_json(document) + "\n", content_type="application/json; charset=utf-8"
    )
    response["Content-Disposition"] = 'attachment; filename="gc.json"'
    return response


# --- Versions ------------------------------------------------------------------------------


@require_GET
@requires(Action.VIEW)
def policy_versions(request: HttpRequest, policy_id: int) -> HttpResponse:
    policy = _access(request).policy(policy_id)
    project = policy.project
    # Each version's review status and comment count come with it (subqueries, no queries).
    versions = review_selectors.versions_with_review(selectors.policy_versions(policy=policy))
    page = selectors.page_of(versions, request.GET.get("page"), VERSIONS_PER_PAGE)
    return render(
        request,
        "policies/versions.html",
        {
            "policy": policy,
            "page": page,
            "versions": list(page.object_list),
            "latest": selectors.policy_latest_version(policy=policy),
            "is_default": project.default_policy_id == policy.pk,
        },
    )


@require_GET
@requires(Action.VIEW)
def policy_versions_compare(request: HttpRequest, policy_id: int) -> HttpResponse:
    """Two versions side by side, field by field, differences marked."""
    policy = _access(request).policy(policy_id)
    latest = selectors.policy_latest_version(policy=policy)
    a_number = query_id(request.GET.get("a")) or max(latest.number - 1, 1)
    b_number = query_id(request.GET.get("b")) or latest.number
    a = selectors.policy_version_by_number(policy=policy, number=a_number)
    b = selectors.policy_version_by_number(policy=policy, number=b_number)
    table = presenters.planner_config_table if policy.is_planner else presenters.config_table
    rows = table([a.config, b.config])
    return render(
        request,
        "policies/versions_compare.html",
        {
            "policy": policy,
            "a": a,
            "b": b,
            "rows": rows,
            "changed": sum(1 for r in rows if r.differs),
            "numbers": list(range(latest.number, 0, -1)),
        },
    )


@require_POST
@requires(Action.EDIT_POLICY)
def policy_restore(request: HttpRequest, policy_id: int, number: int) -> HttpResponse:
    policy = _access(request).policy(policy_id)
    selectors.policy_version_by_number(policy=policy, number=number)  # 404 for a wrong number
    try:
        version = services.policy_restore(
            policy=policy,
            number=number,
            base_number=query_id(request.POST.get("base_version")),
            actor=request.user,
        )
    except services.PolicyConflict as conflict:
        messages.error(
            request,
            f"Not restored: {conflict.reason}. Look at version {conflict.current.number} below, "
            "then restore again if you still want to.",
        )
    else:
        messages.success(
            request, f"Restored version {number} as version {version.number} of {policy.name}."
        )
    return redirect("policy_versions", policy_id=policy.pk)


# --- Compare two policies on a session -------------------------------------------------------


@require_GET
@requires(Action.VIEW)
def policy_compare(request: HttpRequest) -> HttpResponse:
    """Two policies side by side on a session, and every policy asked for (A, B and any
    others) ranked over the sessions chosen (the first one is the one compared in detail)."""
    project = _project(request)
    choices = list(selectors.policy_version_choices(project=project))
    sessions = list(selectors.session_choices(project=project)[:SESSION_CHOICES])
    first = next(iter(request.GET.getlist("session")), None)
    session = _session_choice(request, project, first)
    a_id, b_id = query_id(request.GET.get("a")), query_id(request.GET.get("b"))
    if a_id is None or b_id is None:
        default_id = project.default_policy_id
        ordered = sorted(
            selectors.policy_latest_versions(project=project),
            key=lambda v: v.policy_id != default_id,
        )
        a_id = a_id or (ordered[0].pk if ordered else None)
        b_id = b_id or (ordered[1].pk if len(ordered) > 1 else a_id)
    also_ids = [i for i in map(query_id, request.GET.getlist("also")) if i is not None]
    context: dict[str, Any] = {
        "choices": choices,
        "sessions": sessions,
        "session": session,
        "a_id": a_id,
        "b_id": b_id,
        "also_ids": also_ids,
        "rank_orders": services.RANK_ORDERS,
        "by": request.GET.get("by") or "retention",
        "min_window": gcengine.MIN_CONTEXT_LIMIT,
    }
    if session is not None and a_id is not None and b_id is not None:
        a = _access(request).policy_version(a_id, PolicyKind.GC)
        b = _access(request).policy_version(b_id, PolicyKind.GC)
        window = forms.WindowForm(request.GET).chosen()
        # Started first, so a worker ranks while this process compares A and B.
        context |= _ranking(request, project, session, [a, b], window)
        comparison = previews.compare(
            session,
            services.config_validated(a.config),
            services.config_validated(b.config),
            window,
        )
        context |= {
            "a": a,
            "b": b,
            "comparison": comparison,
            "retention_a": _preview_retention(comparison.a, project),
            "retention_b": _preview_retention(comparison.b, project),
            "ledger_a": presenters.ledger_rows(comparison.a.items, PREVIEW_LEDGER_ROWS),
            "ledger_b": presenters.ledger_rows(comparison.b.items, PREVIEW_LEDGER_ROWS),
            "rows": [r for r in presenters.config_table([a.config, b.config]) if r.differs],
            "quick_a": previews.replay_is_quick(session, comparison.a.config),
            "quick_b": previews.replay_is_quick(session, comparison.b.config),
            "window": window,
        }
    return render(request, "policies/compare.html", context)


def _ranking(
    request: HttpRequest,
    project: Project,
    session: AgentSession,
    compared: list[PolicyVersion],
    window: int | None,
) -> dict[str, Any]:
    """Every version asked for (A, B and ``also``), each once, ranked over the sessions asked
    for (``session``, repeated; the first at least): read back when it was ranked before,
    else started in the background (the page then polls ``policy_ranking``)."""
    ids = [i for i in map(query_id, request.GET.getlist("session")) if i is not None]
    chosen = selectors.sessions_by_ids(project=project, ids=ids) or [session]
    if chosen[0].pk != session.pk:
        chosen = [session, *(s for s in chosen if s.pk != session.pk)]
    chosen = chosen[: services.RANK_SESSIONS_MAX]
    versions = {v.pk: v for v in compared}
    for version_id in map(query_id, request.GET.getlist("also")):
        if version_id is not None and version_id not in versions:
            versions[version_id] = _access(request).policy_version(version_id, PolicyKind.GC)
    context: dict[str, Any] = {"chosen_ids": [s.pk for s in chosen]}
    if not any(s.turn_count for s in chosen):
        return context
    by = str(request.GET.get("by") or "retention")
    if by not in services.RANK_ORDERS:
        by = "retention"
    row = background.ranking_request(
        project=project,
        sessions=chosen,
        versions=list(versions.values()),
        by=by,
        context_limit=window,
    )
    return context | _ranking_context(row)


def _ranking_context(row: PolicyRanking) -> dict[str, Any]:
    """What the ranking section shows: its progress while a worker ranks, its error if it
    failed, the ranked table once done."""
    context: dict[str, Any] = {"ranking_job": row}
    ranking = previews.ranking_read(row) if row.status == JobStatus.DONE else None
    if ranking is not None:
        classes, rows = presenters.ranking_rows(ranking)
        context |= {"ranking": ranking, "ranking_classes": classes, "ranking_rows": rows}
    return context


@require_GET
@vary_on_headers("HX-Request")
@requires(Action.VIEW)
def policy_ranking(request: HttpRequest, ranking_id: int) -> HttpResponse:
    """The ranking section of the compare page, which polls it while a worker ranks."""
    row = _access(request).ranking(ranking_id)
    return render(request, "policies/compare.html#ranking-section", _ranking_context(row))


# --- Apply to sessions ---------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@requires(Action.RUN)
def policy_apply(request: HttpRequest, policy_id: int) -> HttpResponse:
    """Run a version of the policy on one session or a selection, one background run each."""
    policy = _access(request).policy(policy_id, PolicyKind.GC)
    project = policy.project
    versions = list(selectors.policy_versions(policy=policy).defer("config"))
    sessions = list(selectors.session_choices(project=project)[:SESSION_CHOICES])
    error = None
    selected = {i for i in map(query_id, request.GET.getlist("session")) if i is not None}
    if request.method == "POST":
        number = query_id(request.POST.get("version")) or versions[0].number
        version = selectors.policy_version_by_number(policy=policy, number=number)
        ids = [i for i in map(query_id, request.POST.getlist("sessions")) if i is not None]
        chosen = selectors.sessions_by_ids(project=project, ids=ids)
        selected = {s.pk for s in chosen}
        if not chosen:
            error = "Choose at least one session."
        else:
            try:
                runs = background.policy_apply(version=version, sessions=chosen, actor=request.user)
            except gcengine.GCEngineError as problem:
                error = str(problem)
            else:
                url = reverse("policy_runs")
                return redirect(f"{url}?ids={','.join(str(r.pk) for r in runs)}")
    return render(
        request,
        "policies/apply.html",
        {
            "policy": policy,
            "versions": versions,
            "sessions": sessions,
            "selected": selected,
            "error": error,
        },
    )


@require_GET
@vary_on_headers("HX-Request")
@requires(Action.VIEW)
def policy_runs(request: HttpRequest) -> HttpResponse:
    """Progress of a bulk apply: polled by htmx until every run is done or failed."""
    ids = [i for i in map(query_id, request.GET.get("ids", "").split(",")) if i is not None]
    runs = selectors.runs_by_ids(projects=_access(request).project_ids, ids=ids)
    finished = sum(1 for r in runs if not r.is_pending)
    context = {
        "runs": runs,
        "finished": finished,
        "pending": finished < len(runs),
        "ids": ",".join(str(r.pk) for r in runs),
    }
    template = "policies/runs.html#apply-progress" if _is_htmx(request) else "policies/runs.html"
    return render(request, template, context)
