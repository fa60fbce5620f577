"""Accounts and access: sign-in and its throttle, project scoping, roles, API tokens, members
and the audit log."""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, AuditAction, AuditEvent, Project
from jaato_web.teams import services as team_services
from jaato_web.teams.models import ApiToken, Membership, SignInAttempt
from jaato_web.teams.permissions import PERMISSIONS, ROLE_ORDER, Action, Role, role_allows
from tests.web.conftest import make_member, signed_in_client
from tests.web.uploads import BUDGET_POLICY, session_file

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parents[2] / "docs" / "teams.md"
SIGN_IN = "/accounts/sign-in/"


def other_project() -> Project:
    return Project.objects.create(name="Other team", slug="other-team")


def stored(project: Project, turns: int = 6, seed: int = 1) -> AgentSession:
    receipt = background.session_upload(
        project=project, filename=f"s{seed}.json", data=session_file(turns, seed=seed)
    )
    assert receipt.session is not None
    return receipt.session


def sign_in(client: Client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post(SIGN_IN, {"username": username, "password": password}, REMOTE_ADDR=address)


# --- The permission table ----------------------------------------------------------------------


def test_roles_are_cumulative_and_the_docs_print_the_code_table():
    for action in Action:
        allowed = [role_allows(role, action) for role in ROLE_ORDER]
        # Once a role may, every stronger role may too.
        assert allowed == sorted(allowed)
        assert allowed[ROLE_ORDER.index(PERMISSIONS[action])]
    rows = {
        match[0]: [cell.strip() == "yes" for cell in match[1].split("|")]
        for match in re.findall(
            r"^\| `(\w+)` \| [^|]+ \|((?: (?:yes|no) \|)+)$", DOCS.read_text(), re.M
        )
    }
    expected = {
        action.value: [role_allows(role, action) for role in ROLE_ORDER] for action in Action
    }
    assert {name: cells[:-1] for name, cells in rows.items()} == expected


# --- Signing in --------------------------------------------------------------------------------


def test_pages_send_anonymous_visitors_to_sign_in_and_back():
    anonymous = Client()

    answer = anonymous.get("/sessions/?q=x")

    assert answer.status_code == 302
    assert answer["Location"].startswith(f"{SIGN_IN}?next=")
    assert anonymous.get(SIGN_IN).status_code == 200


def test_api_answers_401_without_credentials():
    assert Client().get("/api/sessions").status_code == 401
    assert Client().get("/api/health").status_code == 200


def test_sign_in_goes_to_the_page_asked_for(member):
    anonymous = Client()

    answer = anonymous.post(
        SIGN_IN, {"username": "ann", "password": "ann-password-1", "next": "/policies/"}
    )
    evil = Client().post(
        SIGN_IN,
        {"username": "ann", "password": "ann-password-1", "next": "https://evil.example/"},
    )

    assert answer.status_code == 302
    assert answer["Location"] == "/policies/"
    assert evil["Location"] == "/"


def test_failed_sign_ins_are_logged_and_throttled_per_name(member, caplog):
    client = Client()
    with caplog.at_level(logging.WARNING, logger="jaato_web.security"):
        for _ in range(team_services.SIGN_IN_MAX_FAILURES_PER_USER):
            assert sign_in(client, "ann", "wrong").status_code == 400

    blocked = sign_in(client, "ann", "ann-password-1")

    assert blocked.status_code == 429
    assert "Too many failed sign-ins" in blocked.content.decode()
    assert "_auth_user_id" not in client.session
    assert SignInAttempt.objects.filter(username="ann", succeeded=False).count() == 6
    assert "failed sign-in for 'ann' from 10.0.0.1" in caplog.text
    # Another name from another address is not affected.
    make_member(member.memberships.get().project, "bob", Role.VIEWER)
    assert sign_in(Client(), "bob", "bob-password-1", "10.0.0.2").status_code == 302


def test_the_throttle_window_passes_and_a_success_restarts_the_count(member):
    for _ in range(team_services.SIGN_IN_MAX_FAILURES_PER_USER - 1):
        sign_in(Client(), "ann", "wrong")
    assert sign_in(Client(), "ann", "ann-password-1").status_code == 302
    for _ in range(team_services.SIGN_IN_MAX_FAILURES_PER_USER - 1):
        sign_in(Client(), "ann", "wrong")
    assert sign_in(Client(), "ann", "ann-password-1").status_code == 302

    for _ in range(team_services.SIGN_IN_MAX_FAILURES_PER_USER):
        sign_in(Client(), "ann", "wrong")
    SignInAttempt.objects.update(created_at=timezone.now() - timedelta(minutes=16))
    assert sign_in(Client(), "ann", "ann-password-1").status_code == 302


def test_one_address_guessing_many_names_is_throttled(member):
    for n in range(team_services.SIGN_IN_MAX_FAILURES_PER_ADDRESS):
        sign_in(Client(), f"guess{n}", "wrong", address="10.9.9.9")

    assert sign_in(Client(), "ann", "ann-password-1", address="10.9.9.9").status_code == 429
    assert sign_in(Client(), "ann", "ann-password-1", address="10.0.0.7").status_code == 302


# --- Scoping ------------------------------------------------------------------------------------


def test_objects_of_another_project_answer_404_without_their_content(client, project):
    theirs = stored(other_project(), seed=5)
    theirs.label = "their-secret-session.json"
    theirs.save()

    page = client.get(reverse("session_detail", args=[theirs.pk]))
    api = client.get(f"/api/sessions/{theirs.pk}")
    listing = client.get(f"/sessions/?project={theirs.project_id}")

    assert page.status_code == 404
    assert api.status_code == 404
    assert listing.status_code == 404
    for answer in (page, api, listing):
        assert "their-secret-session" not in answer.content.decode()


def test_lists_show_the_current_project_and_the_switcher_changes_it(client, project, member):
    mine = stored(project, seed=1)
    second = other_project()
    Membership.objects.create(project=second, user=member, role=Role.VIEWER)
    theirs = stored(second, seed=2)

    before = client.get("/sessions/").content.decode()
    client.post("/projects/current/", {"project": second.pk, "next": "/sessions/"})
    after = client.get("/sessions/").content.decode()

    assert mine.label in before
    assert theirs.label not in before
    assert theirs.label in after
    assert mine.label not in after


def test_a_viewer_reads_but_may_not_run_and_is_told_why(project, stored_session):
    viewer = signed_in_client(make_member(project, "vic", Role.VIEWER))

    read = viewer.get(reverse("session_detail", args=[stored_session.pk]))
    page_run = viewer.post(reverse("run_create", args=[stored_session.pk]), {"gc_json": "{}"})
    api_run = viewer.post(
        f"/api/sessions/{stored_session.pk}/runs",
        {"config": BUDGET_POLICY},
        content_type="application/json",
    )

    assert read.status_code == 200
    assert page_run.status_code == 403
    assert api_run.status_code == 403
    assert "As a viewer of this project you may not start GC runs" in api_run.json()["detail"]
    assert not stored_session.runs.exists()


# --- API tokens ----------------------------------------------------------------------------------


def test_a_token_is_shown_once_stored_hashed_and_opens_the_api(client, project, member):
    made = client.post("/accounts/tokens/", {"name": "CI", "projects": [project.pk]})
    secret = re.search(r"jgc_[A-Za-z0-9_-]+", made.content.decode())
    assert made.status_code == 201
    assert secret is not None
    token = ApiToken.objects.get()

    listing = client.get("/accounts/tokens/").content.decode()
    bearer = Client(headers={"Authorization": f"Bearer {secret[0]}"})
    answer = bearer.get(f"/api/sessions?project={project.pk}")

    assert secret[0] not in listing
    assert token.prefix in listing
    assert secret[0] not in {token.digest, token.prefix}
    assert answer.status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_a_token_reaches_only_its_projects_and_stops_when_revoked(client, project, member):
    second = other_project()
    Membership.objects.create(project=second, user=member, role=Role.ADMIN)
    theirs = stored(second, seed=3)
    made = team_services.token_create(user=member, name="ci", projects=[project])
    bearer = Client(headers={"Authorization": f"Bearer {made.secret}"})

    assert bearer.get(f"/api/sessions/{theirs.pk}").status_code == 404
    assert [p["id"] for p in bearer.get("/api/projects").json()] == [project.pk]
    # A bearer request needs no CSRF token: there is no cookie a page could ride on.
    upload = bearer.post(
        "/api/sessions", {"file": SimpleUploadedFile("t.json", session_file(4, seed=9))}
    )
    assert upload.status_code == 201

    client.post(f"/accounts/tokens/{made.token.pk}/revoke/")

    assert bearer.get("/api/projects").status_code == 401
    assert (
        Client(headers={"Authorization": "Bearer jgc_made-up"}).get("/api/projects").status_code
        == 401
    )


def test_a_token_follows_its_owners_current_role(project):
    eve = make_member(project, "eve", Role.EDITOR)
    made = team_services.token_create(user=eve, name="t", projects=[project])
    bearer = Client(headers={"Authorization": f"Bearer {made.secret}"})
    session = stored(project, seed=4)

    Membership.objects.filter(user=eve).update(role=Role.VIEWER)
    run = bearer.post(
        f"/api/sessions/{session.pk}/runs",
        {"config": BUDGET_POLICY},
        content_type="application/json",
    )

    assert run.status_code == 403


def test_tokens_only_for_projects_one_belongs_to(project, member):
    with pytest.raises(team_services.MembershipError):
        team_services.token_create(user=member, name="t", projects=[other_project()])


# --- Members ---------------------------------------------------------------------------------


def test_admins_manage_members_and_a_project_keeps_an_admin(client, project, member):
    User.objects.create_user("rita", password="rita-password-1")

    added = client.post(
        f"/projects/{project.pk}/members/", {"username": "rita", "role": Role.REVIEWER}
    )
    rita = Membership.objects.get(user__username="rita")
    promoted = client.post(f"/projects/{project.pk}/members/{rita.pk}/", {"role": Role.ADMIN})
    mine = Membership.objects.get(user=member)
    client.post(f"/projects/{project.pk}/members/{mine.pk}/", {"role": Role.VIEWER})
    client.post(f"/projects/{project.pk}/members/{rita.pk}/", {"remove": "1"})

    assert added.status_code == 302
    assert promoted.status_code == 302
    # Ann stepped down; Rita, the last admin left, could not be removed.
    assert Membership.objects.get(user=member).role == Role.VIEWER
    assert Membership.objects.get(user__username="rita").role == Role.ADMIN
    actions = list(AuditEvent.objects.values_list("action", flat=True).order_by("pk"))
    assert actions == [AuditAction.MEMBER_ADD, AuditAction.MEMBER_ROLE, AuditAction.MEMBER_ROLE]


def test_only_admins_change_members(project):
    editor = signed_in_client(make_member(project, "eve", Role.EDITOR))
    User.objects.create_user("zed")

    page = editor.get(f"/projects/{project.pk}/members/")
    answer = editor.post(f"/projects/{project.pk}/members/", {"username": "zed", "role": "admin"})

    assert page.status_code == 200
    assert "Add a member" not in page.content.decode()
    assert answer.status_code == 403
    assert not Membership.objects.filter(user__username="zed").exists()


def test_anyone_signed_in_starts_a_project_as_its_admin():
    loner = User.objects.create_user("lone", password="lone-password-1")
    client = signed_in_client(loner)

    nowhere = client.get("/sessions/")
    created = client.post("/projects/", {"name": "Solo work"})

    assert nowhere.status_code == 302
    assert nowhere["Location"] == "/projects/"
    project = Project.objects.get(name="Solo work")
    assert created["Location"] == f"/projects/{project.pk}/members/"
    assert Membership.objects.get(user=loner).role == Role.ADMIN
    assert client.get("/sessions/").status_code == 200


# --- Audit log -------------------------------------------------------------------------------


def test_changes_are_audited_with_who_what_and_a_link(
    client, project, member, django_capture_on_commit_callbacks
):
    upload = client.post(
        "/sessions/upload/", {"files": SimpleUploadedFile("a.json", session_file(8, seed=6))}
    )
    session = AgentSession.objects.get(label="a.json")
    policy = services.policy_create(
        project=project, name="Budget", config=BUDGET_POLICY, actor=member
    )
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("run_create", args=[session.pk]),
            {"policy_version": policy.versions.get().pk},
        )
    client.post(reverse("policy_default", args=[policy.pk]), {"default": "on"})
    client.post(reverse("session_pin", args=[session.pk]), {"turn": 1})

    events = list(AuditEvent.objects.order_by("pk"))
    assert upload.status_code == 200
    assert [e.action for e in events] == [
        AuditAction.UPLOAD,
        AuditAction.POLICY_SAVE,
        AuditAction.RUN,
        AuditAction.POLICY_DEFAULT,
        AuditAction.PIN,
    ]
    assert {e.actor_name for e in events} == {"ann"}
    assert events[0].target_url == reverse("session_detail", args=[session.pk])


