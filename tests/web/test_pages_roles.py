"""Pages show each role only the controls it may use: a viewer reads, an editor edits.

The permission walk proves the server refuses a viewer's writes; these tests prove the pages
do not offer them in the first place, and say why instead.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession, GCRun, Policy, Project
from jaato_web.teams.models import Membership
from jaato_web.teams.permissions import Role
from tests.web.conftest import TIGHT_BUDGET, make_member, signed_in_client

ROLE_NOTE = "Your role (viewer) lets you read this project"


@pytest.fixture
def viewer(project: Project) -> Client:
    return signed_in_client(make_member(project, "vic", Role.VIEWER))


@pytest.fixture
def editor(project: Project) -> Client:
    return signed_in_client(make_member(project, "eddie", Role.EDITOR))


@pytest.fixture
def pinning_policy(project: Project, budget_policy: Policy) -> Policy:
    """The project's default policy, so a session's history offers pin toggles."""
    services.project_set_default_policy(project=project, policy=budget_policy)
    return budget_policy


@pytest.fixture
def restorable(budget_policy: Policy) -> Policy:
    """A policy with two versions, so its versions page offers to restore the first."""
    services.policy_save(
        policy=budget_policy, config={**TIGHT_BUDGET, "target_percent": 0.4}, base_number=1
    )
    return budget_policy


def html_of(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def test_session_page_offers_a_viewer_no_run_replay_or_pin(
    viewer: Client,
    editor: Client,
    stored_session: AgentSession,
    pinning_policy: Policy,
    finished_run: GCRun,
) -> None:
    url = reverse("session_detail", args=[stored_session.pk])
    run_url = reverse("run_create", args=[stored_session.pk])
    replay_url = reverse("replay_create", args=[stored_session.pk])
    pin_url = reverse("session_pin", args=[stored_session.pk])

    edits = html_of(editor, url)
    reads = html_of(viewer, url)

    for control in ('id="run-form"', run_url, replay_url, pin_url, "data-pin-toggle"):
        assert control in edits, control
        assert control not in reads, control
    assert ROLE_NOTE in reads
    assert "Your role" not in edits
    # What a viewer may read is all still there.
    assert f'href="{reverse("run_detail", args=[finished_run.pk])}"' in reads


def test_history_fragment_offers_a_viewer_no_pin_toggle(
    viewer: Client, stored_session: AgentSession, pinning_policy: Policy
) -> None:
    response = viewer.get(
        reverse("session_detail", args=[stored_session.pk]),
        headers={"HX-Request": "true", "HX-Target": "history"},
    )

    html = response.content.decode()
    assert 'class="turns"' in html
    assert "data-pin-toggle" not in html


def test_sessions_list_offers_a_viewer_no_upload(
    viewer: Client, editor: Client, stored_session: AgentSession
) -> None:
    upload_url = reverse("session_upload")
    list_url = reverse("session_list")

    assert f'href="{upload_url}"' in html_of(editor, list_url)
    reads = html_of(viewer, list_url)
    assert f'href="{upload_url}"' not in reads  # neither the button nor the header's link
    assert ROLE_NOTE in reads
    assert stored_session.label in reads


def test_upload_link_shows_for_whoever_may_upload_somewhere(
    project: Project, stored_session: AgentSession
) -> None:
    """A viewer here who edits another project keeps the header's upload link, and the
    upload page offers the project they may upload to."""
    user = make_member(project, "vera", Role.VIEWER)
    elsewhere = Project.objects.create(name="Elsewhere", slug="elsewhere")
    Membership.objects.create(project=elsewhere, user=user, role=Role.EDITOR)
    client = signed_in_client(user)

    html = html_of(client, reverse("session_list") + f"?project={project.pk}")
    assert f'href="{reverse("session_upload")}"' in html
    # The project they only read is the current one; the upload page still opens.
    client.post(reverse("project_switch"), {"project": project.pk})
    upload = html_of(client, reverse("session_upload"))
    choices = upload[upload.index('id="id_project"') :].split("</select>")[0]
    assert f'<option value="{elsewhere.pk}" selected>' in choices
    assert f'<option value="{project.pk}"' not in choices


def test_policy_list_offers_a_viewer_no_new_import_default_edit_or_apply(
    viewer: Client, editor: Client, pinning_policy: Policy
) -> None:
    controls = [
        reverse("policy_new"),
        reverse("policy_import"),
        reverse("policy_default", args=[pinning_policy.pk]),
        reverse("policy_edit", args=[pinning_policy.pk]),
        reverse("policy_apply", args=[pinning_policy.pk]),
    ]
    list_url = reverse("policy_list")

    edits = html_of(editor, list_url)
    reads = html_of(viewer, list_url)

    for control in controls:
        assert f'"{control}"' in edits, control
        assert f'"{control}"' not in reads, control
    assert ROLE_NOTE in reads
    # The viewer still sees which policy is the default, and reaches its versions.
    assert "badge--default" in reads
    assert f'"{reverse("policy_versions", args=[pinning_policy.pk])}"' in reads


def test_versions_page_offers_a_viewer_no_restore_or_edit(
    viewer: Client, editor: Client, restorable: Policy
) -> None:
    url = reverse("policy_versions", args=[restorable.pk])
    controls = [
        reverse("policy_restore", args=[restorable.pk, 1]),
        reverse("policy_edit", args=[restorable.pk]),
    ]

    edits = html_of(editor, url)
    reads = html_of(viewer, url)

    for control in controls:
        assert f'"{control}"' in edits, control
        assert f'"{control}"' not in reads, control
    assert ">restore</button>" not in reads
    # Comparing and exporting are reading.
    assert reverse("policy_versions_compare", args=[restorable.pk]) in reads
    assert reverse("policy_export", args=[restorable.pk, 1]) in reads


@pytest.mark.parametrize(
    ("name", "page", "needed"),
    [
        ("session_upload", "Session upload", "editor"),
        ("policy_new", "Policy new", "editor"),
        ("policy_edit", "Policy edit", "editor"),
    ],
)
def test_a_viewer_refused_a_page_is_told_which_page_which_role_and_the_way_back(
    viewer: Client, budget_policy: Policy, name: str, page: str, needed: str
) -> None:
    args = [budget_policy.pk] if name == "policy_edit" else []
    came_from = reverse("session_list")

    response = viewer.get(reverse(name, args=args), headers={"referer": came_from})

    assert response.status_code == 403
    html = response.content.decode()
    assert 'rel="stylesheet"' in html  # the dashboard's page, not a bare "403 Forbidden"
    assert f"<h1>Not allowed: {page}</h1>" in html
    assert f"<code>{response.request['PATH_INFO']}</code>" in html
    assert "Your role in Default project is <strong>viewer</strong>" in html
    assert f"needs the <strong>{needed}</strong> role" in html
    assert f'href="{came_from}"' in html


def test_a_refused_page_never_sends_back_to_another_site(viewer: Client) -> None:
    response = viewer.get(reverse("session_upload"), headers={"referer": "https://evil.example/x"})

    assert response.status_code == 403
    html = response.content.decode()
    assert "evil.example" not in html
    assert f'href="{reverse("session_list")}"' in html


def test_the_api_still_refuses_a_viewer_in_json(
    viewer: Client, stored_session: AgentSession
) -> None:
    response = viewer.post(
        reverse("api:start_run", args=[stored_session.pk]),
        {"config": {"type": "budget"}},
        content_type="application/json",
    )

    assert response.status_code == 403
    assert response["content-type"].startswith("application/json")
    assert "As a viewer of this project you may not" in response.json()["detail"]
