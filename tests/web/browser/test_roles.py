"""A viewer in the browser: pages offer no edit controls, and edits forged from the same
browser (with its valid CSRF token) are refused with 403 and change nothing."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import (
    AgentSession,
    GCRun,
    Policy,
    PolicyVersion,
    Project,
    Replay,
)
from jaato_web.teams.permissions import Role
from tests.web.browser.conftest import sign_in
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet
from tests.web.conftest import TIGHT_BUDGET, make_member
from tests.web.uploads import session_file

pytestmark = pytest.mark.browser

# A POST from the page's own script, with the CSRF token the page carries for htmx.
FORGED_POST = """async ([url, body, type]) => {
  const token = JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"];
  const answer = await fetch(url, {
    method: "POST",
    headers: {"X-CSRFToken": token, "Content-Type": type},
    body: body,
  });
  return {status: answer.status, text: await answer.text()};
}"""
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def viewer_page(anonymous_page: Page, project: Project, live_server: LiveServer) -> Page:
    return sign_in(anonymous_page, make_member(project, "vic", Role.VIEWER), live_server)


@pytest.fixture
def viewer_log(viewer_page: Page) -> PageLog:
    log = PageLog()
    viewer_page.on("console", log.on_console)
    viewer_page.on("pageerror", log.on_page_error)
    viewer_page.on("response", log.on_response)
    return log


@pytest.fixture
def world(project: Project) -> tuple[AgentSession, Policy]:
    """A session, and a default policy with two versions (so pins and restores are on offer
    to an editor)."""
    receipt = background.session_upload(
        project=project, filename="read-me.json", data=session_file(8)
    )
    assert receipt.session is not None
    policy = services.policy_create(project=project, name="Careful budget", config=TIGHT_BUDGET)
    services.policy_save(
        policy=policy, config={**TIGHT_BUDGET, "target_percent": 0.4}, base_number=1
    )
    services.project_set_default_policy(project=project, policy=policy)
    return receipt.session, policy


def forge(page: Page, url: str, body: str, content_type: str = FORM) -> dict[str, Any]:
    answer: dict[str, Any] = page.evaluate(FORGED_POST, [url, body, content_type])
    return answer


def test_viewer_sees_no_edit_controls_on_session_and_policy_pages(
    viewer_page: Page, viewer_log: PageLog, world: tuple[AgentSession, Policy]
) -> None:
    session, _ = world
    page = viewer_page

    page.goto(f"/sessions/{session.pk}/")
    expect(page.get_by_role("heading", name="History")).to_be_visible()
    expect(page.locator(".turn").first).to_be_visible()
    expect(page.get_by_text("Your role (viewer) lets you read this project")).to_be_visible()
    expect(page.get_by_role("button", name="Run GC")).to_have_count(0)
    expect(page.get_by_role("button", name="Replay")).to_have_count(0)
    expect(page.locator("form[data-pin-toggle]")).to_have_count(0)
    expect(page.get_by_role("button", name="Pin")).to_have_count(0)
    expect(page.get_by_role("link", name="Upload", exact=True)).to_have_count(0)

    page.goto("/policies/")
    expect(page.get_by_role("link", name="Careful budget")).to_be_visible()
    for name in ("New policy", "Import gc.json", "Edit", "Apply"):
        expect(page.get_by_role("link", name=name, exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name="unmark")).to_have_count(0)

    page.get_by_role("link", name="Careful budget").click()
    expect(page.get_by_role("heading", name="Versions")).to_be_visible()
    expect(page.get_by_role("button", name="restore")).to_have_count(0)
    expect(page.get_by_role("link", name="Edit", exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name="Compare A and B")).to_be_visible()
    assert_quiet(viewer_log)


def test_edits_forged_from_a_viewers_browser_are_refused(
    viewer_page: Page, world: tuple[AgentSession, Policy]
) -> None:
    session, policy = world
    page = viewer_page
    version = PolicyVersion.objects.get(policy=policy, number=2)
    versions_before = PolicyVersion.objects.filter(policy=policy).count()
    runs_before = GCRun.objects.count()
    page.goto(f"/sessions/{session.pk}/")

    run_page = forge(page, f"/sessions/{session.pk}/runs/", f"policy_version={version.pk}")
    replay_page = forge(page, f"/sessions/{session.pk}/replays/", f"policy_version={version.pk}")
    pin_page = forge(page, f"/sessions/{session.pk}/pins/", "turn=1")
    run_api = forge(
        page,
        f"/api/sessions/{session.pk}/runs",
        f'{{"policy_version_id": {version.pk}}}',
        "application/json",
    )
    pin_api = forge(
        page, f"/api/policies/{policy.pk}/pins", '{"pin_turn_indices": [1]}', "application/json"
    )

    for answer in (run_page, replay_page, pin_page, run_api, pin_api):
        assert answer["status"] == 403, answer
        # Refused for the role, not for a bad token: the page's CSRF token was good.
        assert "CSRF verification failed" not in answer["text"], answer
        assert "As a viewer of this project you may not" in answer["text"], answer
    assert "As a viewer of this project you may not start GC runs" in run_api["text"]
    assert "As a viewer of this project you may not pin" in pin_api["text"]
    assert GCRun.objects.count() == runs_before
    assert not Replay.objects.filter(session=session).exists()
    assert PolicyVersion.objects.filter(policy=policy).count() == versions_before
