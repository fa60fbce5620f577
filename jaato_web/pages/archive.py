"""Archiving and deleting sessions, runs and policies.

Archiving hides an item from lists and pickers and keeps everything; deleting removes it and
what belongs to it, after a page that says exactly what will go. Both need the ``delete``
action and are written to the audit log by the services.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession, GCRun, Policy
from jaato_web.http import PageRequest
from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action

Item = AgentSession | GCRun | Policy


def _page_of(item: Item) -> str:
    if isinstance(item, AgentSession):
        return reverse("session_detail", args=[item.pk])
    if isinstance(item, GCRun):
        return reverse("run_detail", args=[item.pk])
    return reverse("policy_versions", args=[item.pk])


def _list_of(item: Item) -> str:
    """Where to go once the item is gone."""
    if isinstance(item, AgentSession):
        return reverse("session_list")
    if isinstance(item, GCRun):
        return reverse("session_detail", args=[item.session_id])
    return reverse("planner_config_list" if item.is_planner else "policy_list")


def _archive(request: PageRequest, item: Item) -> HttpResponse:
    archived = request.POST.get("archived", "1") == "1"
    services.archive_set(item=item, archived=archived, actor=request.user)
    kind, name, _ = services.item_described(item)
    if archived:
        messages.success(
            request,
            f"Archived the {kind} {name}: it no longer shows in lists and pickers. "
            "Nothing of it was removed.",
        )
    else:
        messages.success(request, f"The {kind} {name} is back in the lists.")
    return redirect(_page_of(item))


def _delete(request: PageRequest, item: Item) -> HttpResponse:
    plan = services.deletion_plan(item=item)
    if request.method == "POST":
        gone_to = _list_of(item)
        services.item_delete(item=item, actor=request.user)
        messages.success(request, f"Deleted the {plan.kind} {plan.name}.")
        return redirect(gone_to)
    context = {"plan": plan, "item_url": _page_of(item), "delete_url": request.path}
    return render(request, "archive/confirm_delete.html", context)


@require_POST
@requires(Action.DELETE)
def session_archive(request: PageRequest, session_id: int) -> HttpResponse:
    return _archive(request, request.access.session(session_id))


@require_http_methods(["GET", "POST"])
@requires(Action.DELETE)
def session_delete(request: PageRequest, session_id: int) -> HttpResponse:
    return _delete(request, request.access.session(session_id))


@require_POST
@requires(Action.DELETE)
def run_archive(request: PageRequest, run_id: int) -> HttpResponse:
    return _archive(request, request.access.run(run_id))


@require_http_methods(["GET", "POST"])
@requires(Action.DELETE)
def run_delete(request: PageRequest, run_id: int) -> HttpResponse:
    return _delete(request, request.access.run(run_id))


@require_POST
@requires(Action.DELETE)
def policy_archive(request: PageRequest, policy_id: int) -> HttpResponse:
    return _archive(request, request.access.policy(policy_id))


@require_http_methods(["GET", "POST"])
@requires(Action.DELETE)
def policy_delete(request: PageRequest, policy_id: int) -> HttpResponse:
    return _delete(request, request.access.policy(policy_id))
