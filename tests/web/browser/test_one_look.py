"""One dashboard, one look: the message of an action shows on the page it leads to."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from jaato_web.dashboard.models import Policy, Project
from jaato_web.teams import services as teams_services
from jaato_web.teams.permissions import Role
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet
from tests.web.conftest import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


# --- Messages: the page an action redirects to says what happened, once ----------------------


def create_project(page: Page, policy: Policy) -> str:
    page.goto("/projects/")
    page.get_by_label("Project name").fill("Moonshot")
    page.get_by_role("button", name="Create project").click()
    expect(page).to_have_url(re.compile(r"/projects/\d+/members/$"))
    return "Created Moonshot; you are its admin."


def change_a_role(page: Page, policy: Policy) -> str:
    page.goto(f"/projects/{policy.project_id}/members/")
    role = page.get_by_label("Role of fred")
    role.select_option("editor")
    page.locator("form", has=role).get_by_role("button", name="Set role").click()
    expect(page).to_have_url(re.compile(r"/members/$"))
    return "fred is now editor."


def revoke_a_token(page: Page, policy: Policy) -> str:
    page.goto("/accounts/tokens/")
    page.get_by_role("button", name="Revoke").click()
    expect(page).to_have_url(re.compile(r"/accounts/tokens/$"))
    return "Revoked CI; it no longer opens the API."


def make_a_policy_the_default(page: Page, policy: Policy) -> str:
    page.goto("/policies/")
    page.get_by_role("button", name="make default").click()
    expect(page).to_have_url(re.compile(r"/policies/\?project=\d+$"))
    return f"{policy.name} is now the default: it runs on every upload."


def save_a_policy(page: Page, policy: Policy) -> str:
    page.goto(f"/policies/{policy.pk}/edit/")
    page.get_by_label("What changed, and why").fill("lower the target")
    page.get_by_role("button", name="Save as version 2").click()
    expect(page).to_have_url(re.compile(rf"/policies/{policy.pk}/edit/$"))
    return f"Saved {policy.name} version 2."


@pytest.mark.parametrize(
    "action",
    [create_project, change_a_role, revoke_a_token, make_a_policy_the_default, save_a_policy],
)
def test_an_actions_message_shows_on_the_page_it_lands_on_and_only_there(
    page: Page,
    page_log: PageLog,
    project: Project,
    member: User,
    budget_policy: Policy,
    action: Callable[[Page, Policy], str],
) -> None:
    make_member(project, "fred", Role.VIEWER)
    teams_services.token_create(user=member, name="CI", projects=[project])

    message = action(page, budget_policy)

    flash = page.locator(".flash")
    expect(flash).to_have_attribute("aria-live", "polite")
    expect(flash.get_by_role("listitem")).to_have_text([message])
    page.goto("/sessions/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Sessions")
    expect(page.get_by_text(message)).to_have_count(0)
    assert_quiet(page_log)
