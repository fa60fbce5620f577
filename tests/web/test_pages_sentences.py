"""What run, replay, preview and compare pages say: the policy that drew each chart, and
sentences that match the figures beside them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import unescape
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

import gcengine
from gcengine.synthetic import SessionShape, generate_session_file
from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, GCRun, Policy, Project, Replay
from tests.web.conftest import TIGHT_BUDGET
from tests.web.policy_data import form_data

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
RELAXED = {**TIGHT_BUDGET, "threshold_percent": 80, "target_percent": 60}


@pytest.fixture
def snapshot(project: Project) -> AgentSession:
    """A JAATO budget snapshot: figures, no history."""
    engine_session = gcengine.load_session(generate_session_file(SessionShape(turns=3)))
    data = json.dumps(engine_session.budget.snapshot()).encode()
    receipt = background.session_upload(project=project, filename="snapshot.json", data=data)
    assert receipt.session is not None
    return receipt.session


def text_of(html: str) -> str:
    """The words a reader sees: tags dropped, spaces folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def replayed(session: AgentSession, version: Any, capture: Any) -> Replay:
    with capture(execute=True):
        replay = background.replay_request(session=session, policy_version=version)
    replay.refresh_from_db()
    return replay


# --- Replays name what drew them ---------------------------------------------------------------


