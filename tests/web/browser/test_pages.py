"""Pages as a browser sees them: they render, and their scripts run under the strict CSP."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.web.browser.page_log import PageLog

pytestmark = pytest.mark.browser


def test_home_is_the_sessions_list_and_its_scripts_run_under_the_csp(
    page: Page, page_log: PageLog
) -> None:
    response = page.goto("/")

    # The home page redirects; the response is the sessions list it lands on.
    assert response is not None
    assert response.ok
    assert response.url.endswith("/sessions/")
    assert "'nonce-" in response.headers["content-security-policy"]
    expect(page.get_by_role("heading", level=1)).to_have_text("Sessions")
    # htmx is the page's script: it ran only if the CSP let its nonce through.
    assert page.evaluate("typeof window.htmx") == "object"
    assert page.evaluate("document.styleSheets.length") >= 1
    assert page_log.csp_violations() == []
    assert page_log.errors == []
    assert page_log.bad_responses == []


def test_page_log_catches_a_script_the_csp_blocks(page: Page, page_log: PageLog) -> None:
    page.goto("/")

    with page.expect_console_message(lambda message: "Content Security Policy" in message.text):
        page.evaluate(
            """() => {
                const script = document.createElement("script");
                script.textContent = "window.inlineScriptRan = true";
                document.head.append(script);
            }"""
        )

    assert page.evaluate("window.inlineScriptRan") is None
    assert page_log.csp_violations()


def test_admin_login_with_a_user_the_test_created(page: Page, page_log: PageLog) -> None:
    # Written on this thread, read by the live server's: the database is shared.
    User.objects.create_superuser("ada", password="correct horse battery staple")

    page.goto("/admin/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("correct horse battery staple")
    page.get_by_role("button", name="Log in").click()

    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()
    assert User.objects.get(username="ada").last_login is not None
    assert page_log.csp_violations() == []
    assert page_log.errors == []
