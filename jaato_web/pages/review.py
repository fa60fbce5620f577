"""Review pages: comment and verdict posts, a policy version's review page, the queue.

Comment and verdict forms live in the review panel (``review/panel.html#panel``) that the run
page, the removal page and the version review page include. With htmx a post answers with
the panel itself (200, or 400 with the error and the draft kept); without JavaScript it
redirects back to the page, or shows the panel on a page of its own with the error.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from jaato_web.dashboard import presenters as dashboard_presenters
from jaato_web.dashboard import selectors as dashboard_selectors
from jaato_web.dashboard import services as dashboard_services
from jaato_web.dashboard import storage
from jaato_web.dashboard.models import PolicyVersion
from jaato_web.http import PageRequest, htmx_target, query_id
from jaato_web.review import presenters, selectors, services
from jaato_web.review.presenters import FormState
from jaato_web.review.targets import Target
from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action

PANEL = "review/panel.html#panel"
# The htmx target of every pager and form of the panel.
PANEL_ID = "review"


def _version(request: PageRequest, policy_id: int, number: int) -> PolicyVersion:
    policy = request.access.policy(policy_id)
    version = dashboard_selectors.policy_version_by_number(policy=policy, number=number)
    version.policy = policy  # the project is already loaded with it
    return version


def _parent_id(value: str | None) -> int | None:
    """The thread a reply goes to; anything but a positive id matches no comment (0)."""
    if not value:
        return None
    return query_id(value) or 0


def _panel(request: PageRequest, panel: presenters.ReviewPanel, status: int = 200) -> HttpResponse:
    """The panel for htmx; otherwise the panel alone on a page (a refused no-JS post)."""
    template = PANEL if request.htmx else "review/panel_page.html"
    return render(request, template, {"review": panel}, status=status)


def _comment(request: PageRequest, target: Target) -> HttpResponse:
    body = request.POST.get("body", "")
    parent_id = _parent_id(request.POST.get("parent"))
    try:
        comment = services.comment_add(
            target=target, author=request.user, body=body, parent_id=parent_id
        )
    except services.ReviewError as error:
        form = FormState(error=error.reason, text=body, parent=parent_id)
        return _panel(request, presenters.review_panel(target, comment_form=form), status=400)
    page = selectors.thread_page_number(comment=comment)
    if request.htmx:
        return _panel(request, presenters.review_panel(target, page=page))
    suffix = f"?comments={page}" if page > 1 else ""
    return redirect(f"{target.url()}{suffix}#comment-{comment.pk}")


def _verdict(request: PageRequest, target: Target) -> HttpResponse:
    note = request.POST.get("note", "")
    try:
        services.verdict_give(
            target=target,
            reviewer=request.user,
            decision=request.POST.get("decision", ""),
            note=note,
        )
    except services.ReviewError as error:
        form = FormState(error=error.reason, text=note)
        return _panel(request, presenters.review_panel(target, verdict_form=form), status=400)
    if request.htmx:
        return _panel(request, presenters.review_panel(target))
    return redirect(f"{target.url()}#{PANEL_ID}")


# --- Runs and their removal items ------------------------------------------------------------


@require_POST
@requires(Action.COMMENT)
def run_comment(request: PageRequest, run_id: int) -> HttpResponse:
    return _comment(request, Target.of_run(request.access.run(run_id)))


@require_POST
@requires(Action.COMMENT)
def removal_comment(request: PageRequest, run_id: int, seq: int) -> HttpResponse:
    run = request.access.run(run_id)
    removal = dashboard_selectors.run_removal(run=run, seq=seq)
    return _comment(request, Target.of_removal(run, removal))


@require_POST
@requires(Action.REVIEW)
def run_verdict(request: PageRequest, run_id: int) -> HttpResponse:
    return _verdict(request, Target.of_run(request.access.run(run_id)))


# --- Policy versions -------------------------------------------------------------------------


@require_GET
@vary_on_headers("HX-Request", "HX-Target")
@requires(Action.VIEW)
def version_review(request: PageRequest, policy_id: int, number: int) -> HttpResponse:
    """One policy version: what it changed, its status, verdicts and discussion."""
    version = _version(request, policy_id, number)
    panel = presenters.review_panel(Target.of_version(version), page=request.GET.get("comments"))
    if htmx_target(request) == PANEL_ID:
        return render(request, PANEL, {"review": panel})
    latest = dashboard_selectors.policy_latest_version(policy=version.policy)
    return render(
        request,
        "review/version.html",
        {
            "version": version,
            "policy": version.policy,
            "latest": latest,
            "config_json": storage.pretty_json(version.config),
            "review": panel,
        },
    )


@require_POST
@requires(Action.COMMENT)
def version_comment(request: PageRequest, policy_id: int, number: int) -> HttpResponse:
    return _comment(request, Target.of_version(_version(request, policy_id, number)))


@require_POST
@requires(Action.REVIEW)
def version_verdict(request: PageRequest, policy_id: int, number: int) -> HttpResponse:
    return _verdict(request, Target.of_version(_version(request, policy_id, number)))


# --- The queue -------------------------------------------------------------------------------

QUEUE_LISTS = ("pending-runs", "pending-versions", "changed-runs", "changed-versions")


@require_GET
@vary_on_headers("HX-Request", "HX-Target")
@requires(Action.VIEW)
def review_queue(request: PageRequest) -> HttpResponse:
    """What waits for a verdict in the current project (``?project=`` picks another), oldest
    first, and what a reviewer sent back with changes requested."""
    project = request.access.project(query_id(request.GET.get("project")), request)
    # Runs that removed nothing wait in the queue only when asked for (``?empty=1``).
    removed_nothing = request.GET.get("empty") == "1"
    sources: dict[str, Any] = {
        "pending-runs": selectors.queue_pending_runs(
            project=project, removed_nothing=removed_nothing
        ),
        "pending-versions": selectors.queue_pending_versions(project=project),
        "changed-runs": selectors.queue_changes_runs(project=project),
        "changed-versions": selectors.queue_changes_versions(project=project),
    }
    target = htmx_target(request)
    wanted = [target] if target in QUEUE_LISTS else list(QUEUE_LISTS)
    gates = dashboard_services.project_gates(project)
    lists = {}
    for key in wanted:
        page = dashboard_selectors.page_of(
            sources[key], request.GET.get(key), selectors.QUEUE_PER_PAGE
        )
        lists[key] = {
            "key": key,
            "page": page,
            "pager": dashboard_presenters.pager(page, key),
            # Each run's anchor retention against the project's gates, by run id.
            "retention": {
                run.pk: dashboard_presenters.run_retention(run, gates)
                for run in (page if key.endswith("runs") else [])
            },
        }
    if "pending-runs" in lists:
        lists["pending-runs"]["removed_nothing"] = {
            "count": selectors.queue_pending_removed_nothing(project=project),
            "shown": removed_nothing,
        }
    if target in QUEUE_LISTS:
        partial = "runs" if target.endswith("runs") else "versions"
        return render(request, f"review/queue.html#{partial}", {"list": lists[target]})
    return render(
        request,
        "review/queue.html",
        {"project": project, **{key.replace("-", "_"): value for key, value in lists.items()}},
    )
