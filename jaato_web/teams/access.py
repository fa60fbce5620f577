"""Who may do what here: the ``Access`` a request carries, for pages and for the API.

Every page view is wrapped in ``requires(action)`` and every API operation declares
``auth=ApiAccess(action)``. Both put an ``Access`` on the request: the signed-in user (or the
owner of an API token), their role in each project they may reach, and the action the route
performs. Views then look objects up *through* it (``access.session(id)``, ``access.run(id)``,
...), which finds them only among the user's projects (another project's object answers 404,
never its content) and refuses the action when the role lacks it (403). A route that forgot
its check has no ``Access`` to look anything up with, so it cannot read project data at all.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from ninja.security.http import HttpBearer
from ninja.utils import check_csrf

from jaato_web.dashboard import selectors
from jaato_web.dashboard.models import (
    AgentSession,
    GCRun,
    IngestJob,
    Policy,
    PolicyRanking,
    PolicyVersion,
    Project,
    Replay,
)
from jaato_web.teams.models import ApiToken, Membership
from jaato_web.teams.permissions import ACTION_LABELS, PERMISSIONS, Action, Role, role_allows

if TYPE_CHECKING:
    from django.contrib.auth.models import User

P = ParamSpec("P")
R = TypeVar("R", bound=HttpResponse)

CURRENT_PROJECT_KEY = "current_project"
TOKEN_PREFIX = "jgc_"
# A token's last use is written at most this often, so API calls do not each write a row.
TOKEN_TOUCH_INTERVAL = timedelta(minutes=1)


class RoleRefused(PermissionDenied):
    """A member whose role lacks the action: the message says so, and the role, the action
    and the project are kept so the 403 page can say what role is needed and where."""

    def __init__(self, *, role: Role, action: Action, project_id: int) -> None:
        super().__init__(
            f"As a {role.label.lower()} of this project you may not {ACTION_LABELS[action]}."
        )
        self.role = role
        self.action = action
        self.project_id = project_id

    @property
    def needed(self) -> Role:
        return PERMISSIONS[self.action]


class NoProject(Exception):
    """The user belongs to no project that allows the action; pages send them to /projects/."""


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class Access:
    """A user's reach for one request: project id → role, and the action being performed."""

    user: User
    action: Action
    roles: dict[int, str]
    token: ApiToken | None = None
    # The project of the last object looked up, so templates can show what the user may do
    # there (``can``) without every view passing it along.
    project_id: int | None = field(default=None)

    @property
    def project_ids(self) -> list[int]:
        return list(self.roles)

    def role(self, project_id: int) -> str | None:
        return self.roles.get(project_id)

    def allows(self, project_id: int, action: Action | None = None) -> bool:
        return role_allows(self.roles.get(project_id), action or self.action)

    def can(self, project_id: int | None = None) -> dict[str, bool]:
        """Every action's answer in one project, as templates ask it: ``can.run``."""
        chosen = project_id if project_id is not None else self.project_id
        return {
            action.value: chosen is not None and self.allows(chosen, action) for action in Action
        }

    def check(self, project_id: int, action: Action | None = None) -> None:
        """404 outside the user's projects (no hint that the object exists); 403 for a role
        that may read the object but not do this to it."""
        if project_id not in self.roles:
            raise Http404("No such object in your projects.")
        self.project_id = project_id
        wanted = action or self.action
        if not self.allows(project_id, wanted):
            raise RoleRefused(
                role=Role(self.roles[project_id]), action=wanted, project_id=project_id
            )

    # --- Objects, found only among the user's projects -------------------------------------

    def session(self, session_id: int) -> AgentSession:
        session = selectors.session_get(projects=self.project_ids, session_id=session_id)
        self.check(session.project_id)
        return session

    def run(self, run_id: int) -> GCRun:
        run = selectors.run_get(projects=self.project_ids, run_id=run_id)
        self.check(run.session.project_id)
        return run

    def replay(self, replay_id: int) -> Replay:
        replay = selectors.replay_get(projects=self.project_ids, replay_id=replay_id)
        self.check(replay.session.project_id)
        return replay

    def ranking(self, ranking_id: int) -> PolicyRanking:
        ranking = selectors.ranking_get(projects=self.project_ids, ranking_id=ranking_id)
        self.check(ranking.project_id)
        return ranking

    def ingest_job(self, job_id: int) -> IngestJob:
        job = selectors.ingest_job_get(projects=self.project_ids, job_id=job_id)
        self.check(job.project_id)
        return job

    def policy(self, policy_id: int, kind: str | None = None) -> Policy:
        """A policy; with ``kind`` ("gc", "planner") only one of that kind, else 404."""
        policy = selectors.policy_get(projects=self.project_ids, policy_id=policy_id, kind=kind)
        self.check(policy.project_id)
        return policy

    def policy_version(self, version_id: int, kind: str | None = None) -> PolicyVersion:
        version = selectors.policy_version_get(
            projects=self.project_ids, version_id=version_id, kind=kind
        )
        self.check(version.policy.project_id)
        return version

    def project(self, project_id: int | None = None, request: HttpRequest | None = None) -> Project:
        """The project a list or a new object belongs to.

        An explicit id wins; otherwise the page's current project (kept in the browser
        session), else the user's first project where the action is allowed, else the first
        one at all (which then answers 403 for the action with the role's reason).
        """
        if project_id is None and request is not None and hasattr(request, "session"):
            remembered = request.session.get(CURRENT_PROJECT_KEY)
            if isinstance(remembered, int) and remembered in self.roles:
                project_id = remembered
        if project_id is None:
            allowed = sorted(pk for pk in self.roles if self.allows(pk))
            candidates = allowed or sorted(self.roles)
            if not candidates:
                raise NoProject("You are not a member of any project yet.")
            project_id = candidates[0]
        self.check(project_id)
        return Project.objects.get(pk=project_id)