def test_a_refused_change_leaves_no_event(client, project):
    answer = client.post(
        "/sessions/upload/", {"files": SimpleUploadedFile("bad.json", b"{not json")}
    )

    assert answer.status_code == 400
    assert not AuditEvent.objects.exists()


def test_the_audit_log_filters_and_stays_in_its_project(client, project, member):
    services.policy_create(project=project, name="One", config=BUDGET_POLICY, actor=member)
    bob = make_member(project, "bob", Role.EDITOR)
    services.policy_create(project=project, name="Two", config=BUDGET_POLICY, actor=bob)
    stranger = make_member(other_project(), "sam", Role.ADMIN)
    services.policy_create(
        project=stranger.memberships.get().project,
        name="Their secret",
        config=BUDGET_POLICY,
        actor=stranger,
    )

    page = client.get("/audit/", {"actor": "bob"}).content.decode()
    api = client.get("/api/audit", {"actor": "ann"}).json()
    everything = client.get("/api/audit").json()
    future = client.get("/api/audit", {"since": "2100-01-01"}).json()

    assert "Two version 1" in page
    assert "One version 1" not in page
    assert [e["target"] for e in api["items"]] == ["One version 1"]
    assert "Their secret version 1" not in str(everything)
    assert future["count"] == 0
    theirs = stranger.memberships.get().project_id
    assert client.get("/api/audit", {"project": theirs}).status_code == 404


def test_a_run_uses_only_policies_of_its_sessions_project(client, project, member):
    second = other_project()
    Membership.objects.create(project=second, user=member, role=Role.ADMIN)
    elsewhere = services.policy_create(
        project=second, name="Elsewhere", config=BUDGET_POLICY, actor=member
    )
    session = stored(project, seed=8)

    answer = client.post(
        f"/api/sessions/{session.pk}/runs",
        {"policy_version_id": elsewhere.versions.get().pk},
        content_type="application/json",
    )

    assert answer.status_code == 404
    assert not session.runs.exists()
