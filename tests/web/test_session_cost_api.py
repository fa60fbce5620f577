"""A whole session's recorded cost through the API: every call of every context, the agent's
own compaction call from the uploaded ``subagents`` folder, priced with the project's table."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import Project

pytestmark = pytest.mark.django_db

SPOTTER = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "spotter"
NAME = "258c7280-ae70-4798-800f-63464d01a85d"


def zipped_with_subagents() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(SPOTTER / f"{NAME}.jsonl", f"{NAME}.jsonl")
        for agent in sorted((SPOTTER / NAME / "subagents").glob("agent-*.jsonl")):
            archive.write(agent, f"{NAME}/subagents/{agent.name}")
    return buffer.getvalue()


def test_the_api_prices_every_call_with_the_projects_table(
    client: Client, project: Project, settings: Any
) -> None:
    settings.JAATO_INLINE_INGEST_BYTES = 10 * 1024 * 1024  # read now, not by a worker
    receipt = background.session_upload(
        project=project, filename=f"{NAME}.zip", data=zipped_with_subagents()
    )
    assert receipt.session is not None
    answer = client.get(f"/api/sessions/{receipt.session.pk}/cost")
    assert answer.status_code == 200
    data = answer.json()
    cost = data["cost"]
    assert cost["contexts"] == 2
    assert cost["agent"]["calls"] == 152
    assert cost["compaction"]["calls"] == 1
    assert cost["compaction"]["cache_read_tokens"] == 166_758
    assert cost["total"]["calls"] == 156
    assert cost["total"]["dollars"] > 0
    assert all(p["source"].startswith("https://") and p["as_of"] for p in data["prices"])

    # The project's own table prices it: Opus at twice the default, the total follows.
    table = [p.model_dump() for p in services.project_prices(project)]
    for row in table:
        if row["model"] == "claude-opus-4":
            for key in ("input_per_mtok", "cache_write_per_mtok", "cache_read_per_mtok"):
                row[key] *= 2
            row["output_per_mtok"] *= 2
    services.project_quality_save(project=project, gates=None, prices=table)
    again = client.get(f"/api/sessions/{receipt.session.pk}/cost").json()["cost"]
    assert again["agent"]["dollars"] == pytest.approx(2 * cost["agent"]["dollars"])


def test_the_session_page_shows_the_whole_sessions_cost(
    client: Client, project: Project, settings: Any
) -> None:
    settings.JAATO_INLINE_INGEST_BYTES = 10 * 1024 * 1024
    receipt = background.session_upload(
        project=project, filename=f"{NAME}.zip", data=zipped_with_subagents()
    )
    assert receipt.session is not None
    html = client.get(reverse("session_detail", args=[receipt.session.pk])).content.decode()
    table = html[html.index("data-session-cost") :]
    table = table[: table.index("</table>")]
    rows = {
        label: table[table.index(f">{label}</th>") :].split("</tr>")[0]
        for label in ("The agent", "Its compaction call", "Its sub-agents", "Total")
    }
    assert '<td class="num">152</td>' in rows["The agent"]
    assert '<td class="num">1</td>' in rows["Its compaction call"]
    assert '<td class="num">156</td>' in rows["Total"]
    api = client.get(f"/api/sessions/{receipt.session.pk}/cost").json()["cost"]
    assert f"${api['total']['dollars']:.4f}" in rows["Total"]
