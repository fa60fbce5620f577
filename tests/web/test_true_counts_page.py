"""The session page of a real Claude Code session says where its window came from and shows
the provider's counting beside the local estimate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard import background
from jaato_web.dashboard.models import Project
from tests.engine.agent_transcripts import Shape, generated_claude_code_rows

pytestmark = pytest.mark.django_db

REAL = (
    Path(__file__).parent.parent
    / "fixtures"
    / "formats"
    / "spotter"
    / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)


def test_the_page_names_the_window_source_and_both_counts(
    client: Client, project: Project, settings: Any
) -> None:
    settings.JAATO_INLINE_INGEST_BYTES = len(REAL.read_bytes()) + 1  # read in the request
    receipt = background.session_upload(project=project, filename=REAL.name, data=REAL.read_bytes())
    session = receipt.session
    assert session is not None, receipt
    assert session.context_limit == 200_000
    html = client.get(reverse("session_detail", args=[session.pk])).content.decode()
    assert "(known limit of the model)" in html
    # Why, in a sentence under the figures (the figure itself stays short).
    why = html[html.index('id="window-source"') :].split("</p>", 1)[0]
    assert "Why this window: model table: claude-opus-4-6 runs in 200,000 tokens" in why
    assert "the agent auto-compacted at 167,094 tokens" in why
    estimate = session.drift["local_estimate"]
    assert estimate["local_counter"] == "tiktoken:cl100k_base"
    assert estimate["scaled_tokens"] > estimate["local_tokens"]
    assert f"scaled by <strong>{estimate['scale']}</strong>" in html
    assert f"as counted locally: {estimate['local_tokens']:,}" in html
    assert f"{estimate['unseen_overhead']:,} tokens of system prompt, tool definitions" in html
    # The context set beside the provider's last prompt holds what the file does not.
    drift = session.drift
    assert drift["counted_context_tokens"] == session.total_tokens
    assert (
        abs(drift["counted_context_tokens"] - drift["provider_prompt_tokens"])
        < 0.1 * (drift["provider_prompt_tokens"])
    )
    assert f"of which {estimate['unseen_overhead']:,} the file does not hold" in html


def test_a_tried_window_reaches_the_planner_and_the_runs_links(
    client: Client, project: Project
) -> None:
    rows = generated_claude_code_rows(Shape(turns=12, compact_after=(6,)))
    data = "\n".join(json.dumps(row) for row in rows).encode()
    receipt = background.session_upload(project=project, filename="generated.jsonl", data=data)
    session = receipt.session
    assert session is not None
    page = reverse("session_detail", args=[session.pk])
    html = client.get(page, {"window": 50_000}).content.decode()
    plan = f"{reverse('session_plan', args=[session.pk])}?context_length=50000"
    assert f'href="{plan}"' in html
    assert "Plan the next request in 50,000 tokens" in html
    assert 'href="?window=50000&amp;archived_runs=1#runs-heading"' in html
    planned = client.get(plan).content.decode()
    assert 'name="context_length" value="50000"' in planned
    own = client.get(page).content.decode()
    assert f'href="{reverse("session_plan", args=[session.pk])}"' in own
