"""Sign-in, projects and their members, personal API tokens, and the audit log."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from jaato_web.dashboard import presenters
from jaato_web.dashboard import selectors as dashboard_selectors
from jaato_web.dashboard.models import Project
from jaato_web.http import client_address, local_url, query_id
from jaato_web.pages.forms import (
    AuditFilterForm,
    MemberAddForm,
    MemberRoleForm,
    ProjectForm,
    TokenForm,
)
from jaato_web.teams import selectors, services
from jaato_web.teams.access import CURRENT_PROJECT_KEY, Access, requires, signed_in
from jaato_web.teams.models import ApiToken
from jaato_web.teams.permissions import ROLE_ORDER, Action, Role, permission_table


def _access(request: HttpRequest) -> Access:
    access: Access = request.access  # type: ignore[attr-defined]
    return access


# --- Sign-in ---------------------------------------------------------------------------------


@login_not_required
@sensitive_post_parameters("password")
@csrf_protect
@never_cache
@require_http_methods(["GET", "POST"])
def sign_in(request: HttpRequest) -> HttpResponse:
    """Django's authentication form, throttled: after repeated failures for a name (or from an
    address) further tries are refused with 429 until the window passes."""
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if not local_url(request, next_url):
        next_url = ""
    form = AuthenticationForm(request, data=request.POST or None)
    refused = ""
    status = 200
    if request.method == "POST":
        username = request.POST.get("username", "")
        address = client_address(request)
        if services.sign_in_blocked(username=username, ip_address=address):
            services.sign_in_record(username=username, ip_address=address, succeeded=False)
            form = AuthenticationForm(request, initial={"username": username})
            minutes = int(services.SIGN_IN_WINDOW.total_seconds() // 60)
            refused = f"Too many failed sign-ins. Wait {minutes} minutes and try again."
            status = 429
        elif form.is_valid():
            services.sign_in_record(username=username, ip_address=address, succeeded=True)
            login(request, form.get_user())
            return redirect(next_url or reverse("home"))
        else:
            services.sign_in_record(username=username, ip_address=address, succeeded=False)
            status = 400
    context = {"form": form, "next": next_url, "refused": refused}
    return render(request, "teams/sign_in.html", context, status=status)


@require_POST
@signed_in
def sign_out(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("sign_in")


# --- Projects and members --------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@signed_in
def project_list(request: HttpRequest) -> HttpResponse:
    """The user's projects with their role in each; anyone signed in may start a project."""
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        project = services.project_create(name=form.cleaned_data["name"], creator=request.user)  # type: ignore[arg-type]
        request.session[CURRENT_PROJECT_KEY] = project.pk
        messages.success(request, f"Created {project.name}; you are its admin.")
        return redirect("member_list", project_id=project.pk)
    context = {
        "memberships": selectors.my_memberships(user=request.user),  # type: ignore[arg-type]
        "form": form,
        "table": permission_table(),
        "roles": ROLE_ORDER,
    }
    return render(request, "teams/projects.html", context, status=400 if form.errors else 200)


@require_POST
@requires(Action.VIEW)
def project_switch(request: HttpRequest) -> HttpResponse:
    """Make a project the current one: lists, uploads and new policies go to it."""
    raw = request.POST.get("project", "")
    project = _access(request).project(query_id(raw))
    request.session[CURRENT_PROJECT_KEY] = project.pk
    next_url = request.POST.get("next", "")
    if local_url(request, next_url):
        return redirect(next_url)
    return redirect("session_list")


def _project_for(request: HttpRequest, project_id: int) -> Project:
    access = _access(request)
    access.check(project_id)
    return get_object_or_404(Project, pk=project_id)


