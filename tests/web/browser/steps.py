"""Steps the browser tests share: session files on disk, uploading them, and checks that a
page stayed quiet (no console errors, no CSP violations, no unexpected failed responses)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from tests.web.browser.page_log import PageLog
from tests.web.uploads import session_file

UPLOAD_URL = "/sessions/upload/"


def write_session(directory: Path, name: str, data: bytes | None = None) -> Path:
    """A session file on disk for the file picker: ``data``, or a generated 20-turn file."""
    path = directory / name
    path.write_bytes(session_file(20) if data is None else data)
    return path


def malformed_session(turns: int = 3, *, message: int = 2) -> bytes:
    """A generated file whose ``history[message]`` has a role the engine refuses (7)."""
    document = json.loads(session_file(turns))
    document["history"][message]["role"] = 7
    return json.dumps(document).encode()


def upload(page: Page, files: Iterable[Path]) -> Locator:
    """Pick ``files`` on the upload page, submit, and return the results once they show."""
    page.goto(UPLOAD_URL)
    page.locator("input[type=file]").set_input_files(list(files))
    return submit_upload(page)


def submit_upload(page: Page) -> Locator:
    """Submit the upload form as it stands; the results section once htmx swapped it in."""
    page.get_by_role("button", name="Upload", exact=True).click()
    results = page.locator("#upload-results")
    expect(results.get_by_role("heading", name="Results")).to_be_visible()
    return results


def outcome(results: Locator, filename: str) -> Locator:
    """The result line of one uploaded file."""
    return results.locator("li.outcome").filter(
        has=results.page.locator(".outcome__file", has_text=filename)
    )


def mark_document(page: Page) -> None:
    """Tag the loaded document, so a later check can tell htmx swaps from a page load."""
    page.evaluate("window.stillTheSameDocument = true")


def expect_same_document(page: Page) -> None:
    assert page.evaluate("window.stillTheSameDocument") is True, "the page was loaded again"


def assert_quiet(page_log: PageLog, *, bad_responses: Iterable[str] = ()) -> None:
    """Nothing went wrong in the page beyond the failed responses the test expected.

    Chromium logs every failed response as a console error too, so those are allowed for
    exactly the expected responses and no others.
    """
    expected = list(bad_responses)
    assert page_log.csp_violations() == []
    assert page_log.errors == []
    assert page_log.bad_responses == expected
    failed_loads = [line for line in page_log.console_errors() if "Failed to load" in line]
    assert len(failed_loads) == len(expected), page_log.console
    assert [line for line in page_log.console_errors() if line not in failed_loads] == []
