"""The compare page in a browser: two policies replayed on a session, ranked by what their
collections cost with prompt caching, then by the retention gates, under the strict CSP; and a
ranking worked out in the background, its progress on the page until the ranked table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from playwright.sync_api import Page, expect

import gcengine
from jaato_web.dashboard import background, presenters, previews, services
from jaato_web.dashboard.models import AgentSession, PolicyRanking, PolicyVersion
from tests.web.browser.page_log import PageLog
from tests.web.ranking_lease import RankingLease

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


def demo_session(seed: int = 0) -> AgentSession:
    shape = gcengine.DemoShape(turns=40, seed=seed)
    data = json.dumps(gcengine.generate_demo_session(shape)).encode()
    receipt = background.session_upload(
        project=services.project_default(), filename=f"demo-40-{seed}.json", data=data
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


@dataclass
class ShownOnThePage(RankingLease):
    """A worker's lease that, before the ranking goes on from its first replay, waits until
    the page polling it shows that replay: what the worker says reaches the page as it works."""

    page: Page
    said: list[str] = field(default_factory=list)

    def progress(self, text: str, **fields: Any) -> None:
        super().progress(text, **fields)
        self.said.append(text)
        if text.startswith("replaying") and fields.get("replays_done") == 1:
            progress = self.page.locator("#ranking [data-ranking-progress]")
            expect(progress).to_contain_text("1 of 4 replays done")
            expect(progress).to_contain_text(text)
            expect(progress.locator("[data-ranking-elapsed]")).to_be_visible()


def test_a_ranking_runs_in_the_background_with_its_progress_on_the_page(
    page: Page, page_log: PageLog, settings: Any
) -> None:
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    first, second = demo_session(), demo_session(seed=5)
    truncate = version("Truncate 80/40", TRUNCATE)
    continuous = version("Continuous 80/60", CONTINUOUS)

    page.goto("/policies/compare/")
    form = page.locator("#compare-form")
    form.locator("select[name=session]").select_option([str(first.pk), str(second.pk)])
    form.locator("select[name=a]").select_option(str(truncate.pk))
    form.locator("select[name=b]").select_option(str(continuous.pk))
    form.locator("input[name=window]").fill(str(WINDOW))
    form.get_by_role("button", name="Compare").click()

    ranking = page.locator("#ranking")
    expect(ranking.get_by_role("heading", name="Ranking over 2 sessions")).to_be_visible()
    expect(ranking).to_contain_text("0 of 4 replays done: waiting for a worker")
    expect(page.locator("#comparison")).to_be_visible()  # A and B do not wait for it

    row = PolicyRanking.objects.latest("pk")  # the page before the form had its own
    assert background.work_claim(PolicyRanking, row.pk, "reading the sessions")  # a worker
    lease = ShownOnThePage(background.HeldWork(PolicyRanking, row.pk), page)
    previews.ranking_draw(ranking_id=row.pk, lease=lease)

    assert len(lease.said) == 5  # reading, then one replay per version and session
    expect(ranking.locator("tr[data-rank]")).to_have_count(2)
    assert sorted(ranked_versions(page)) == sorted([truncate.pk, continuous.pk])
    expect(ranking).to_contain_text("Ranked by a worker in")
    expect(ranking.locator("[data-ranking-progress]")).to_have_count(0)

    rankings = PolicyRanking.objects.count()
    page.reload()  # kept: read back, not ranked again
    expect(ranking.locator("tr[data-rank]")).to_have_count(2)
    assert PolicyRanking.objects.count() == rankings

    assert page_log.csp_violations() == []
    assert page_log.errors == []
    assert page_log.bad_responses == []
