"""Browser tests: the system's headless Chromium, driven by Playwright, against a live server.

Playwright never downloads a browser here: the tests start the Chromium that Debian's
`chromium` package installs at /usr/bin/chromium, or the binary JAATO_CHROMIUM names.
Without one, browser tests are skipped with a hint, except under CI, where they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from playwright.sync_api import Browser, Page, expect, sync_playwright
from pytest_django.live_server_helper import LiveServer

from tests.web.browser.page_log import PageLog

DEFAULT_CHROMIUM = "/usr/bin/chromium"

# Root needs --no-sandbox. The rest keep Chromium from reaching for Google's
# services, which a machine without Internet access refuses, slowly.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# How long an expect() assertion waits for the page to get there. Playwright's 5 seconds are
# short when other browsers share the machine; a passing assertion returns as soon as it holds.
EXPECT_TIMEOUT_MS = 15_000


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """One headless Chromium for the whole session; each test gets its own context."""
    path = os.environ.get("JAATO_CHROMIUM", "").strip() or DEFAULT_CHROMIUM
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        message = (
            f"no Chromium at {path}: install Debian's package (sudo apt-get install chromium) "
            "or set JAATO_CHROMIUM to a Chromium binary"
        )
        if in_ci():
            pytest.fail(f"{message}; under CI browser tests must run.", pytrace=False)
        pytest.skip(message)

    # Playwright's sync API keeps an asyncio event loop running on this thread
    # until it stops, and Django refuses ORM calls wherever a loop runs. Tests
    # and pytest-django's database set-up run their queries on this thread, so
    # they are allowed for the rest of the session (the app has no async code).
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        expect.set_options(timeout=EXPECT_TIMEOUT_MS)
        yield browser
        browser.close()


@pytest.fixture
def anonymous_page(chromium: Browser, live_server: LiveServer) -> Iterator[Page]:
    """A fresh page (own cookies and storage) whose relative URLs go to the live server."""
    context = chromium.new_context(base_url=live_server.url)
    yield context.new_page()
    context.close()


def sign_in(page: Page, user: User, server: LiveServer) -> Page:
    """Give the page's browser the session cookie of ``user``, as if they had signed in."""
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": server.url}])
    return page


@pytest.fixture
def page(anonymous_page: Page, member: User, live_server: LiveServer) -> Page:
    """A page signed in as ``member`` (admin of the default project)."""
    return sign_in(anonymous_page, member, live_server)


@pytest.fixture
def page_log(page: Page) -> PageLog:
    log = PageLog()
    page.on("console", log.on_console)
    page.on("pageerror", log.on_page_error)
    page.on("response", log.on_response)
    return log
