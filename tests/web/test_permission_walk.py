"""Every route, every method it accepts, every role: the answer the permission table predicts.

The routes are not listed here: they are read from the URL configuration (pages) and from
the API's operations, so a new route is walked the day it is added. A route that declares no
check, a URL kwarg the walk has no sample object for, or a page view that does not say which
methods it accepts fails the walk by name instead of slipping through.

One world serves the whole walk: project A with a member of every role and one of each
object, project B with its own objects. Every request runs in a savepoint that is rolled
back, so a request that deletes or creates something leaves the next one the same world.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.http import HttpResponseBase
from django.shortcuts import resolve_url
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from ninja.operation import Operation, PathView

from gcengine.synthetic import SessionShape
from jaato_web.dashboard import background, selectors, services
from jaato_web.dashboard.models import (
    AgentSession,
    GCRun,
    IngestJob,
    Policy,
    PolicyKind,
    PolicyRanking,
    PolicyVersion,
    Project,
    Replay,
)
from jaato_web.teams import services as team_services
from jaato_web.teams.access import ApiAccess
from jaato_web.teams.models import Membership
from jaato_web.teams.permissions import ROLE_ORDER, Action, Role, role_allows
from tests.web.conftest import TIGHT_BUDGET, make_member, session_bytes

# Answers that mean "refused" or "broken"; an allowed request must get none of them.
REFUSED_OR_BROKEN = {401, 403, 404, 405, 500}
# A public route may answer 404 (the API's root is only there to be reversed).
PUBLIC_REFUSED_OR_BROKEN = {401, 403, 405, 500}
# API views that are public on purpose: the liveness check and the schema documentation.
PUBLIC_API = {"health", "openapi-json", "openapi-view", "api-root"}
# Unsafe methods that need no more than reading (or only a signed-in user): each changes
# nothing of a project's. Any other POST, PUT, PATCH or DELETE must declare a write action,
# so a write marked "view" by mistake fails here instead of passing the walk.
POSTS_THAT_ONLY_READ = {
    "api:compare": "a dry run of two policies; stores nothing",
    "api:plan_session": "plans a session's next request; stores nothing",
    "api:plan_inline": "plans the items sent; stores nothing",
    "api:rank": "ranks policies over sessions; stores only the ranking, kept to be read back",
    "project_switch": "remembers the current project in the browser session",
    "sign_out": "ends the user's own session",
    "project_list": "starts a new project, of which the user becomes admin",
    "token_list": "makes the user's own token",
    "token_revoke": "revokes the user's own token",
}
# Where another project's object is filtered out of a list instead of answering 404.
FILTERS_SILENTLY = {"policy_runs", "api:apply_status"}
# Every name, label and file of project B carries this; no answer to A's members may.
B_MARKER = "bravo-private"
KWARG = re.compile(r"<(?:\w+:)?(\w+)>")
# Routes whose URL kwarg takes another sample than its name's: (route, kwarg) -> sample.
SAMPLE_OF = {("run_export_source", "run_id"): "transcript_run_id"}
# A real Claude Code transcript (tests/fixtures/formats/README.md says whose).
TRANSCRIPT = Path(__file__).resolve().parents[1] / "fixtures/formats/spotter/short.jsonl"
SAFE = ("GET", "HEAD", "OPTIONS")


# --- The world -------------------------------------------------------------------------------


@dataclass
class Side:
    """One project and one of each of its objects."""

    project: Project
    session: AgentSession
    run: GCRun
    # A run of a Claude Code session: what only a transcript's run offers (its export in the
    # format it came in) has something to answer with.
    transcript_run: GCRun
    replay: Replay
    ranking: PolicyRanking
    job: IngestJob
    policy: Policy
    version: PolicyVersion
    planner_config: Policy
    members: dict[str, User]
    tokens: dict[str, tuple[int, str]] = field(default_factory=dict)
    turn_index: int = 0
    seq: int = 0

    def ids(self, user: str) -> dict[str, Any]:
        """A sample for every URL kwarg (and the ids bodies and queries name)."""
        outsider = next(iter(m for m in self.members if m != user), user)
        return {
            "project_id": self.project.pk,
            "session_id": self.session.pk,
            "run_id": self.run.pk,
            "transcript_run_id": self.transcript_run.pk,
            "seq": self.seq,
            "replay_id": self.replay.pk,
            "ranking_id": self.ranking.pk,
            "job_id": self.job.pk,
            "policy_id": self.policy.pk,
            "number": self.version.number,
            "version_id": self.version.pk,
            "config_id": self.planner_config.pk,
            "config_version_id": self.planner_config.versions.get().pk,
            # Another member's membership, so a removal is not of the one asking.
            "membership_id": Membership.objects.get(
                project=self.project, user=self.members[outsider]
            ).pk,
            "token_id": self.tokens[user][0] if user in self.tokens else 0,
            "turn_index": self.turn_index,
        }


def _side(
    project: Project,
    prefix: str,
    roles: dict[str, Role],
    run_finished: Callable[..., GCRun],
    capture: Any,
) -> Side:
    members = {name: make_member(project, f"{prefix}-{name}", role) for name, role in roles.items()}
    shape = SessionShape(
        turns=8, user_chars=300, model_chars=400, tool_result_chars=1200, tool_every=3, seed=7
    )
    receipt = background.session_upload(
        project=project, filename=f"{prefix}-session.json", data=session_bytes(shape)
    )
    assert receipt.session is not None
    session = receipt.session
    policy = services.policy_create(project=project, name=f"{prefix} policy", config=TIGHT_BUDGET)
    first = policy.versions.get()
    services.policy_save(
        policy=policy, config={**TIGHT_BUDGET, "target_percent": 0.4}, base_number=1
    )
    planner_config = services.policy_create(
        project=project, name=f"{prefix} planner", config={}, kind=PolicyKind.PLANNER
    )
    run = run_finished(session, policy_version=first)
    transcript = background.session_upload(
        project=project, filename=f"{prefix}-transcript.jsonl", data=TRANSCRIPT.read_bytes()
    ).session
    assert transcript is not None
    transcript_run = run_finished(transcript, policy_version=first)
    with capture(execute=True):
        replay = background.replay_request(session=session, config=TIGHT_BUDGET)
    with capture(execute=True):
        ranking = background.ranking_request(project=project, sessions=[session], versions=[first])
    job = IngestJob.objects.create(
        project=project,
        filename=f"{prefix}-big.json",
        sha256=f"{prefix}".ljust(64, "0")[:64],
        size_bytes=10,
    )
    side = Side(
        project=project,
        session=session,
        run=run,
        transcript_run=transcript_run,
        replay=replay,
        ranking=ranking,
        job=job,
        policy=policy,
        version=first,
        planner_config=planner_config,
        members=members,
        seq=selectors.run_removals(run=run).first().seq,  # type: ignore[union-attr]
        turn_index=selectors.session_turns(session=session).first().turn_index or 0,  # type: ignore[union-attr]
    )
    for name, user in members.items():
        made = team_services.token_create(user=user, name=f"{name} token", projects=[project])
        side.tokens[name] = (made.token.pk, made.secret)
    return side


@dataclass
class World:
    a: Side
    b: Side


@pytest.fixture
def world(
    db: None, run_finished: Callable[..., GCRun], django_capture_on_commit_callbacks: Any
) -> World:
    a = services.project_default()
    a.name = "Alpha project"
    a.save()
    b = Project.objects.create(name=f"{B_MARKER} project", slug="bravo")
    roles = {role.value: role for role in ROLE_ORDER}
    return World(
        a=_side(a, "alpha", roles, run_finished, django_capture_on_commit_callbacks),
        b=_side(
            b, B_MARKER, {"admin": Role.ADMIN}, run_finished, django_capture_on_commit_callbacks
        ),
    )


# --- The routes --------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One method of one URL, with the check it declares."""

    name: str  # "namespace:name"
    route: str
    method: str
    kind: str  # "page", "public page", "api", "public api"
    action: Action | None  # None: any signed-in user
    kwargs: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.method} /{self.route} ({self.name})"


