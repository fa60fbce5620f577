"""``jaato-gc`` against a live dashboard: a token opens it, refusals come back as exit codes
with the dashboard's message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_django.live_server_helper import LiveServer

from jaato_web import client as jaato_gc
from jaato_web.dashboard.models import AuditEvent, Project
from jaato_web.teams import services as team_services
from jaato_web.teams.permissions import Role
from tests.web.conftest import make_member
from tests.web.uploads import BUDGET_POLICY, session_file

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cli(live_server: LiveServer, monkeypatch: pytest.MonkeyPatch, project: Project):
    """Run jaato-gc as ``ed``, an editor of the default project, with a fresh token."""
    ed = make_member(project, "ed", Role.EDITOR)
    monkeypatch.setenv(
        "JAATO_TOKEN", team_services.token_create(user=ed, name="ci", projects=[project]).secret
    )
    monkeypatch.setenv("JAATO_URL", live_server.url)
    return jaato_gc.main


def test_upload_run_and_read_the_ledger(cli, tmp_path: Path, capsys, project):
    session_path = tmp_path / "agent.json"
    session_path.write_bytes(session_file(20))
    config_path = tmp_path / "gc.json"
    config_path.write_text(json.dumps(BUDGET_POLICY))

    assert cli(["upload", str(session_path)]) == jaato_gc.EXIT_OK
    uploaded = capsys.readouterr().out
    session_id = int(uploaded.split("session ")[-1])
    assert cli(["--json", "run", str(session_id), "--config", str(config_path), "--wait"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert cli(["ledger", str(run["id"]), "--csv"]) == 0
    ledger = capsys.readouterr().out

    assert "agent.json\tstored" in uploaded
    assert run["status"] == "done"
    assert run["items_collected"] > 0
    assert ledger.splitlines()[0].startswith("seq,")
    assert len(ledger.splitlines()) == run["items_collected"] + 1
    assert {e.actor_name for e in AuditEvent.objects.all()} == {"ed"}


def test_refusals_are_exit_codes_with_the_dashboards_message(cli, tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "gc_budget", "target_percent": 300}')

    missing_session = cli(["run", "999999", "--config", str(bad)])
    no_file = cli(["upload", str(tmp_path / "nope.json")])
    monkeypatch.setenv("JAATO_TOKEN", "jgc_revoked-or-made-up")
    unknown_token = cli(["projects"])
    monkeypatch.setenv("JAATO_URL", "http://127.0.0.1:9")
    unreachable = cli(["projects"])
    errors = capsys.readouterr().err

    assert missing_session == jaato_gc.EXIT_REFUSED
    assert "HTTP 404" in errors
    assert no_file == jaato_gc.EXIT_USAGE
    assert unknown_token == jaato_gc.EXIT_REFUSED
    assert "HTTP 401" in errors
    assert unreachable == jaato_gc.EXIT_UNREACHABLE
    assert "Traceback" not in errors


def test_a_bad_gc_json_is_refused_naming_its_key(cli, tmp_path, capsys, project):
    session_path = tmp_path / "s.json"
    session_path.write_bytes(session_file(6))
    cli(["upload", str(session_path)])
    session_id = int(capsys.readouterr().out.split("session ")[-1])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**BUDGET_POLICY, "target_percent": 300}))

    code = cli(["run", str(session_id), "--config", str(bad)])

    errors = capsys.readouterr().err
    assert code == jaato_gc.EXIT_REFUSED
    assert "HTTP 400" in errors
    assert "(key: target_percent)" in errors