def roles_of(
    user: AbstractBaseUser | AnonymousUser, token: ApiToken | None = None
) -> dict[int, str]:
    """Project id → role for a user, narrowed to a token's projects when one is used."""
    if not user.is_authenticated:
        return {}
    memberships = Membership.objects.filter(user_id=user.pk)
    if token is not None:
        memberships = memberships.filter(project__in=token.projects.all())
    return dict(memberships.values_list("project_id", "role"))


def page_access(request: HttpRequest, action: Action) -> Access:
    """The ``Access`` of a signed-in browser; cached on the request for its context processor."""
    cached: Access | None = getattr(request, "access", None)
    if cached is not None:
        cached.action = action
        return cached
    access = Access(user=request.user, action=action, roles=roles_of(request.user))  # type: ignore[arg-type]
    request.access = access  # type: ignore[attr-defined]
    return access


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def requires(
    action: Action, *, writes: Action | None = None
) -> Callable[[Callable[Concatenate[Any, P], R]], Callable[Concatenate[Any, P], R]]:
    """Mark a page view with the action it performs and give it the request's ``Access``.

    Sign-in itself is enforced for every page by ``LoginRequiredMiddleware``; this adds the
    per-project role. ``writes`` is the action of a POST (or any unsafe method) when it is
    not the page's: a page everyone reads whose form only some may submit. Both are stored
    on the view (``required_action``, ``write_action``) so the permission walk in the tests
    can tell a route that checks nothing, and what each method must be refused.
    """
    write_action = writes or action

    def decorate(view: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
        @functools.wraps(view)
        def wrapped(request: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
            page_access(request, action if request.method in SAFE_METHODS else write_action)
            return view(request, *args, **kwargs)

        wrapped.required_action = action  # type: ignore[attr-defined]
        wrapped.write_action = write_action  # type: ignore[attr-defined]
        return wrapped

    return decorate


def signed_in[**P, R: HttpResponse](view: Callable[P, R]) -> Callable[P, R]:
    """Mark a view that any signed-in user may use, whatever their projects (their own
    tokens, the project list). ``LoginRequiredMiddleware`` keeps anonymous visitors out."""
    view.required_action = None  # type: ignore[attr-defined]
    return view


def token_user(raw: str) -> tuple[User, ApiToken] | None:
    """The owner of a live token, or None for an unknown or revoked one."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=token_digest(raw), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > TOKEN_TOUCH_INTERVAL:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user, token


class ApiAccess(HttpBearer):
    """API authentication and authorisation for one action.

    A bearer token (``Authorization: Bearer jgc_...``) reaches the token's projects; without
    one, a signed-in browser session works too, with Django's CSRF check on every unsafe
    method, so a page of another site cannot make the user's browser write through the API.
    """

    def __init__(self, action: Action) -> None:
        super().__init__()
        self.action = action

    def __call__(self, request: HttpRequest) -> Access | None:
        if request.headers.get(self.header):
            return super().__call__(request)
        user = request.user
        if not user.is_authenticated:
            return None
        if request.method not in SAFE_METHODS and check_csrf(request):
            raise PermissionDenied("CSRF check failed: send the X-CSRFToken header.")
        access = Access(user=user, action=self.action, roles=roles_of(user))
        request.access = access  # type: ignore[attr-defined]
        return access

    def authenticate(self, request: HttpRequest, token: str) -> Access | None:
        found = token_user(token)
        if found is None:
            return None
        user, api_token = found
        access = Access(
            user=user, action=self.action, roles=roles_of(user, api_token), token=api_token
        )
        request.access = access  # type: ignore[attr-defined]
        return access
