"""The policy editor in a browser: paired sliders, options per strategy, pins, and the live
preview following every edit, all under the strict CSP."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession, Policy
from tests.web.browser.page_log import PageLog
from tests.web.policy_data import TRUNCATE_POLICY

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.web.policy_fixtures"]


def clean(page_log: PageLog) -> None:
    assert page_log.csp_violations() == []
    assert page_log.errors == []
    assert page_log.bad_responses == []


def open_editor(page: Page, policy: Policy) -> None:
    page.goto(f"/policies/{policy.pk}/edit/")
    expect(page.locator("#preview [data-preview-state]")).to_have_attribute(
        "data-preview-state", "ok"
    )


def slide(page: Page, name: str, value: int) -> None:
    page.locator(f"[data-percent-slider={name}]").evaluate(
        "(slider, value) => { slider.value = value;"
        " slider.dispatchEvent(new Event('input', {bubbles: true})); }",
        value,
    )


def ledger_turns(page: Page) -> list[str]:
    return page.locator("#preview-ledger tr[data-turn]").evaluate_all(
        "rows => rows.map(row => row.dataset.turn)"
    )


def test_slider_and_number_stay_in_step(
    page: Page, page_log: PageLog, policy: Policy, agent_session: AgentSession
) -> None:
    open_editor(page, policy)

    slide(page, "threshold_percent", 85)
    expect(page.locator("[data-percent-number=threshold_percent]")).to_have_value("85")

    page.locator("[data-percent-number=target_percent]").fill("35")
    expect(page.locator("[data-percent-slider=target_percent]")).to_have_value("35")
    clean(page_log)


def test_preview_follows_edits_and_shows_engine_messages_at_their_field(
    page: Page, page_log: PageLog, policy: Policy, agent_session: AgentSession
) -> None:
    open_editor(page, policy)
    before = page.locator("#preview [data-preview-state]").get_attribute("data-tokens-after")
    target = page.locator("[data-percent-number=target_percent]")

    target.fill("90")

    expect(page.locator("#preview [data-preview-state]")).to_have_attribute(
        "data-preview-state", "invalid"
    )
    expect(page.locator("#errors-target_percent")).to_contain_text(
        "must be below threshold_percent"
    )

    target.fill("30")

    state = page.locator("#preview [data-preview-state]")
    expect(state).to_have_attribute("data-preview-state", "ok")
    expect(page.locator("#errors-target_percent")).to_have_text("")
    assert state.get_attribute("data-tokens-after") != before
    expect(page.locator("#preview-chart svg")).to_be_visible()
    clean(page_log)


def test_only_the_chosen_strategys_options_show(
    page: Page, page_log: PageLog, policy: Policy, agent_session: AgentSession
) -> None:
    open_editor(page, policy)
    middle = page.locator("[data-field=summarize_middle_turns]")
    expect(middle).to_be_hidden()

    page.locator("[data-strategy-select]").select_option("gc_hybrid")

    expect(middle).to_be_visible()
    expect(page.locator("[data-mode-label]")).to_have_text("threshold")
    page.locator("[data-percent-number=pressure_percent]").fill("0")
    expect(page.locator("[data-mode-label]")).to_have_text("continuous")
    clean(page_log)


def test_a_pin_added_in_the_editor_leaves_the_preview_ledger_and_can_be_removed(
    page: Page, page_log: PageLog, policy: Policy, agent_session: AgentSession
) -> None:
    open_editor(page, policy)
    first = ledger_turns(page)[0]
    shown = page.locator(f"#preview-ledger tr[data-turn='{first}'] td.num").first.inner_text()
    pins = page.locator("[data-pin-list=pinned_turn_indices]")

    # A person pins the turn by the number the ledger (and the session page) shows for it.
    pins.locator("[data-pin-input]").fill(shown)
    pins.locator("[data-pin-add]").click()

    expect(pins.locator(f"[data-pin-item][data-pin-value='{shown}']")).to_have_count(1)
    expect(page.locator(f"#preview-ledger tr[data-turn='{first}']")).to_have_count(0)

    pins.locator("[data-pin-remove]").click()

    expect(page.locator(f"#preview-ledger tr[data-turn='{first}']")).to_have_count(1)
    clean(page_log)


def test_saving_stores_the_pins_and_the_next_version(
    page: Page, page_log: PageLog, policy: Policy, agent_session: AgentSession
) -> None:
    open_editor(page, policy)
    pins = page.locator("[data-pin-list=pinned_turn_indices]")
    pins.locator("[data-pin-input]").fill("3")
    pins.locator("[data-pin-add]").click()
    page.get_by_label("What changed, and why").fill("keep turn 3")

    page.locator("[data-save]").click()

    expect(page.locator(".flash")).to_contain_text("version 2")
    latest = policy.versions.order_by("-number").first()
    assert latest is not None
    assert latest.config["pinned_turn_indices"] == [2]  # the session page's turn 3
    assert latest.message == "keep turn 3"
    clean(page_log)


@pytest.mark.parametrize(
    "path",
    ["/policies/", "/policies/new/", "/policies/import/", "/policies/compare/"],
)
def test_policy_pages_load_cleanly(
    page: Page, page_log: PageLog, policy: Policy, agent_session: AgentSession, path: str
) -> None:
    response = page.goto(path)

    assert response is not None
    assert response.ok
    page.wait_for_load_state("networkidle")
    clean(page_log)


def test_versions_apply_and_progress_pages(
    page: Page, page_log: PageLog, project, policy: Policy, agent_session: AgentSession
) -> None:
    services.policy_save(policy=policy, config=TRUNCATE_POLICY, base_number=1, message="again")

    page.goto(f"/policies/{policy.pk}/versions/")
    page.get_by_role("button", name="Compare A and B").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Version 1 and version 2")

    page.goto(f"/policies/{policy.pk}/apply/")
    page.get_by_label(agent_session.label).check()
    page.get_by_role("button", name="Run on the selected sessions").click()

    expect(page).to_have_url(re.compile(r"/policies/runs/\?ids=\d+"))
    expect(page.locator("#apply-progress")).to_contain_text("1 of 1 run done")
    clean(page_log)


def test_export_then_import_gives_the_same_policy(
    page: Page, page_log: PageLog, policy: Policy, agent_session: AgentSession, tmp_path
) -> None:
    open_editor(page, policy)
    with page.expect_download() as download:
        page.get_by_role("link", name="Export gc.json").click()
    exported = tmp_path / "gc.json"
    download.value.save_as(exported)

    page.goto("/policies/import/")
    page.get_by_label("gc.json file").set_input_files(str(exported))
    page.get_by_label("Name", exact=True).fill("Round trip")
    page.get_by_role("button", name="Import").click()

    expect(page.locator(".flash")).to_contain_text("Imported Round trip as version 1")
    imported = Policy.objects.get(name="Round trip").versions.get()
    assert imported.config == policy.versions.get().config
    clean(page_log)
