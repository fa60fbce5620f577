"""An agent transcript whose tool calls and results lost their other half, uploaded through the
page and the API: both say where each broken pair is, and how many there are."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard.models import AgentSession, Project
from tests.engine.agent_transcripts import Breakage, Shape, generated_claude_code_rows, jsonl

pytestmark = pytest.mark.django_db

HEADING = "Tool calls and results that lost their other half"


def broken_transcript(breakage: Breakage) -> bytes:
    """A generated Claude Code transcript (not a real one) whose first tool turn, the session's
    first turn, calls two tools at once and then loses both results (``unanswered``) or both
    calls (``orphan``)."""
    rows = generated_claude_code_rows(Shape(turns=5, parallel=True, break_pairs=breakage, seed=3))
    return jsonl(rows).encode()


def listed_problems(html: str) -> tuple[str, list[str]]:
    """The heading of the page's broken-pairs list and its items, as a reader sees them."""
    start = html.index('id="tool-pairs"')
    end = html.index("</ul>", start)
    text = [
        " ".join(html_lib.unescape(re.sub(r"<[^>]+>", "", item)).split())
        for item in re.findall(r"<li>(.*?)</li>", html[start:end], re.S)
    ]
    heading = html[html.index(">", start) + 1 : html.index("</h3>", start)]
    return heading, text


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (
            "unanswered",
            [
                "A call with no result: read_file, call call_3_0_0, turn 1",
                "A call with no result: run_tests, call call_3_0_1, turn 1",
            ],
        ),
        (
            "orphan",
            [
                "A result with no call: call call_3_0_0, turn 1",
                "A result with no call: call call_3_0_1, turn 1",
            ],
        ),
    ],
)
def test_the_upload_page_leads_to_the_broken_pairs_on_the_session_page(
    client: Client, project: Project, breakage: Breakage, expected: list[str]
) -> None:
    answer = client.post(
        reverse("session_upload"),
        {"files": SimpleUploadedFile("broken.jsonl", broken_transcript(breakage))},
    )
    session = AgentSession.objects.get()

    html = client.get(reverse("session_detail", args=[session.pk])).content.decode()

    assert answer.status_code == 200
    assert session.source_format == "claude_code"
    heading, items = listed_problems(html)
    assert heading == f"{HEADING} (2)"
    assert [item.split(", message ")[0] for item in items] == expected
    problems = session.agent_state["tool_pair_problems"]
    assert [item.split(", message ")[1] for item in items] == [p["message_id"] for p in problems]


@pytest.mark.parametrize("breakage", ["unanswered", "orphan"])
def test_the_api_counts_and_locates_each_broken_pair(
    client: Client, project: Project, breakage: Breakage
) -> None:
    uploaded = client.post(
        "/api/sessions", {"file": SimpleUploadedFile("broken.jsonl", broken_transcript(breakage))}
    )
    session_id = uploaded.json()["session"]["id"]

    state = client.get(f"/api/sessions/{session_id}").json()["agent_state"]

    kind = "unanswered_call" if breakage == "unanswered" else "orphan_result"
    assert uploaded.status_code == 201
    assert state["tool_pair_problem_count"] == 2
    assert [(p["kind"], p["call_id"], p["turn"]) for p in state["tool_pair_problems"]] == [
        (kind, "call_3_0_0", 1),
        (kind, "call_3_0_1", 1),
    ]


def test_a_whole_transcript_reports_no_broken_pair(client: Client, project: Project) -> None:
    """A user speaking between a call and its result parts nothing."""
    uploaded = client.post(
        "/api/sessions",
        {"file": SimpleUploadedFile("whole.jsonl", broken_transcript("interleaved"))},
    )
    session_id = uploaded.json()["session"]["id"]

    state = client.get(f"/api/sessions/{session_id}").json()["agent_state"]
    html = client.get(reverse("session_detail", args=[session_id])).content.decode()

    assert state["tool_pair_problem_count"] == 0
    assert state["tool_pair_problems"] == []
    assert HEADING not in html
