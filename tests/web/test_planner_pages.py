"""The Plan tab of a session and its step-through, as pages and htmx fragments."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, PolicyKind, Project
from tests.web.uploads import session_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(project: Project) -> AgentSession:
    receipt = background.session_upload(
        project=project, filename="plan-page.json", data=session_file(30, model="gpt-4o")
    )
    assert receipt.session is not None
    return receipt.session


def plan_url(session: AgentSession, **query: object) -> str:
    url = reverse("session_plan", args=[session.pk])
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    return url


def test_the_session_page_links_to_its_plan(client: Client, session: AgentSession) -> None:
    html = client.get(reverse("session_detail", args=[session.pk])).content.decode()

    assert f'href="{plan_url(session)}"' in html


def test_the_plan_shows_the_budget_arithmetic_with_its_sources(
    client: Client, session: AgentSession
) -> None:
    response = client.get(plan_url(session))
    html = response.content.decode()

    assert response.status_code == 200
    assert "ctx tokens: " in html
    assert "(window 128000)" in html
    assert "the model table&#x27;s row for gpt-4o (platform.openai.com)" in html
    assert 'data-figure="B"' in html
    assert "L − C − S" in html
    assert "Telemetry record" in html


def test_the_plan_says_its_figures_in_words_and_dumps_no_telemetry(
    client: Client, session: AgentSession
) -> None:
    html = client.get(plan_url(session, context_length=4000)).content.decode()

    # The turn at the cut: what the figure is, with its separators, beside the turn's own size.
    assert "budget/does_not_fit" in html
    assert "tokens were left" not in html
    assert re.search(
        r"did not fit: when it was tried, only [\d,]+ tokens? of the budget for the "
        r"conversation (was|were) still free",
        html,
    )
    # The log record is named and told in words, not printed as JSON.
    assert "included_by_reason" not in html
    assert "budget_sources" not in html
    assert 'id="plan-telemetry"' not in html


def test_a_smaller_window_leaves_turns_out_with_their_reasons(
    client: Client, session: AgentSession
) -> None:
    html = client.get(plan_url(session, context_length=4000)).content.decode()

    assert "(window 4000)" in html
    assert "typed here" in html
    assert "budget/behind_cut" in html
    assert "a more recent turn did not fit" in html


def test_htmx_gets_the_plan_alone(client: Client, session: AgentSession) -> None:
    response = client.get(
        plan_url(session, model="gpt-4"), headers={"HX-Request": "true", "HX-Target": "plan"}
    )
    html = response.content.decode()

    assert '<div id="plan"' in html
    assert "<html" not in html
    assert "(window 8192)" in html


def test_a_bad_figure_is_refused_next_to_its_field(client: Client, session: AgentSession) -> None:
    html = client.get(plan_url(session, context_length=-5, pin_ttl="soon")).content.decode()

    assert "Ensure this value is greater than or equal to 1." in html
    assert "Give a number of turns (1 or more), or &#x27;unlimited&#x27;." in html
    assert "ctx tokens: " not in html


def test_a_stored_planner_config_is_planned_with(
    client: Client, project: Project, session: AgentSession
) -> None:
    config = services.policy_create(
        project=project,
        name="Big buffer",
        config={"safety_buffer": 20_000},
        kind=PolicyKind.PLANNER,
    )
    version = config.versions.get()

    html = client.get(plan_url(session, config=version.pk)).content.decode()

    assert 'data-figure="S"' in html
    assert "20,000" in html
    assert f'<option value="{version.pk}" selected>Big buffer v1</option>' in html


def test_the_steps_load_with_the_plan_and_page_through_the_turns(
    client: Client, session: AgentSession
) -> None:
    services.session_pin(session=session, turn_index=3)
    url = reverse("session_plan_steps", args=[session.pk])

    fragment = client.get(
        f"{url}?pin_ttl=2&start=0&context_length=4000", headers={"HX-Request": "true"}
    ).content.decode()
    page = client.get(f"{url}?start=10").content.decode()

    assert fragment.startswith('\n<section id="steps"') or '<section id="steps"' in fragment
    assert "<html" not in fragment
    assert "Limited(2) → Limited(1)" in fragment
    assert "user turns 1–30 of 30" in fragment
    assert "<html" in page
    assert "user turns 11–30 of 30" in page
    assert page.count('id="steps"') == 1


def test_queries_do_not_grow_with_the_session(client: Client, project: Project) -> None:
    counts = []
    for turns in (3, 60):
        data = session_file(turns, seed=turns)
        stored = background.session_upload(project=project, filename=f"{turns}.json", data=data)
        session = stored.session
        assert session is not None
        services.session_pin(session=session, turn_index=1)
        for url in (plan_url(session), reverse("session_plan_steps", args=[session.pk])):
            client.get(url)  # warm up: the session is unpacked once per process
            with CaptureQueriesContext(connection) as captured:
                assert client.get(url).status_code == 200
            counts.append(len(captured.captured_queries))

    plan_small, steps_small, plan_large, steps_large = counts
    # Sign-in and the project switcher (4), the session, the planner configs for the picker,
    # the session's pins (for the plan and for the page's summary); the steps page plans twice.
    assert plan_small == plan_large == 8
    assert steps_small == steps_large == 9