def _patterns(
    patterns: list[URLPattern | URLResolver], prefix: str = "", namespace: str = ""
) -> Iterator[tuple[str, str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            if entry.app_name == "admin":
                continue  # Django's admin has its own staff check; see the admin test.
            inner = entry.namespace or namespace
            yield from _patterns(entry.url_patterns, prefix + str(entry.pattern), inner)
        else:
            yield prefix + str(entry.pattern), namespace, entry


def _declared_methods(view: Callable[..., Any]) -> list[str] | None:
    """The methods ``require_GET``/``require_POST``/``require_http_methods`` let through."""
    current: Any = view
    while current is not None:
        for cell in getattr(current, "__closure__", None) or ():
            contents = cell.cell_contents
            if (
                isinstance(contents, list)
                and contents
                and all(isinstance(m, str) and m.isupper() for m in contents)
            ):
                return contents
        current = getattr(current, "__wrapped__", None)
    return None


def _path_view(view: Callable[..., Any]) -> PathView | None:
    for cell in getattr(view, "__closure__", None) or ():
        if isinstance(cell.cell_contents, PathView):
            return cell.cell_contents
    return None


def _operation_for(path_view: PathView, url_name: str) -> Operation:
    for operation in path_view.operations:
        if getattr(operation, "url_name", None) == url_name:
            return operation
        if operation.view_func.__name__ == url_name:
            return operation
    raise AssertionError(f"no API operation named {url_name}")


def walk_routes() -> tuple[list[Route], list[str]]:
    """Every route and method of the project, and the problems found reading them."""
    routes: list[Route] = []
    problems: list[str] = []
    for route, namespace, pattern in _patterns(get_resolver().url_patterns):
        name = f"{namespace}:{pattern.name}" if namespace else str(pattern.name)
        kwargs = tuple(KWARG.findall(route))
        view = pattern.callback
        if namespace == "api":
            path_view = _path_view(view)
            if path_view is None:
                if pattern.name in PUBLIC_API:
                    routes.append(Route(name, route, "GET", "public api", None, kwargs))
                else:
                    problems.append(f"/{route} ({name}): an API view outside ninja's operations")
                continue
            operation = _operation_for(path_view, str(pattern.name))
            checks = [c for c in operation.auth_callbacks if isinstance(c, ApiAccess)]
            for method in operation.methods:
                if pattern.name in PUBLIC_API:
                    routes.append(Route(name, route, method, "public api", None, kwargs))
                elif len(checks) != 1:
                    problems.append(f"{method} /{route} ({name}): missing check (auth=...)")
                else:
                    routes.append(Route(name, route, method, "api", checks[0].action, kwargs))
            continue
        if route.startswith(settings.STATIC_URL.lstrip("/")):
            continue
        methods = _declared_methods(view)
        if methods is None:
            problems.append(f"/{route} ({name}): declare the methods it accepts (require_GET, ...)")
            continue
        if getattr(view, "login_required", True) is False:
            routes.extend(Route(name, route, m, "public page", None, kwargs) for m in methods)
        elif not hasattr(view, "required_action"):
            problems.append(f"/{route} ({name}): missing check (@requires or @signed_in)")
        else:
            action = view.required_action
            writes = getattr(view, "write_action", action)
            routes.extend(
                Route(name, route, m, "page", action if m in SAFE else writes, kwargs)
                for m in methods
            )
    return routes, problems


# --- What each route is sent -------------------------------------------------------------

Ids = dict[str, Any]
Query = Callable[[Ids], str]

# Query strings for routes that find their objects (or their project) in the query.
QUERIES: dict[str, Query] = {
    "session_list": lambda i: f"project={i['project_id']}",
    "policy_list": lambda i: f"project={i['project_id']}",
    "policy_new": lambda i: f"project={i['project_id']}",
    "policy_import": lambda i: f"project={i['project_id']}",
    "planner_config_list": lambda i: f"project={i['project_id']}",
    "planner_config_new": lambda i: f"project={i['project_id']}",
    "policy_version_chart": lambda i: f"session={i['session_id']}&version={i['version_id']}",
    "policy_compare": lambda i: (
        f"session={i['session_id']}&a={i['version_id']}&b={i['version_id']}"
    ),
    "policy_runs": lambda i: f"ids={i['run_id']}",
    "audit_log": lambda i: f"project={i['project_id']}",
    "api:list_sessions": lambda i: f"project={i['project_id']}",
    "api:upload_session": lambda i: f"project={i['project_id']}",
    "api:upload_sessions": lambda i: f"project={i['project_id']}",
    "api:list_policies": lambda i: f"project={i['project_id']}",
    "api:create_policy": lambda i: f"project={i['project_id']}",
    "api:import_policy": lambda i: f"project={i['project_id']}",
    "api:compare_versions": lambda i: f"a={i['number']}&b={i['number']}",
    "api:apply_status": lambda i: f"ids={i['run_id']}",
    "api:audit_log": lambda i: f"project={i['project_id']}",
    "api:session_references": lambda i: "turn=1",
    "session_references": lambda i: "turn=1",
}

# Form fields for page posts that name objects outside the URL.
FORMS: dict[str, Callable[[Ids], dict[str, Any]]] = {
    "session_pin": lambda i: {"turn": i["turn_index"]},
    "session_pins_to_policy": lambda i: {"policy": i["policy_id"]},
    "policy_preview": lambda i: {"session": i["session_id"]},
    "policy_preview_chart": lambda i: {"session": i["session_id"]},
    "policy_default": lambda i: {"default": "on"},
    "policy_apply": lambda i: {"sessions": i["session_id"]},
    "run_create": lambda i: {"policy_version": i["version_id"]},
    "replay_create": lambda i: {"policy_version": i["version_id"]},
    "session_upload": lambda i: {"project": i["project_id"]},
    "project_switch": lambda i: {"project": i["project_id"]},
    "run_stash": lambda i: {"segments": "turn_1"},
}

# JSON bodies of API operations; a body that validates, so the role check is what answers.
BODIES: dict[str, Callable[[Ids], dict[str, Any]]] = {
    "api:start_run": lambda i: {"policy_version_id": i["version_id"]},
    "api:start_replay": lambda i: {"policy_version_id": i["version_id"]},
    "api:create_policy": lambda i: {"name": "Walked policy", "config": TIGHT_BUDGET},
    "api:save_policy": lambda i: {"config": TIGHT_BUDGET, "base_version": 2},
    "api:restore_version": lambda i: {},
    "api:pin": lambda i: {"pin_turn_indices": [i["turn_index"]], "session_id": i["session_id"]},
    "api:pin_in_session": lambda i: {"turn_index": i["turn_index"]},
    "api:archive_session": lambda i: {},
    "api:archive_run": lambda i: {},
    "api:archive_policy": lambda i: {},
    "api:preview": lambda i: {"session_id": i["session_id"], "policy_version_id": i["version_id"]},
    "api:compare": lambda i: {
        "session_id": i["session_id"],
        "a": {"policy_version_id": i["version_id"]},
        "b": {"policy_version_id": i["version_id"]},
    },
    "api:apply": lambda i: {"session_ids": [i["session_id"]]},
    "api:plan_session": lambda i: {"planner_config_version_id": i["config_version_id"]},
    "api:plan_inline": lambda i: {
        "items": [{"id": "s", "source": "system", "role": "system", "tokens": 1, "seq": 0}],
        "planner_config_version_id": i["config_version_id"],
    },
    "api:add_member": lambda i: {"username": "walk-newcomer", "role": "viewer"},
    "api:set_role": lambda i: {"role": "viewer"},
    "api:add_run_comment": lambda i: {"body": "walked"},
    "api:add_removal_comment": lambda i: {"body": "walked"},
    "api:add_version_comment": lambda i: {"body": "walked"},
    "api:give_run_verdict": lambda i: {"decision": "approve"},
    "api:give_version_verdict": lambda i: {"decision": "approve"},
    "api:restore_segments": lambda i: {"segment_ids": ["turn_1"]},
    "api:set_project_quality": lambda i: {"gates": {"decisions": 0.9}},
    "api:rank": lambda i: {"session_ids": [i["session_id"]], "version_ids": [i["version_id"]]},
}

# Multipart API operations: their file field.
FILES: dict[str, Callable[[], dict[str, Any]]] = {
    "api:upload_session": lambda: {
        "file": SimpleUploadedFile("walked.json", session_bytes(), "application/json")
    },
    "api:upload_sessions": lambda: {
        "files": [SimpleUploadedFile("walked-2.json", session_bytes(), "application/json")]
    },
    "api:import_policy": lambda: {
        "file": SimpleUploadedFile("walked.json", b'{"type": "gc_truncate"}', "application/json"),
        "name": "Walked import",
    },
}


@dataclass
class Caller:
    """Who asks: anonymous (no user), a signed-in browser, or a bearer token."""

    label: str
    client: Client
    role: str | None
    user: str | None = None
    bearer: str | None = None
    cookie: str | None = None


def _caller(label: str, user: User | None, role: str | None, name: str | None) -> Caller:
    client = Client()
    cookie = None
    if user is not None:
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    return Caller(label, client, role, user=name, cookie=cookie)


def send(caller: Caller, route: Route, ids: Ids) -> HttpResponseBase:
    """One request, rolled back afterwards; the caller's sign-in survives a sign-out."""
    url = reverse(
        route.name, kwargs={k: ids[SAMPLE_OF.get((route.name, k), k)] for k in route.kwargs}
    )
    query = QUERIES.get(route.name)
    if query is not None:
        url = f"{url}?{query(ids)}"
    headers = {"Authorization": f"Bearer {caller.bearer}"} if caller.bearer else {}
    client = caller.client
    with transaction.atomic():
        if route.method == "GET":
            response = client.get(url, headers=headers)
        elif route.name in FILES:
            response = client.post(url, FILES[route.name](), headers=headers)
        elif route.name in BODIES:
            body = BODIES[route.name](ids)
            response = client.generic(
                route.method,
                url,
                data=json.dumps(body),
                content_type="application/json",
                headers=headers,
            )
        elif route.kind in ("page", "public page"):
            form = FORMS.get(route.name, lambda i: {})(ids)
            response = client.post(url, form, headers=headers)
        else:
            response = client.generic(route.method, url, headers=headers)
        transaction.set_rollback(True)
    if caller.cookie is not None:
        client.cookies[settings.SESSION_COOKIE_NAME] = caller.cookie
    return response


def _outcome(caller: Caller, route: Route, ids: Ids) -> tuple[HttpResponseBase | None, str]:
    try:
        return send(caller, route, ids), ""
    except Exception as error:  # a 500: the test client raises the view's exception
        return None, f"raised {type(error).__name__}: {error}"


def expected(caller: Caller, route: Route) -> str:
    """'public', 'allowed', 'sign-in' (302 to it), 'unauthorized' (401) or 'forbidden' (403)."""
    if route.kind in ("public page", "public api"):
        return "public"
    if caller.role is None:
        return "sign-in" if route.kind == "page" else "unauthorized"
    if route.action is None or role_allows(caller.role, route.action):
        return "allowed"
    return "forbidden"


def judge(caller: Caller, route: Route, response: HttpResponseBase, want: str) -> str | None:
    status = response.status_code
    if want == "allowed" and status not in REFUSED_OR_BROKEN:
        return None
    if want == "public" and status not in PUBLIC_REFUSED_OR_BROKEN:
        return None
    if want == "sign-in" and status == 302:
        location = response.headers.get("Location", "")
        if location.startswith(resolve_url(settings.LOGIN_URL)):
            return None
    if want == "unauthorized" and status == 401:
        return None
    if want == "forbidden" and status == 403:
        return None
    where = response.headers.get("Location", "")
    return f"{caller.label}: {route} answered {status} {where}, expected {want}".rstrip()


# --- The tests ---------------------------------------------------------------------------


def checked_routes(world: World) -> list[Route]:
    """The walk's routes, failing by name on a route it cannot check."""
    routes, problems = walk_routes()
    samples = world.a.ids("admin")
    for route in routes:
        unknown = [k for k in route.kwargs if k not in samples]
        if unknown:
            problems.append(
                f"{route}: no sample for URL kwarg {', '.join(map(repr, unknown))}; add one to "
                "Side.ids() in tests/web/test_permission_walk.py"
            )
        reads = route.action in (None, Action.VIEW)
        writes = route.kind in ("page", "api") and route.method not in SAFE
        if writes and reads and route.name not in POSTS_THAT_ONLY_READ:
            problems.append(
                f"{route}: an unsafe method that only requires "
                f"{route.action or 'sign-in'}; declare its write action, or list it in "
                "POSTS_THAT_ONLY_READ with why it changes nothing of a project's"
            )
    assert not problems, "\n".join(sorted(set(problems)))
    return routes


def test_every_route_declares_its_check_and_has_samples(world: World) -> None:
    names = {r.name for r in checked_routes(world)}
    assert {"session_detail", "api:start_run", "sign_in", "api:health"} <= names


def test_every_role_gets_what_the_permission_table_says(world: World) -> None:
    routes = checked_routes(world)
    a = world.a
    callers = [_caller("anonymous", None, None, None)]
    for role in ROLE_ORDER:
        callers.append(_caller(role.value, a.members[role.value], role.value, role.value))
    # Bearer tokens reach the same checks; one role that is refused writes, one that is not.
    for role in (Role.VIEWER, Role.EDITOR):
        token = a.tokens[role.value][1]
        callers.append(Caller(f"{role.value} (token)", Client(), role.value, role.value, token))
    callers.append(Caller("anonymous (bad token)", Client(), None, None, bearer="jgc_nothing"))

    failures: list[str] = []
    checked = 0
    for caller in callers:
        for route in routes:
            if caller.bearer and not route.kind.endswith("api"):
                continue
            if route.kind.startswith("public") and caller.label != "anonymous":
                continue  # public routes answer everyone alike; asked once
            ids = a.ids(caller.user or "admin")
            response, error = _outcome(caller, route, ids)
            checked += 1
            if response is None:
                failures.append(f"{caller.label}: {route} {error}")
                continue
            problem = judge(caller, route, response, expected(caller, route))
            if problem:
                failures.append(problem)
    assert checked > 300
    assert not failures, f"{len(failures)} of {checked} answers were wrong:\n" + "\n".join(failures)


def _names_objects(route: Route) -> bool:
    """Whether the request for ``route`` names an object (or a project) by its id."""
    if route.kwargs or route.name in QUERIES:
        return True
    if route.method in SAFE:
        return False
    return route.name in FORMS or route.name in BODIES


def test_another_projects_objects_are_not_found(world: World) -> None:
    """A's admin asks for B's objects on every route: 404, and nothing of B in the answer."""
    routes = checked_routes(world)
    caller = _caller("A's admin", world.a.members["admin"], Role.ADMIN.value, "admin")
    b_ids = world.b.ids("admin")
    a_ids = world.a.ids("admin")
    # A's own parent with B's child: the child must be looked up inside the parent.
    mixed = {**a_ids, "membership_id": b_ids["membership_id"]}
    failures: list[str] = []
    for route in routes:
        if route.kind.startswith("public"):
            continue
        tries = [("B's", b_ids)]
        if "membership_id" in route.kwargs:
            tries.append(("A's project with B's membership", mixed))
        for label, ids in tries:
            response, error = _outcome(caller, route, ids)
            if response is None:
                failures.append(f"{label}: {route} {error}")
                continue
            body = response.content.decode(errors="replace") if hasattr(response, "content") else ""
            if B_MARKER in body.lower():
                failures.append(f"{label}: {route} showed B's content ({response.status_code})")
            if not _names_objects(route) or route.name in FILTERS_SILENTLY:
                if response.status_code >= 500:
                    failures.append(f"{label}: {route} answered {response.status_code}")
                continue
            if response.status_code != 404:
                failures.append(f"{label}: {route} answered {response.status_code}, not 404")
    assert not failures, "\n".join(failures)


def test_django_admin_is_for_staff_only(world: World) -> None:
    urls = [reverse("admin:index")] + [
        reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        for model in admin.site._registry
    ]
    non_staff = _caller("A's admin", world.a.members["admin"], Role.ADMIN.value, "admin")
    for client in (Client(), non_staff.client):
        for url in urls:
            response = client.get(url)
            assert response.status_code == 302, (url, response.status_code)
            assert (
                "login" in response.headers["Location"] or "sign-in" in response.headers["Location"]
            ), url
