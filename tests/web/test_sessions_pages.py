"""The sessions list and the session page: full pages and their htmx fragments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

import gcengine
from gcengine.synthetic import SessionShape, generate_session_file
from jaato_web.dashboard import background, selectors, services, storage
from jaato_web.dashboard.models import AgentSession, Policy, Project
from tests.web.conftest import session_bytes

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parents[3] / "shared" / "reference" / "examples"

HTMX = {"HX-Request": "true"}


def upload(project: Project, name: str, turns: int, seed: int) -> AgentSession:
    data = session_bytes(SessionShape(turns=turns, user_chars=200, model_chars=200, seed=seed))
    receipt = background.session_upload(project=project, filename=name, data=data)
    assert receipt.session is not None
    return receipt.session


def test_root_redirects_to_the_sessions_list(client: Client) -> None:
    response = client.get("/")

    assert response.status_code == 302
    assert response["Location"] == reverse("session_list")


def test_empty_list_says_so_and_links_to_upload(client: Client, project: Project) -> None:
    response = client.get(reverse("session_list"))

    html = response.content.decode()
    assert response.status_code == 200
    assert "No sessions yet" in html
    assert f'href="{reverse("session_upload")}"' in html


def test_list_shows_each_session_with_its_figures(
    client: Client, stored_session: AgentSession
) -> None:
    response = client.get(reverse("session_list"))

    html = response.content.decode()
    assert f'href="{reverse("session_detail", args=[stored_session.pk])}"' in html
    assert "small-session.json" in html
    assert "claude-sonnet-4" in html
    assert "jaato 2.1" in html
    assert f"{stored_session.total_tokens:,}" in html
    assert re.search(r'<meter[^>]*value="1\.07\d*"', html), "utilization as a <meter>"
    assert "<html" in html


def test_search_answers_htmx_with_the_table_only(client: Client, project: Project) -> None:
    upload(project, "alpha-agent.json", 2, seed=1)
    upload(project, "beta-agent.json", 2, seed=2)

    response = client.get(reverse("session_list"), {"q": "alpha"}, headers=HTMX)

    html = response.content.decode()
    assert "<html" not in html
    assert 'id="session-table"' in html
    assert "alpha-agent.json" in html
    assert "beta-agent.json" not in html
    assert "HX-Request" in response["Vary"]


def test_search_without_matches_says_so(client: Client, stored_session: AgentSession) -> None:
    html = client.get(reverse("session_list"), {"q": "nothing-like-it"}).content

    assert "No session matches “nothing-like-it”" in html.decode()


@pytest.mark.parametrize(
    ("sort", "first"),
    [("turns", "long.json"), ("name", "a-short.json"), ("oldest", "a-short.json")],
)
def test_sorting(client: Client, project: Project, sort: str, first: str) -> None:
    upload(project, "a-short.json", 2, seed=1)
    upload(project, "long.json", 5, seed=2)

    html = client.get(reverse("session_list"), {"sort": sort}).content.decode()

    names = re.findall(r">([\w-]+\.json)</a>", html)
    assert names[0] == first


def test_pagination_keeps_search_and_sort(
    client: Client, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "SESSIONS_PER_PAGE", 2)
    for seed in range(3):
        upload(project, f"agent-{seed}.json", 2, seed=seed)

    first = client.get(reverse("session_list"), {"q": "agent", "sort": "name"})
    second = client.get(reverse("session_list"), {"q": "agent", "sort": "name", "page": "2"})

    assert "Page 1 of 2" in first.content.decode()
    assert "?q=agent&amp;sort=name&amp;page=2" in first.content.decode()
    assert re.findall(r">(agent-\d\.json)</a>", second.content.decode()) == ["agent-2.json"]


def test_session_page_shows_figures_usage_and_budget(
    client: Client, stored_session: AgentSession
) -> None:
    response = client.get(reverse("session_detail", args=[stored_session.pk]))

    html = response.content.decode()
    assert response.status_code == 200
    for figure in ("jaato 2.1", "claude-sonnet-4", stored_session.token_counter, "200,000"):
        assert figure in html
    assert "known limit of the model" in html
    assert f"{stored_session.turn_count}</dd>" in html
    assert f"{stored_session.message_count}</dd>" in html
    # The stacked usage bar: one rect per share, widths as attributes, figures in text too.
    assert re.search(
        r'class="usage-bar__part usage-bar__part--locked" x="0\.0" width="[\d.]+"', html
    )
    assert "usage-bar__part--eligible" in html
    assert f"locked {stored_session.locked_tokens:,}" in html
    assert f"eligible for GC {stored_session.eligible_tokens:,}" in html
    # Top-level sources of the budget, the conversation openable, and the legend.
    assert "Conversation" in html
    assert re.search(r'aria-expanded="false" aria-controls="tree-children-[\w-]+"', html)
    for tier in ("locked", "preservable", "partial", "conditional", "ephemeral"):
        assert f"</svg> {tier}</dt>" in html
    assert "never collected" in html


def test_session_page_has_no_inline_styles_or_scripts(
    client: Client, stored_session: AgentSession
) -> None:
    html = client.get(reverse("session_detail", args=[stored_session.pk])).content

    text = html.decode()
    assert "style=" not in text
    assert "<style" not in text
    assert "hx-on" not in text
    for script in re.findall(r"<script[^>]*>", text):
        assert "src=" in script, script


def test_budget_children_open_lazily_in_slices(
    client: Client, stored_session: AgentSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "NODES_PER_PAGE", 5)
    url = reverse("session_tree", args=[stored_session.pk])

    first = client.get(url, {"path": "conversation"}, headers=HTMX).content.decode()
    rest = client.get(url, {"path": "conversation", "offset": "5"}, headers=HTMX).content.decode()

    assert "<html" not in first
    assert first.count('class="tree-node"') == 5
    assert "turn_1" in first
    assert "Load more entries" in first
    assert "offset=5" in first
    assert rest.count('class="tree-node"') == 3  # 8 turns in all
    assert "Load more entries" not in rest


def test_tree_of_another_project_is_not_found(client: Client, stored_session: AgentSession) -> None:
    other = Project.objects.create(name="Other", slug="other")
    AgentSession.objects.filter(pk=stored_session.pk).update(project=other)

    response = client.get(reverse("session_tree", args=[stored_session.pk]))

    assert response.status_code == 404


def test_history_shows_turns_messages_and_folded_tool_calls(
    client: Client, stored_session: AgentSession
) -> None:
    html = client.get(reverse("session_detail", args=[stored_session.pk])).content

    text = html.decode()
    # JAATO's numbering: the first turn is turn 1, as in its logs and budget labels.
    assert "Turn 1</h3>" in text
    assert "Turn 8</h3>" in text
    assert "Turn 0</h3>" not in text
    assert '<span class="message__role">user</span>' in text
    assert '<span class="message__role">tool</span>' in text
    assert re.search(r"<summary>Tool call: \w+</summary>", text)
    assert re.search(r"<summary>Tool result: \w+</summary>", text)
    assert 'class="indicator policy-locked"' in text  # the first request is locked


def test_history_pages_through_htmx(
    client: Client, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "TURNS_PER_PAGE", 3)
    session = upload(project, "paged.json", 7, seed=3)
    url = reverse("session_detail", args=[session.pk])

    response = client.get(url, {"turns": "3"}, headers={**HTMX, "HX-Target": "history"})

    html = response.content.decode()
    assert "<html" not in html
    assert html.startswith('<div id="history"') or '<div id="history"' in html[:200]
    assert "Turn 7</h3>" in html
    assert "Turn 6</h3>" not in html
    assert "Page 3 of 3" in html
    assert "HX-Target" in response["Vary"]


def test_history_clipped_content_says_so(client: Client, project: Project) -> None:
    data = session_bytes(SessionShape(turns=3, tool_result_chars=9000, tool_every=1, seed=5))
    session = background.session_upload(project=project, filename="big-tool.json", data=data)
    assert session.session is not None

    html = client.get(reverse("session_detail", args=[session.session.pk])).content

    assert "Clipped: showing the first 4,000 of" in html.decode()


def test_pinned_badge_follows_the_default_policy(
    client: Client, stored_session: AgentSession, project: Project
) -> None:
    policy = services.policy_create(
        project=project, name="Pins", config={"type": "gc_budget", "pinned_turn_indices": [2]}
    )
    services.project_set_default_policy(project=project, policy=policy)

    html = client.get(reverse("session_detail", args=[stored_session.pk])).content

    text = html.decode()
    assert text.count(">pinned by Pins<") == 1
    turn_3 = text.index("Turn 3</h3>")  # index 2 in gc.json, turn 3 as JAATO numbers it
    assert ">pinned by Pins<" in text[turn_3 : turn_3 + 900]
    assert "The default policy, Pins, pins turn 3 in every session it runs on." in text


def test_message_content_is_escaped(client: Client, project: Project) -> None:
    file = generate_session_file(SessionShape(turns=1, tool_every=0, seed=4))
    file["history"][0]["parts"][0]["text"] = "<script>alert(1)</script>"
    file["history"][1]["parts"][0]["text"] = "<b>bold</b>"
    receipt = background.session_upload(
        project=project, filename="<i>name</i>.json", data=json.dumps(file).encode()
    )
    assert receipt.session is not None

    html = client.get(reverse("session_detail", args=[receipt.session.pk])).content

    text = html.decode()
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<b>bold</b>" not in text
    assert "<i>name</i>" not in text


def _page(client: Client, project: Project, name: str, data: bytes) -> str:
    receipt = background.session_upload(project=project, filename=name, data=data)
    assert receipt.session is not None
    return client.get(reverse("session_detail", args=[receipt.session.pk])).content.decode()


def test_a_file_without_figures_says_every_message_was_counted_here(
    client: Client, stored_session: AgentSession
) -> None:
    html = client.get(reverse("session_detail", args=[stored_session.pk])).content.decode()

    assert "The file records no figure for a single message" in html
    assert "were <strong>counted here</strong>" in html
    assert "recorded by the agent" not in html
    assert "matches the count" not in html


def test_recorded_figures_are_compared_and_their_source_said(
    client: Client, project: Project
) -> None:
    data = session_bytes(SessionShape(turns=4, with_budget_state=True, seed=8))

    text = _page(client, project, "recorded.json", data)

    assert "were <strong>recorded by the agent</strong> in the file" in text
    assert "counted again here with" in text
    assert "Recorded in the file" in text
    assert "Largest differences" in text or "matches the count" in text
    assert "The file records no figure for a single message" not in text


def test_jaatos_own_files_say_what_is_recorded_and_what_counted(
    client: Client, project: Project
) -> None:
    text = _page(client, project, "v21.json", (EXAMPLES / "jaato_session_v2.1.json").read_bytes())

    assert "79 were <strong>recorded by the agent</strong> in the file (5 messages)" in text
    assert "23 were <strong>counted here</strong>" in text
    assert "an estimate" in text  # claude-sonnet-4 is counted with another model's vocabulary
    assert "records the provider's usage per turn for 2 turns" in text


def test_a_snapshot_says_every_figure_is_jaatos(client: Client, project: Project) -> None:
    data = (EXAMPLES / "jaato_budget_snapshot.json").read_bytes()

    text = _page(client, project, "snapshot.json", data)

    assert "every figure on this page is the one JAATO recorded; nothing is counted here" in text
    assert "there is nothing to count again" in text
    assert "counted here</strong>" not in text
    assert "an estimate" not in text


def test_warnings_are_listed(client: Client, stored_session: AgentSession) -> None:
    AgentSession.objects.filter(pk=stored_session.pk).update(
        warnings=["3 messages had no id; ids were derived"]
    )

    html = client.get(reverse("session_detail", args=[stored_session.pk])).content

    assert "<li>3 messages had no id; ids were derived</li>" in html.decode()


def test_runs_of_the_session_are_listed_with_a_run_form(
    client: Client, finished_run, budget_policy: Policy
) -> None:
    session = finished_run.session

    html = client.get(reverse("session_detail", args=[session.pk])).content.decode()

    assert f'href="{reverse("run_detail", args=[finished_run.pk])}"' in html
    assert "gc_budget" in html
    assert "Tight budget" in html
    assert f"{finished_run.tokens_before:,} → {finished_run.tokens_after:,}" in html
    assert "Tight budget (version 1)" in html  # offered in the run form
    assert 'name="gc_json"' in html
    assert '<option value="gc_truncate">' in html


def test_each_form_label_of_the_session_page_names_its_own_field(
    client: Client, stored_session: AgentSession, budget_policy: Policy
) -> None:
    # The run form and the replay form both have a policy_version field.
    html = client.get(reverse("session_detail", args=[stored_session.pk])).content

    ids = re.findall(r'\sid="([^"]+)"', html.decode())
    assert [i for i in set(ids) if ids.count(i) > 1] == []
    for target in re.findall(r'<label for="([^"]+)"', html.decode()):
        assert target in ids, target


def test_unknown_session_is_not_found(client: Client, project: Project) -> None:
    assert client.get(reverse("session_detail", args=[999])).status_code == 404


def test_budget_snapshot_without_history(client: Client, project: Project) -> None:
    engine_session = gcengine.load_session(generate_session_file(SessionShape(turns=3)))
    data = json.dumps(engine_session.budget.snapshot()).encode()
    receipt = background.session_upload(project=project, filename="snapshot.json", data=data)
    assert receipt.session is not None

    response = client.get(reverse("session_detail", args=[receipt.session.pk]))

    html = response.content.decode()
    assert response.status_code == 200
    assert "jaato_budget_snapshot" in html
    assert "This session has no history" in html
    assert "Conversation" in html or "conversation" in html


def test_go_to_turn_opens_the_page_holding_it(client: Client, project: Project) -> None:
    receipt = background.session_upload(
        project=project, filename="long.json", data=session_bytes(SessionShape(turns=60, seed=2))
    )
    assert receipt.session is not None
    url = reverse("session_detail", args=[receipt.session.pk])

    found = client.get(url, {"turn": "51", "window": "9000"})
    missing = client.get(url, {"turn": "61"}, follow=True)

    assert found.status_code == 302
    assert found["Location"] == f"{url}?window=9000&turns=3#turn-51"
    page = client.get(found["Location"]).content.decode()
    assert 'id="turn-51"' in page
    assert "long.json has no turn 61: its turns run from 1 to 60." in missing.content.decode()


@pytest.mark.parametrize(
    "data",
    [
        json.dumps(gcengine.generate_demo_session(gcengine.DemoShape(turns=40, seed=3))).encode(),
        (EXAMPLES / "jaato_session_v2.1.json").read_bytes(),
        (EXAMPLES / "jaato_budget_snapshot.json").read_bytes(),
    ],
    ids=["demo", "jaato-2.1", "snapshot"],
)
def test_recorded_and_counted_figures_add_up_to_the_session_total(data: bytes) -> None:
    engine = gcengine.load_session(data)

    figures = storage.figure_sources(engine)

    assert figures["recorded_tokens"] + figures["counted_tokens"] == engine.budget.total_tokens()
    # A copied budget has no index: its tree is walked, and tells the same.
    walked = engine.model_copy(update={"budget": engine.budget.model_copy(deep=True)})
    assert storage.figure_sources(walked) == figures


def test_each_message_says_whether_its_figure_was_recorded_or_counted(
    client: Client, project: Project
) -> None:
    text = _page(client, project, "v21.json", (EXAMPLES / "jaato_session_v2.1.json").read_bytes())

    assert text.count('title="The figure the agent recorded in the file">recorded<') == 5
    assert text.count('title="Counted here with tiktoken:cl100k_base">counted<') == 1
