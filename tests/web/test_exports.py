"""Exports are compact: a collected session downloads as one line of JSON and uploads again."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, GCRun, Project

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "run_export_session",
        "api:run_session_export",
        "run_export_ledger_json",
        "api:run_ledger_json",
    ],
)
def test_json_exports_are_compact(client: Client, finished_run: GCRun, url: str) -> None:
    body = client.get(reverse(url, args=[finished_run.pk])).content.decode()

    assert "\n" not in body
    assert json.loads(body)


def test_an_exported_session_uploads_again(client: Client, finished_run: GCRun) -> None:
    exported = client.get(reverse("run_export_session", args=[finished_run.pk])).content

    answer = client.post(
        "/api/sessions/uploads", {"files": [SimpleUploadedFile("collected.json", exported)]}
    )

    assert answer.json()["results"][0]["state"] == "stored"
    collected = AgentSession.objects.get(label="collected.json")
    assert collected.turn_count == finished_run.turns_after


SPOTTER = Path(__file__).parents[1] / "fixtures" / "formats" / "spotter"
CLAUDE_CODE_FILE = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
TIGHT_BUDGET = {
    "type": "gc_budget",
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 90,
    "preserve_recent_turns": 1,
}


def test_a_collected_claude_code_session_exports_as_a_transcript_that_uploads_again(
    client: Client, project: Project, run_finished: Callable[..., GCRun], settings: Any
) -> None:
    settings.JAATO_INLINE_INGEST_BYTES = 10 * 1024 * 1024  # read now, not by a worker
    stored = background.session_upload(
        project=project, filename=CLAUDE_CODE_FILE.name, data=CLAUDE_CODE_FILE.read_bytes()
    ).session
    assert stored is not None
    run = run_finished(stored, config=TIGHT_BUDGET, context_limit=30_000)
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()

    exported = client.get(reverse("run_export_source", args=[run.pk]))
    from_api = client.get(reverse("api:run_session_export", args=[run.pk]), {"source_format": True})

    assert "data-source-export" in page
    assert exported.status_code == 200
    assert exported["Content-Disposition"].endswith('.gc.jsonl"')
    assert from_api.content == exported.content
    assert len(exported.content) < CLAUDE_CODE_FILE.stat().st_size / 4
    answer = client.post(
        "/api/sessions/uploads",
        {"files": [SimpleUploadedFile("collected.jsonl", exported.content)]},
    )
    assert answer.json()["results"][0]["state"] == "stored"
    again = AgentSession.objects.get(label="collected.jsonl")
    assert again.source_format == "claude_code"
    after = services.session_after_of(run)
    assert after is not None
    assert again.message_count == len(after.history)


def test_a_session_whose_format_cannot_hold_it_is_not_offered_in_its_format(
    client: Client, finished_run: GCRun
) -> None:
    page = client.get(reverse("run_detail", args=[finished_run.pk])).content.decode()

    assert "data-source-export" not in page
    assert client.get(reverse("run_export_source", args=[finished_run.pk])).status_code == 404
    answer = client.get(
        reverse("api:run_session_export", args=[finished_run.pk]), {"source_format": True}
    )
    assert answer.status_code == 409