@require_http_methods(["GET", "POST"])
@requires(Action.VIEW, writes=Action.MANAGE_MEMBERS)
def member_list(request: HttpRequest, project_id: int) -> HttpResponse:
    """Everyone sees who is in the project; only admins add people or change roles."""
    access = _access(request)
    project = _project_for(request, project_id)
    form = MemberAddForm(request.POST or None)
    if request.method == "POST":
        access.check(project.pk, Action.MANAGE_MEMBERS)
        if form.is_valid():
            try:
                services.member_add(
                    project=project,
                    user=form.cleaned_data["username"],
                    role=Role(form.cleaned_data["role"]),
                    actor=request.user,  # type: ignore[arg-type]
                )
            except services.MembershipError as error:
                form.add_error("username", error.reason)
            else:
                messages.success(request, f"Added {form.cleaned_data['username']}.")
                return redirect("member_list", project_id=project.pk)
    context: dict[str, Any] = {
        "project": project,
        "members": selectors.project_members(project=project),
        "form": form,
        "roles": Role.choices,
        "my_role": access.role(project.pk),
    }
    return render(request, "teams/members.html", context, status=400 if form.errors else 200)


@require_POST
@requires(Action.MANAGE_MEMBERS)
def member_change(request: HttpRequest, project_id: int, membership_id: int) -> HttpResponse:
    """Change a member's role, or remove them (``remove`` in the form)."""
    project = _project_for(request, project_id)
    membership = selectors.membership_get(project=project, membership_id=membership_id)
    try:
        if "remove" in request.POST:
            services.member_remove(membership=membership, actor=request.user)  # type: ignore[arg-type]
            messages.success(request, f"Removed {membership.user.get_username()}.")
        else:
            form = MemberRoleForm(request.POST)
            if not form.is_valid():
                messages.error(request, "Choose one of the roles.")
            else:
                role = Role(form.cleaned_data["role"])
                services.member_set_role(membership=membership, role=role, actor=request.user)  # type: ignore[arg-type]
                messages.success(
                    request, f"{membership.user.get_username()} is now {role.label.lower()}."
                )
    except services.MembershipError as error:
        messages.error(request, error.reason)
    return redirect("member_list", project_id=project.pk)


# --- API tokens ------------------------------------------------------------------------------


@never_cache
@require_http_methods(["GET", "POST"])
@signed_in
def token_list(request: HttpRequest) -> HttpResponse:
    """The user's tokens; a new one's secret is in this response only (never stored)."""
    projects = Project.objects.filter(memberships__user=request.user.pk).order_by("name")
    form = TokenForm(request.POST or None, projects=projects)
    secret = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            made = services.token_create(
                user=request.user,  # type: ignore[arg-type]
                name=form.cleaned_data["name"],
                projects=list(form.cleaned_data["projects"]),
            )
            secret = made.secret
            form = TokenForm(projects=projects)
            status = 201
        else:
            status = 400
    context = {"form": form, "tokens": selectors.my_tokens(user=request.user), "secret": secret}  # type: ignore[arg-type]
    return render(request, "teams/tokens.html", context, status=status)


@require_POST
@signed_in
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    services.token_revoke(token=token, actor=request.user)  # type: ignore[arg-type]
    messages.success(request, f"Revoked {token.name}; it no longer opens the API.")
    return redirect("token_list")


# --- Audit log -------------------------------------------------------------------------------


@require_GET
@requires(Action.VIEW)
def audit_log(request: HttpRequest) -> HttpResponse:
    """Who did what and when in the current project (``?project=`` picks another)."""
    access = _access(request)
    raw = request.GET.get("project", "")
    project = access.project(query_id(raw), request)
    form = AuditFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    events = selectors.audit_events(
        projects=[project.pk],
        action=filters.get("action") or "",
        actor=filters.get("actor") or "",
        since=filters.get("since"),
        until=filters.get("until"),
    )
    page = dashboard_selectors.page_of(events, request.GET.get("page"), selectors.AUDIT_PER_PAGE)
    context = {
        "project": project,
        "form": form,
        "page": page,
        "pager": presenters.pager(page, "page"),
    }
    template = (
        "teams/audit.html#audit-table" if request.headers.get("HX-Request") else "teams/audit.html"
    )
    return render(request, template, context)
