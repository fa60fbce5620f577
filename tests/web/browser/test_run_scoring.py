"""A run is shown as soon as it is done; its anchor retention, scored by the worker next,
arrives on the same page without a reload, with the gate flag above the figures."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

import gcengine
from jaato_web.dashboard import storage
from jaato_web.dashboard.models import GCRun
from jaato_web.dashboard.services import quality
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet, expect_same_document, mark_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_score_arrives_on_the_page_of_a_run_being_scored(
    page: Page, page_log: PageLog, finished_run: GCRun
) -> None:
    project = finished_run.session.project
    # Every class at 100 %: whatever the run lost, a gate fails.
    quality.project_quality_save(
        project=project, gates={c.value: 1.0 for c in gcengine.AnchorClass}, prices=None
    )
    scored = finished_run.retention
    retention = storage.retention_read(scored)
    assert retention is not None
    assert gcengine.gate_failures(retention, quality.project_gates(project))
    # As the run stands while its worker scores it.
    GCRun.objects.filter(pk=finished_run.pk).update(retention=None, retention_pending=True)

    page.goto(f"/runs/{finished_run.pk}/")
    mark_document(page)
    section = page.locator("#run-retention")
    expect(section).to_contain_text("Scoring the anchors this run took out of view")
    expect(page.locator("#ledger-heading")).to_be_visible()
    expect(page.locator("[data-under-gate]")).to_have_count(0)

    GCRun.objects.filter(pk=finished_run.pk).update(retention=scored, retention_pending=False)

    expect(section.locator("[data-retention-sentence]")).to_contain_text(
        f"Anchor retention {retention.score * 100:.1f} %"
    )
    expect(page.locator("#run-gate-flag [data-under-gate]")).to_contain_text(
        "Under the project's retention gates:"
    )
    expect(section).not_to_contain_text("Scoring the anchors")
    expect_same_document(page)
    assert_quiet(page_log)
