"""Exports are compact: a collected session downloads as one line of JSON and uploads again."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard.models import AgentSession, GCRun

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
