"""A reviewer in the browser: comments on a removal item of a finished run, then approves the
run, all with htmx swaps under the strict CSP; comment text is shown as text."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from jaato_web.dashboard.models import GCRun, Project
from jaato_web.review.models import Comment, Verdict
from jaato_web.teams.permissions import Role
from tests.web.browser.conftest import sign_in
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet, expect_same_document, mark_document
from tests.web.conftest import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTILE = "<script>window.injected = true</script> Why did this turn go?"


def test_reviewer_comments_on_an_item_and_approves_the_run(
    anonymous_page: Page, live_server: LiveServer, project: Project, finished_run: GCRun
) -> None:
    rita = make_member(project, "rita", Role.REVIEWER)
    page = sign_in(anonymous_page, rita, live_server)
    page_log = PageLog()
    page.on("console", page_log.on_console)
    page.on("pageerror", page_log.on_page_error)
    page.on("response", page_log.on_response)
    first = finished_run.removals.order_by("seq").first()
    assert first is not None

    page.goto(f"/runs/{finished_run.pk}/")
    review = page.locator("#review")
    expect(review.locator("[data-review-status]")).to_have_text("Pending")

    # The ledger row links the item's comments.
    page.locator("#ledger").get_by_role("link", name=f"Comment on item {first.seq}").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        f"Item {first.seq} of the removal ledger"
    )
    mark_document(page)
    page.get_by_label("Add a comment").fill(HOSTILE)
    page.get_by_role("button", name="Comment", exact=True).click()

    comment = page.locator("#review .comment")
    expect(comment).to_have_count(1)
    expect(comment.locator(".comment__body")).to_have_text(HOSTILE)
    expect(comment.locator(".comment__head")).to_contain_text("rita")
    expect(page.get_by_label("Add a comment")).to_have_value("")
    expect_same_document(page)
    assert page.evaluate("window.injected") is None

    page.get_by_role("link", name=f"Run {finished_run.pk}").click()
    expect(
        page.locator("#ledger").get_by_role("link", name=f"1 comment on item {first.seq}")
    ).to_be_visible()
    mark_document(page)
    review = page.locator("#review")
    review.get_by_label("Note").fill("The cuts keep what matters.")
    review.get_by_role("button", name="Approve").click()

    expect(review.locator("[data-review-status]")).to_have_text("Approved")
    verdict = review.locator(".verdict").first
    expect(verdict).to_contain_text("rita")
    expect(verdict).to_contain_text("The cuts keep what matters.")
    expect_same_document(page)

    # Stored, not just swapped in: a fresh load shows the same.
    page.reload()
    expect(page.locator("#review [data-review-status]")).to_have_text("Approved")
    page.goto(f"/runs/{finished_run.pk}/removals/{first.seq}/")
    expect(page.locator("#review .comment__body")).to_have_text(HOSTILE)
    assert page.evaluate("window.injected") is None

    assert Verdict.objects.get().decision == "approve"
    assert Comment.objects.get().removal_id == first.pk
    assert_quiet(page_log)


def test_a_refused_comment_keeps_the_draft_and_says_why(
    page: Page, page_log: PageLog, finished_run: GCRun
) -> None:
    page.goto(f"/runs/{finished_run.pk}/")
    mark_document(page)
    box = page.get_by_label("Add a comment")
    # Only spaces: the browser's "required" lets it through, the server refuses it.
    box.fill("   ")
    page.get_by_role("button", name="Comment", exact=True).click()

    expect(page.locator("#review .errors")).to_contain_text("the comment is empty")
    expect_same_document(page)
    assert not Comment.objects.exists()
    assert_quiet(page_log, bad_responses=[f"400 {page.url.split('#')[0]}comments/"])
