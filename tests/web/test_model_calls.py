"""A real Claude Code session on its page, call by call: the usage chart per model call with
the drop at its compaction and the sizes either side, the table of calls, the size after the
compaction from the first call after it, the window tried reaching a replay at the
compaction, and "Go to turn" taking the turn numbers the history shows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, GCRun, Policy, Project, Replay
from tests.web.uploads import BUDGET_POLICY

pytestmark = pytest.mark.django_db

SPOTTER = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "spotter"
# A manual compaction at preTokens 142,431 after 138 of its 217 calls; the first call after
# it sent 3 + 23,812 (cache write) + 21,448 (cache read) tokens.
MANUAL = "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


@pytest.fixture
def real(project: Project, settings: Any) -> AgentSession:
    settings.JAATO_INLINE_INGEST_BYTES = 10 * 1024 * 1024  # read it now, not in a job
    receipt = background.session_upload(
        project=project, filename=MANUAL, data=(SPOTTER / MANUAL).read_bytes()
    )
    assert receipt.session is not None
    return receipt.session


@pytest.fixture
def policy(project: Project) -> Policy:
    return services.policy_create(project=project, name="Budget", config=BUDGET_POLICY)


def test_the_usage_chart_is_drawn_per_call_with_the_drop_at_the_compaction(
    client: Client, real: AgentSession
) -> None:
    html = client.get(reverse("session_detail", args=[real.pk])).content.decode()

    start = html.index("data-usage-chart")
    chart = html[start : html.index("</figure>", start)]
    assert ">call 1<" in chart
    assert ">call 217<" in chart
    assert "the agent's recorded usage, call by call" in chart
    # The drop, and its sizes written beside it: the agent's own before, the first call after.
    assert re.search(r"data-compaction-sizes[^>]*>142,431 → 45,263<", chart)
    assert "after call 138, from 142,431 to 45,263 tokens" in chart
    assert "the size after it is the input of call 139" in chart
    # The agent's line has a point a call, its lowest after the compaction.
    points = re.search(r'class="usage-chart__agent" points="([^"]+)"', chart)
    assert points is not None
    assert len(points.group(1).split()) == 217


def test_the_compaction_reads_the_size_after_it_from_the_first_call_after(
    client: Client, real: AgentSession
) -> None:
    html = client.get(reverse("session_detail", args=[real.pk])).content.decode()

    (compaction,) = real.agent_state["compactions"]
    assert (compaction["tokens_after"], compaction["tokens_after_source"]) == (
        3 + 23_812 + 21_448,
        "first call after",
    )
    assert "142,431 → ? tokens" not in html
    assert "142,431 → 45,263 tokens as recorded (the size after it is the input of the" in html


def test_the_table_of_calls_is_paged_and_shows_the_compaction_between_calls(
    client: Client, real: AgentSession
) -> None:
    url = reverse("session_detail", args=[real.pk])
    first = client.get(url).content.decode()
    second = client.get(url, {"calls": 2}).content.decode()
    htmx = client.get(url, {"calls": 3}, headers={"HX-Request": "true"} | _target()).content

    assert "Each model call (217)" in first
    table = first[first.index("data-model-calls") : first.index("</table>")]
    assert table.count("<tr>") == 1 + 100  # the head and a page of calls
    # Call 1: 3 uncached, 17,842 read from the cache, 8,165 written to it, 209 out.
    assert re.search(
        r"<td>1</td><td>1</td><td class=\"num\">26,010</td><td class=\"num\">3</td>"
        r"<td class=\"num\">17,842</td><td class=\"num\">8,165</td><td class=\"num\">209</td>",
        table,
    )
    assert '<details class="model-calls" id="model-calls" open>' in second
    assert "The agent compacted here (manual): 142,431 → 45,263 tokens" in second
    assert b"<td>217</td>" in htmx
    assert b"<html" not in htmx


def _target() -> dict[str, str]:
    return {"HX-Target": "model-call-list"}


def test_go_to_turn_takes_the_turn_numbers_the_history_shows(
    client: Client, real: AgentSession
) -> None:
    """After the compaction the history's turns are numbered as the turns they continue: the
    field takes the first to the last number the history shows, and the page goes to each."""
    url = reverse("session_detail", args=[real.pk])
    html = client.get(url).content.decode()
    shown = sorted({int(n) for n in re.findall(r'id="turn-(\d+)"', html)})
    first, last = shown[0], shown[-1]

    assert f'name="turn" type="number" min="{first}" max="{last}" required' in html
    answer = client.get(url, {"turn": last})
    assert answer.status_code == 302
    assert answer["Location"].endswith(f"#turn-{last}")
    refused = client.get(url, {"turn": last + 1}, follow=True).content.decode()
    assert f"has no turn {last + 1}: its turns run from {first} to {last}." in refused


def test_replay_and_run_at_the_compaction_carry_the_window_tried(
    client: Client,
    real: AgentSession,
    policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    html = client.get(reverse("session_detail", args=[real.pk]), {"window": 80_000})
    page = html.content.decode()
    form = page[page.index('class="inline-form compaction-try"') :]
    form = form[: form.index("</form>")]
    assert '<input type="hidden" name="window" value="80000">' in form
    assert "Replay it there against 80,000 tokens" in form

    (compaction,) = real.agent_state["compactions"]
    fields = {"policy_version": policy.versions.get().pk, "compaction": compaction["id"]}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("replay_create", args=[real.pk]), fields | {"window": 80_000})
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("run_create", args=[real.pk]), fields | {"window": 80_000})

    replay = Replay.objects.get(session=real)
    assert (replay.compaction_id, replay.context_limit) == (compaction["id"], 80_000)
    assert GCRun.objects.get(session=real).context_limit == 80_000
    # The replay beside the agent: call by call up to the compaction, the policy's checks
    # before each of the agent's calls, its first collection named by its call.
    detail = client.get(reverse("replay_detail", args=[replay.pk])).content.decode()
    start = detail.index("data-usage-chart")
    chart = detail[start : detail.index("</figure>", start)]
    assert ">call 138<" in chart
    assert ">call 217<" not in chart
    assert "the same calls would have kept the context between" in chart
    assert re.search(
        r"At call 138 the agent sent 141,787 tokens \(as the provider counted\); under .+ "
        r"the context there would have held [\d,]+ tokens \(counted here\)\.",
        chart,
    )
    assert re.search(r"<td>before call \d+</td>", detail)