def test_a_replay_names_the_version_asked_for_last(
    stored_session: AgentSession,
    project: Project,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    twin = services.policy_create(project=project, name="Same gc.json", config=TIGHT_BUDGET)

    first = replayed(
        stored_session, budget_policy.versions.get(), django_capture_on_commit_callbacks
    )
    again = replayed(stored_session, twin.versions.get(), django_capture_on_commit_callbacks)

    # One chart for one gc.json, named after the version asked for last.
    assert again.pk == first.pk
    assert (again.policy_version, again.policy_label) == (twin.versions.get(), "Same gc.json v1")


def test_a_pasted_gc_json_replay_says_so(
    client: Client, stored_session: AgentSession, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/sessions/{stored_session.pk}/replays",
            {"config": TIGHT_BUDGET},
            content_type="application/json",
        )
    replay = Replay.objects.get()

    html = client.get(reverse("replay_detail", args=[replay.pk])).content.decode()

    assert response.json()["policy_version_id"] is None
    assert "Replay under <strong>a pasted gc.json, threshold mode</strong>" in html


def test_a_replay_keeps_the_name_of_a_deleted_policy(
    client: Client,
    stored_session: AgentSession,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    replay = replayed(
        stored_session, budget_policy.versions.get(), django_capture_on_commit_callbacks
    )
    services.item_delete(item=budget_policy)

    html = client.get(reverse("replay_detail", args=[replay.pk])).content.decode()

    assert "Replay under <strong>Tight budget v1 (deleted since), threshold mode</strong>" in html


def test_the_session_page_select_starts_on_the_version_of_the_replay_shown(
    client: Client,
    stored_session: AgentSession,
    project: Project,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    services.project_set_default_policy(project=project, policy=budget_policy)
    continuous = services.policy_create(
        project=project, name="Continuous", config={**TIGHT_BUDGET, "pressure_percent": 0}
    )
    replayed(stored_session, continuous.versions.get(), django_capture_on_commit_callbacks)

    html = client.get(reverse("session_detail", args=[stored_session.pk])).content.decode()

    replay_form = html[html.index('<div id="replay">') :]
    selected = re.search(r'<option value="(\d+)" selected>([^<]*)</option>', replay_form)
    assert selected is not None
    assert selected.groups() == (str(continuous.versions.get().pk), "Continuous (version 1)")
    # The run form still starts on the project's default policy.
    run_form = html[html.index('id="run-form"') : html.index('<div id="replay">')]
    assert f'<option value="{budget_policy.versions.get().pk}" selected>' in run_form


def test_a_budget_snapshot_has_nothing_to_replay(
    client: Client,
    snapshot: AgentSession,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    replay = replayed(snapshot, budget_policy.versions.get(), django_capture_on_commit_callbacks)

    chart = client.get(reverse("replay_detail", args=[replay.pk])).content.decode()
    page = client.get(reverse("session_detail", args=[snapshot.pk])).content.decode()

    sentence = "This session is a budget snapshot: it has no turns to replay."
    assert sentence in chart
    assert "<svg" not in chart
    assert "sawtooth" not in chart
    assert "ripple" not in chart
    # The session page says so instead of offering a replay.
    assert sentence in page
    assert reverse("replay_create", args=[snapshot.pk]) not in page


def test_the_editor_chart_names_the_saved_version_or_the_edits(
    client: Client, stored_session: AgentSession, budget_policy: Policy
) -> None:
    url = reverse("policy_preview_chart")
    saved = form_data(TIGHT_BUDGET, session=stored_session.pk)

    as_saved = client.post(url, {**saved, "policy": budget_policy.pk}).content.decode()
    edited = client.post(
        url, {**saved, "target_percent": 0.4, "policy": budget_policy.pk}
    ).content.decode()
    new = client.post(url, saved).content.decode()

    assert "Replay under <strong>Tight budget v1, threshold mode</strong>" in as_saved
    assert (
        "Replay under <strong>Tight budget v1 with unsaved edits, threshold mode</strong>" in edited
    )
    assert "Replay under <strong>the new policy (not saved yet), threshold mode</strong>" in new


def test_the_editor_chart_of_a_snapshot_says_it_has_no_turns(
    client: Client, snapshot: AgentSession
) -> None:
    html = client.post(
        reverse("policy_preview_chart"), form_data(TIGHT_BUDGET, session=snapshot.pk)
    ).content.decode()

    assert "This session is a budget snapshot: it has no turns to replay." in html
    assert "<svg" not in html


def test_compare_charts_name_their_versions(
    client: Client, stored_session: AgentSession, project: Project, budget_policy: Policy
) -> None:
    continuous = services.policy_create(
        project=project, name="Continuous", config={**TIGHT_BUDGET, "pressure_percent": 0}
    )
    url = reverse("policy_version_chart")

    a = client.get(
        url, {"session": stored_session.pk, "version": budget_policy.versions.get().pk}
    ).content.decode()
    b = client.get(
        url, {"session": stored_session.pk, "version": continuous.versions.get().pk}
    ).content.decode()

    assert "Replay under <strong>Tight budget v1, threshold mode</strong>" in a
    assert "Replay under <strong>Continuous v1, continuous mode</strong>" in b


# --- Runs say what they did ------------------------------------------------------------------


def test_a_run_that_removed_nothing_says_so_everywhere(
    client: Client, stored_session: AgentSession, run_finished: Callable[..., GCRun]
) -> None:
    run = run_finished(stored_session, config=RELAXED)

    text = text_of(client.get(reverse("run_detail", args=[run.pk])).content.decode())

    assert run.items_collected == 0
    assert "This run removed nothing: usage was already at or below the policy's 60 % target" in (
        text
    )
    assert "No summaries: this run removed nothing, and the session held none." in text
    assert "without summarizing" not in text


def test_a_run_that_removed_content_says_how_much(client: Client, finished_run: GCRun) -> None:
    text = text_of(client.get(reverse("run_detail", args=[finished_run.pk])).content.decode())

    items = finished_run.items_collected
    assert items
    assert f"This run removed {items:,} items and freed {finished_run.tokens_freed:,} tokens" in (
        text
    )
    assert "No summaries: this run removed content without summarizing it" in text


def test_a_summarizing_run_says_it_summarized(client: Client, summarize_run: GCRun) -> None:
    text = text_of(client.get(reverse("run_detail", args=[summarize_run.pk])).content.decode())

    assert re.search(r"It summarized \d+ turns? into summary 1 \(\d[\d,]* tokens?\)\.", text)


def test_a_run_left_over_the_window_is_warned(
    client: Client, project: Project, run_finished: Callable[..., GCRun]
) -> None:
    # Twelve turns in gpt-4's 8,192-token window, under a policy that keeps the last ten.
    shape = SessionShape(turns=12, user_chars=2000, model_chars=2000, tool_every=0, seed=3)
    document = generate_session_file(shape)
    document["connection"]["model"] = "gpt-4"
    receipt = background.session_upload(
        project=project, filename="big.json", data=json.dumps(document).encode()
    )
    assert receipt.session is not None
    run = run_finished(receipt.session, config={**TIGHT_BUDGET, "preserve_recent_turns": 10})

    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()

    assert run.tokens_after is not None
    over = run.tokens_after - 8192
    assert over > 0
    warning = text_of(html[html.index("data-over-limit>") + len("data-over-limit>") :])
    percent = f"{run.tokens_after / 8192 * 100:.1f} %"
    assert warning.startswith(
        f"Still over the window by {over:,} tokens after this run ({percent} of 8,192)."
    )
    assert "What is left is what this policy may not remove" in warning
    assert "it keeps the 10 most recent turns" in warning


def test_the_editor_preview_warns_when_the_session_stays_over_the_window(
    client: Client, project: Project
) -> None:
    shape = SessionShape(turns=12, user_chars=2000, model_chars=2000, tool_every=0, seed=3)
    document = generate_session_file(shape)
    document["connection"]["model"] = "gpt-4"
    receipt = background.session_upload(
        project=project, filename="big.json", data=json.dumps(document).encode()
    )
    assert receipt.session is not None
    form = form_data({**TIGHT_BUDGET, "preserve_recent_turns": 10})

    html = client.post(
        reverse("policy_preview"), {**form, "session": receipt.session.pk}
    ).content.decode()

    assert "Still over the window by" in html
    assert "after this collection" in html
    assert "it keeps the 10 most recent turns" in html


def test_the_editor_preview_with_nothing_to_remove_says_why(
    client: Client, stored_session: AgentSession
) -> None:
    html = client.post(
        reverse("policy_preview"), form_data(RELAXED, session=stored_session.pk)
    ).content.decode()

    text = text_of(html)
    assert "Nothing to remove: usage is already at or below the policy's 60 % target" in text
    assert "this is what a manual run would remove" not in text


def test_a_run_names_its_policy_after_the_policy_is_deleted(
    client: Client, finished_run: GCRun, budget_policy: Policy
) -> None:
    services.item_delete(item=budget_policy)

    text = text_of(client.get(reverse("run_detail", args=[finished_run.pk])).content.decode())

    assert "Policy Tight budget v1 (deleted since)" in text
    assert "pasted" not in text
