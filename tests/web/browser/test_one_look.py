"""One dashboard, one look: the message of an action shows on the page it leads to, a button
looks the same on every page, dark mode holds on the policy pages, and every page's content
lines up with the header."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Locator, Page, expect

from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession, GCRun, Policy, Project
from jaato_web.teams import services as teams_services
from jaato_web.teams.permissions import Role
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet
from tests.web.conftest import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What makes two buttons look alike, as the browser computed it.
BUTTON_LOOK = [
    "background-color",
    "color",
    "border-top-width",
    "border-top-style",
    "border-top-color",
    "border-top-left-radius",
    "padding-top",
    "padding-right",
    "padding-bottom",
    "padding-left",
    "font-size",
    "font-weight",
    "line-height",
]


def look(element: Locator, properties: list[str]) -> dict[str, str]:
    """The computed values of ``properties`` on the element."""
    return element.evaluate(
        "(element, names) => { const style = getComputedStyle(element);"
        " return Object.fromEntries(names.map(name => [name, style.getPropertyValue(name)])); }",
        properties,
    )


def colour(element: Locator, name: str) -> str:
    return look(element, [name])[name]


def luminance(css_colour: str) -> float:
    """WCAG relative luminance of an ``rgb()``/``rgba()`` colour the browser computed."""
    red, green, blue = (int(part) for part in re.findall(r"\d+", css_colour)[:3])

    def linear(channel: int) -> float:
        value = channel / 255
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def contrast(foreground: str, background: str) -> float:
    lighter, darker = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


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


# --- Buttons: one look per kind, whatever the page --------------------------------------------


@pytest.fixture
def pages_with_buttons(
    finished_run: GCRun, budget_policy: Policy
) -> dict[str, list[tuple[str, str]]]:
    """For each kind of button, where one is: (address, accessible name)."""
    session = finished_run.session
    return {
        "primary": [
            (f"/sessions/{session.pk}/", "Run GC"),
            (f"/runs/{finished_run.pk}/", "Approve"),
            ("/policies/", "New policy"),
            (f"/policies/{budget_policy.pk}/edit/", "Save as version 2"),
        ],
        "quiet": [
            ("/sessions/", "Apply"),
            (f"/runs/{finished_run.pk}/", "Request changes"),
            (f"/policies/{budget_policy.pk}/versions/1/review/", "gc.json"),
        ],
        "default": [
            ("/policies/", "Import gc.json"),
            (f"/policies/{budget_policy.pk}/edit/", "Versions"),
            (f"/policies/{budget_policy.pk}/versions/", "Compare A and B"),
        ],
    }


@pytest.mark.parametrize("kind", ["primary", "quiet", "default"])
def test_a_button_looks_the_same_on_every_page(
    page: Page, page_log: PageLog, pages_with_buttons: dict[str, list[tuple[str, str]]], kind: str
) -> None:
    looks = {}
    for address, name in pages_with_buttons[kind]:
        page.goto(address)
        button = page.locator("main").get_by_role("button", name=name, exact=True)
        if not button.count():
            button = page.locator("main").get_by_role("link", name=name, exact=True)
        looks[f"{name} on {address}"] = look(button, BUTTON_LOOK)

    first = next(iter(looks.values()))
    assert {where: seen for where, seen in looks.items() if seen != first} == {}, first
    assert_quiet(page_log)


# --- Dark mode: the policy pages use the same dark colours as the rest ------------------------


def test_dark_mode_colours_on_a_policy_page_match_the_session_and_run_pages(
    page: Page, page_log: PageLog, project: Project, finished_run: GCRun, budget_policy: Policy
) -> None:
    services.project_set_default_policy(project=project, policy=budget_policy)
    page.emulate_media(color_scheme="dark")
    # Each page: a table, and a status shown in the "ok" colour.
    places = {
        "policies": ("/policies/", "#policy-table", ".badge--default"),
        "session": (f"/sessions/{finished_run.session_id}/", "#runs table", ".badge--done"),
        "run": (f"/runs/{finished_run.pk}/", "#ledger table", "#run-status .badge--done"),
    }
    seen = {}
    for name, (address, table, status) in places.items():
        page.goto(address)
        body = page.locator("body")
        seen[name] = {
            "text": colour(body, "color"),
            "page": colour(page.locator("html"), "background-color"),
            "table": colour(page.locator(table), "background-color"),
            "ok": colour(page.locator(status).first, "color"),
        }

    assert seen["policies"] == seen["session"] == seen["run"], seen
    policies = seen["policies"]
    assert luminance(policies["page"]) < 0.05, "a dark page"
    assert luminance(policies["text"]) > 0.5, "light text"
    assert contrast(policies["ok"], policies["table"]) >= 4.5, "the ok colour reads on dark"
    assert_quiet(page_log)


# --- Layout: the content starts where the header does, at every width ------------------------


@pytest.mark.parametrize("width", [1280, 1920])
def test_policy_pages_line_up_with_the_header(
    page: Page,
    page_log: PageLog,
    budget_policy: Policy,
    stored_session: AgentSession,
    width: int,
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    for address in [
        "/policies/",
        f"/policies/{budget_policy.pk}/edit/",
        f"/policies/{budget_policy.pk}/apply/",
        "/policies/compare/",
        "/sessions/",
    ]:
        page.goto(address)
        header = page.locator(".site-header .container").bounding_box()
        main = page.locator("main").bounding_box()
        assert header is not None
        assert main is not None
        assert (main["x"], main["width"]) == (header["x"], header["width"]), address
    assert_quiet(page_log)
