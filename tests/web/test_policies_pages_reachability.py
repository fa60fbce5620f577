"""The policy editor offers the reachability strategy: its options as controls (from the
engine's table of keys), saved as the gc.json says, previewed live with each item's reason,
and refused next to the control at fault."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

import gcengine
from jaato_web.dashboard import background
from jaato_web.dashboard.models import AgentSession, Policy, Project
from jaato_web.pages.policies_forms import form_values
from tests.web.policy_data import form_data

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
REACHABILITY: dict[str, Any] = {
    "type": "reachability",
    "threshold_percent": 30,
    "target_percent": 20,
    "pressure_percent": 90,
    "preserve_recent_turns": 2,
    "roots": {"recent_turns": 2, "active_file_turns": 1, "current_task": True},
    "weights": {"recency": 0.5, "importance": 0.3, "refcount": 0.1, "generation": 0.1},
    "action": "auto",
    "incremental": True,
    "batch_size": 8,
}


@pytest.fixture
def demo(project: Project) -> AgentSession:
    data = json.dumps(gcengine.generate_demo_session(gcengine.DemoShape(turns=30, seed=2)))
    receipt = background.session_upload(project=project, filename="demo.json", data=data.encode())
    assert receipt.session is not None
    return receipt.session


def test_the_editor_shows_the_reachability_options_for_that_strategy_only(
    client: Client, project: Project
) -> None:
    html = client.get(reverse("policy_new")).content.decode()
    assert 'value="gc_reachability"' in html
    assert 'data-applies="gc_reachability" data-strategy-options="gc_reachability"' in html
    for key, options in gcengine.GC_JSON_SUBFIELDS.items():
        for option in options:
            assert f'name="{key}_{option.key}"' in html
            assert escape(option.help) in html
    labels = {field.key: field.label for field in gcengine.GC_JSON_FIELDS}
    assert f">{labels['batch_size']}<" in html


def test_a_reachability_policy_saves_what_the_editor_says(client: Client, project: Project) -> None:
    answer = client.post(
        reverse("policy_new"),
        form_data(REACHABILITY, name="Reachability", message="first"),
    )
    assert answer.status_code == 302
    stored = Policy.objects.get(name="Reachability").versions.get().config
    assert stored["type"] == "reachability"
    assert stored["roots"] == {
        "current_task": True,
        "recent_turns": 2,
        "pinned": True,
        "locked": True,
        "active_file_turns": 1,
    }
    assert stored["weights"] == REACHABILITY["weights"]
    assert (stored["action"], stored["incremental"], stored["batch_size"]) == ("auto", True, 8)
    # What the editor shows for the stored policy is what it was given.
    values = form_values(stored)
    assert values["roots_recent_turns"] == 2
    assert values["weights_recency"] == 0.5
    assert values["action"] == "auto"


def test_the_live_preview_gives_each_item_its_reason(client: Client, demo: AgentSession) -> None:
    html = client.post(
        reverse("policy_preview"), form_data(REACHABILITY, session=demo.pk), headers=HTMX
    ).content.decode()
    assert 'data-preview-state="ok"' in html
    ledger = html[html.index('id="preview-ledger"') :]
    ledger = ledger[: ledger.index("</table>")]
    assert ">Why<" in ledger
    assert re.search(r"(unreachable|reachable, taken once).*?score \d\.\d\d", ledger, re.S)
    assert "badge--stashed" in ledger or "badge--deleted" in ledger


@pytest.mark.parametrize(
    ("change", "control", "words"),
    [
        ({"roots": {"recent_turns": -1}}, "roots_recent_turns", "must be at least 0"),
        ({"batch_size": 30}, "batch_size", "must be at most 20 segments"),
        (
            {"weights": {"recency": 0, "importance": 0, "refcount": 0, "generation": 0}},
            "weights_recency",
            "at least one weight must be above 0",
        ),
    ],
)
def test_an_option_the_engine_refuses_is_named_beside_its_control(
    client: Client, demo: AgentSession, change: dict[str, Any], control: str, words: str
) -> None:
    data = form_data({**REACHABILITY, **change}, session=demo.pk)
    html = client.post(reverse("policy_preview"), data, headers=HTMX).content.decode()
    assert 'data-preview-state="invalid"' in html
    box = re.search(rf'<div id="errors-{control}"[^>]*hx-swap-oob="true">(.*?)</div>', html)
    assert box, control
    assert words in box.group(1)
