"""Policies and sessions the policy editor's tests share (plain values and helpers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jaato_web.dashboard import background
from jaato_web.dashboard.models import AgentSession, Project
from jaato_web.pages.policies_forms import form_values
from tests.web.uploads import session_file

GC_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gc"
# JAATO's two shipped gc.json files and the design document's shape (reference 2.2).
JAATO_REPO_FILE = GC_FIXTURES / "jaato_repo_gc.json"
JAATO_TUI_EXAMPLE_FILE = GC_FIXTURES / "jaato_tui_example_gc.json"
DESIGN_SHAPE_FILE = GC_FIXTURES / "design_shape_gc.json"

TRUNCATE_POLICY: dict[str, Any] = {
    "type": "truncate",
    "threshold_percent": 80,
    "target_percent": 40,
    "pressure_percent": 90,
    "preserve_recent_turns": 2,
}
BUDGET_POLICY: dict[str, Any] = {
    "type": "budget",
    "threshold_percent": 80,
    "target_percent": 30,
    "pressure_percent": 90,
    "preserve_recent_turns": 2,
}


def gc_file(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def stored_session(project: Project, turns: int = 20, seed: int = 1) -> AgentSession:
    receipt = background.session_upload(
        project=project, filename=f"agent-{turns}-{seed}.json", data=session_file(turns, seed=seed)
    )
    assert receipt.session is not None
    return receipt.session


def form_data(config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """What the editor posts for ``config``: checkboxes only when ticked, blanks as ''."""
    data: dict[str, Any] = {}
    for key, value in form_values(config).items():
        if value is True:
            data[key] = "on"
        elif value is False or value is None:
            if value is None:
                data[key] = ""
        else:
            data[key] = value
    return {**data, **extra}
