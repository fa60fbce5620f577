"""Fixtures for the dashboard's tests.

Each block below serves one kind of test; keep new fixtures in their own block so the
blocks stay independent of each other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client

from gcengine.synthetic import SessionShape, generate_session_file
from jaato_web import caches
from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, GCRun, Policy, Project
from jaato_web.teams.models import Membership
from jaato_web.teams.permissions import Role
from jaato_web.teams.services import token_create

# --- Background tasks ------------------------------------------------------------------------

IMMEDIATE_TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}


@pytest.fixture(autouse=True)
def _tasks_run_immediately(settings: Any) -> None:
    """Tasks run inside the call that enqueues them, so tests need no worker.

    The dashboard itself defaults to the database backend and a worker; a test
    of that path switches TASKS back with the `settings` fixture.
    """
    settings.TASKS = IMMEDIATE_TASKS


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """On SQLite the test database is a file, as a deployment's is, not Django's shared
    in-memory one: a worker started as a separate process must see it, and threads writing
    at once must meet SQLite's real file locking (shared-cache memory databases lock tables
    and fail at once instead of waiting)."""
    database = django_settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        folder = tmp_path_factory.mktemp("database")
        database.setdefault("TEST", {})["NAME"] = str(folder / "test.sqlite3")


# --- Dashboard data: a project, stored sessions, policies and finished runs ---------------

# Eight short turns, a tool call every third: about 2,000 tokens, 1 % of the 200,000-token
# window of its model, and quick to store.
SMALL_SHAPE = SessionShape(
    turns=8, user_chars=300, model_chars=400, tool_result_chars=1200, tool_every=3, seed=99
)
# Thresholds low enough that GC has work to do in such a small session.
TIGHT_BUDGET = {
    "type": "gc_budget",
    "threshold_percent": 1,
    "target_percent": 0.5,
    "preserve_recent_turns": 1,
}
TIGHT_SUMMARIZE = {
    "type": "gc_summarize",
    "threshold_percent": 1,
    "target_percent": 0.5,
    "preserve_recent_turns": 2,
}


def session_bytes(shape: SessionShape = SMALL_SHAPE) -> bytes:
    """A generated JAATO session file."""
    return json.dumps(generate_session_file(shape)).encode()


@pytest.fixture(autouse=True)
def _caches_start_empty() -> None:
    """Each test starts as a fresh process would. The caches trust that a stored session
    never changes and that an id is never used again; tests roll back (so the next test's
    session may get the same id, from the same file) and some edit stored rows to show a
    figure (a turn count of 1,234,567)."""
    caches.clear_all()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """``admin_client`` makes a superuser per test; the default hasher takes a second."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def project(db: None) -> Project:
    return services.project_default()


# --- Accounts: the tests' default client is an admin of the default project -----------------


def make_member(project: Project, username: str, role: Role) -> User:
    user = User.objects.create_user(username, password=f"{username}-password-1")
    Membership.objects.create(project=project, user=user, role=role)
    return user


def signed_in_client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def member(project: Project) -> User:
    """Ann, admin of the default project: the user every page and API test acts as."""
    return make_member(project, "ann", Role.ADMIN)


@pytest.fixture
def client(member: User) -> Client:
    """pytest-django's client, signed in as ``member``; ``Client()`` is an anonymous one."""
    return signed_in_client(member)


@pytest.fixture
def stored_session(project: Project) -> AgentSession:
    receipt = background.session_upload(
        project=project, filename="small-session.json", data=session_bytes()
    )
    assert receipt.session is not None
    return receipt.session


@pytest.fixture
def budget_policy(project: Project) -> Policy:
    return services.policy_create(project=project, name="Tight budget", config=TIGHT_BUDGET)


@pytest.fixture
def run_finished(
    django_capture_on_commit_callbacks: Any,
) -> Callable[..., GCRun]:
    """Start a run and let its task run (tasks are enqueued when the transaction commits)."""

    def start(session: AgentSession, **arguments: Any) -> GCRun:
        with django_capture_on_commit_callbacks(execute=True):
            run = background.run_start(session=session, **arguments)
        run.refresh_from_db()
        assert run.status == "done", run.error
        return run

    return start


@pytest.fixture
def finished_run(
    stored_session: AgentSession, budget_policy: Policy, run_finished: Callable[..., GCRun]
) -> GCRun:
    """A gc_budget run of the stored session that keeps, removes and partly removes turns."""
    return run_finished(stored_session, policy_version=budget_policy.versions.get())


@pytest.fixture
def summarize_run(stored_session: AgentSession, run_finished: Callable[..., GCRun]) -> GCRun:
    return run_finished(stored_session, config=TIGHT_SUMMARIZE)


# --- Agent tools over MCP: members with API tokens, and a session in someone else's project --


@dataclass(frozen=True)
class Caller:
    """A member and the secret of an API token reaching their project."""

    user: User
    secret: str


def caller(project: Project, username: str, role: Role) -> Caller:
    user = make_member(project, username, role)
    return Caller(user, token_create(user=user, name="agent", projects=[project]).secret)


@pytest.fixture
def editor(project: Project) -> Caller:
    return caller(project, "edda", Role.EDITOR)


@pytest.fixture
def viewer(project: Project) -> Caller:
    return caller(project, "vic", Role.VIEWER)


@pytest.fixture
def default_policy(project: Project, budget_policy: Policy) -> Policy:
    """The tight budget policy, as the project's default: the one its sessions run under."""
    services.project_set_default_policy(project=project, policy=budget_policy)
    return budget_policy


@pytest.fixture
def foreign_session(project: Project) -> AgentSession:
    """A session of a project the tokens above do not reach."""
    outsider = User.objects.create_user("olga", password="olga-password-1")
    elsewhere = Project.objects.create(name="Elsewhere", slug="elsewhere")
    Membership.objects.create(project=elsewhere, user=outsider, role=Role.ADMIN)
    receipt = background.session_upload(
        project=elsewhere, filename="theirs.json", data=session_bytes(SessionShape(turns=3))
    )
    assert receipt.session is not None
    return receipt.session
