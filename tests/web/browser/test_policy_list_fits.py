"""The policies list in a browser, on a phone and on a desktop: the table fits the screen, so
no column is cut off and nothing needs a sideways scroll to reach."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from jaato_web.dashboard import services
from jaato_web.dashboard.models import Project
from tests.web.browser.page_log import PageLog
from tests.web.browser.steps import assert_quiet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BUDGET = {"type": "budget", "threshold_percent": 80, "target_percent": 60}

# How wide the table and the page are, against the room they have.
WIDTHS = """() => {
    const table = document.querySelector("#policy-table");
    const box = table.parentElement;
    return {
        table: Math.ceil(table.getBoundingClientRect().width),
        box: box.clientWidth,
        boxScrolls: box.scrollWidth - box.clientWidth,
        page: document.documentElement.scrollWidth,
        screen: window.innerWidth,
    };
}"""


def policies(project: Project) -> None:
    """A list as a project grows one: a long name, a continuous policy with pins, the
    default, and the hybrid strategy with its long label."""
    services.policy_create(
        project=project, name="Budget for long agent sessions on the big window", config=BUDGET
    )
    continuous = services.policy_create(
        project=project,
        name="Continuous",
        config={**BUDGET, "pressure_percent": 0, "pinned_turn_indices": [0, 4, 9]},
    )
    services.project_set_default_policy(project=project, policy=continuous)
    services.policy_create(
        project=project,
        name="Hybrid",
        config={"type": "hybrid", "threshold_percent": 75, "target_percent": 50},
    )


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1400, 900)], ids=["phone", "desktop"])
def test_the_policies_table_fits_the_screen(
    page: Page, page_log: PageLog, project: Project, width: int, height: int
) -> None:
    policies(project)
    page.set_viewport_size({"width": width, "height": height})

    page.goto("/policies/")

    expect(page.locator("#policy-table tbody tr")).to_have_count(3)
    sizes = page.evaluate(WIDTHS)
    assert sizes["table"] <= sizes["box"], sizes
    assert sizes["boxScrolls"] <= 0, sizes
    assert sizes["page"] <= sizes["screen"], sizes
    # What a person came for is on the screen: each policy's name, its default and its edit link.
    for row in page.locator("#policy-table tbody tr").all():
        for part in (row.locator("th a"), row.get_by_role("link", name="Edit")):
            box = part.bounding_box()
            assert box is not None
            assert box["x"] >= 0
            assert box["x"] + box["width"] <= width
    expect(page.locator("#policy-table .badge--default")).to_be_visible()
    assert_quiet(page_log)
