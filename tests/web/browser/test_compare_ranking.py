"""The compare page in a browser: two policies replayed on a session, ranked by what their
collections cost with prompt caching, then by the retention gates, under the strict CSP."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

import gcengine
from jaato_web.dashboard import background, presenters, services
from jaato_web.dashboard.models import AgentSession, PolicyVersion
from tests.web.browser.page_log import PageLog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WINDOW = 20_000
TRUNCATE = {"type": "truncate", "threshold_percent": 80, "target_percent": 40}
CONTINUOUS = {
    "type": "budget",
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 0,
    "preserve_recent_turns": 2,
}


def demo_session() -> AgentSession:
    data = json.dumps(gcengine.generate_demo_session(gcengine.DemoShape(turns=40))).encode()
    receipt = background.session_upload(
        project=services.project_default(), filename="demo-40.json", data=data
    )
    assert receipt.session is not None
    return receipt.session


def version(name: str, config: dict[str, object]) -> PolicyVersion:
    policy = services.policy_create(project=services.project_default(), name=name, config=config)
    return policy.versions.get()


def ranked_versions(page: Page) -> list[int]:
    return [
        int(v)
        for v in page.locator("#ranking tr[data-rank]").evaluate_all(
            "rows => rows.map(row => row.dataset.version)"
        )
    ]


def test_the_compare_page_ranks_two_policies(page: Page, page_log: PageLog) -> None:
    session = demo_session()
    truncate = version("Truncate 80/40", TRUNCATE)
    continuous = version("Continuous 80/60", CONTINUOUS)
    engine = gcengine.with_context_limit(services.engine_session_of(session), WINDOW)
    price = gcengine.price_for_model(session.model_name, gcengine.DEFAULT_PRICES)
    assert price is not None
    cost = {
        v.pk: gcengine.cache_cost(
            gcengine.simulate(engine, gcengine.load_gc_config(config, env={})).requests, price
        ).dollars
        for v, config in ((truncate, TRUNCATE), (continuous, CONTINUOUS))
    }
    cheaper, dearer = sorted(cost, key=lambda pk: cost[pk])

    page.goto("/policies/compare/")
    form = page.locator("#compare-form")
    form.locator("select[name=session]").select_option(str(session.pk))
    form.locator("select[name=a]").select_option(str(truncate.pk))
    form.locator("select[name=b]").select_option(str(continuous.pk))
    form.locator("input[name=window]").fill(str(WINDOW))
    form.locator("select[name=by]").select_option("cost")
    form.get_by_role("button", name="Compare").click()

    ranking = page.locator("#ranking")
    expect(ranking.get_by_role("heading", name="Ranking over 1 session")).to_be_visible()
    expect(ranking).to_contain_text("against a window of 20,000 tokens")
    expect(ranking).to_contain_text("then by the lowest cost with prompt caching")
    assert ranked_versions(page) == [cheaper, dearer]
    first = ranking.locator("tr[data-rank='1']")
    expect(first.locator("[data-cost]")).to_contain_text(presenters.dollars(cost[cheaper]))
    expect(first.locator("[data-cost]")).to_contain_text("without GC")

    # Ranked by the gates and anchor retention instead: the truncation's collections take
    # decisions and open work out of view, so the continuous policy comes first.
    form.locator("select[name=by]").select_option("retention")
    form.get_by_role("button", name="Compare").click()
    expect(ranking).to_contain_text("the fewest collections under a gate")
    assert ranked_versions(page) == [continuous.pk, truncate.pk]
    expect(ranking.locator("tr[data-rank='2'] .badge--failed")).to_be_visible()

    assert page_log.csp_violations() == []
    assert page_log.errors == []
    assert page_log.bad_responses == []
