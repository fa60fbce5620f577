"""``jaato-gc`` against a live dashboard: a token opens it, refusals come back as exit codes
with the dashboard's message."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from pytest_django.live_server_helper import LiveServer

from jaato_web import client as jaato_gc
from jaato_web.dashboard import background
from jaato_web.dashboard import services as dashboard_services
from jaato_web.dashboard.models import AuditEvent, Project
from jaato_web.teams import services as team_services
from jaato_web.teams.permissions import Role
from tests.web.conftest import make_member, signed_in_client
from tests.web.policy_data import JAATO_REPO_FILE, JAATO_TUI_EXAMPLE_FILE
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


def test_run_wait_prints_what_the_run_did_in_words_and_json_only_when_asked(
    cli, tmp_path: Path, capsys, project
):
    session_path = tmp_path / "agent.json"
    session_path.write_bytes(session_file(20))
    config_path = tmp_path / "gc.json"
    config_path.write_text(json.dumps(BUDGET_POLICY))
    cli(["upload", str(session_path)])
    session_id = capsys.readouterr().out.split("session ")[-1].strip()

    assert cli(["run", session_id, "--config", str(config_path), "--wait"]) == 0
    words = capsys.readouterr().out
    assert cli(["--json", "run", session_id, "--config", str(config_path), "--wait"]) == 0
    run = json.loads(capsys.readouterr().out)

    with pytest.raises(json.JSONDecodeError):
        json.loads(words)
    first = re.match(rf"run (\d+) of session {session_id}: done", words)
    assert first, words
    # The same policy on the same session does the same; the words say what the JSON does.
    figures = re.search(
        r"^([\d,]+) \([\d.]+ %\) -> ([\d,]+) \([\d.]+ %\) tokens, freed ([\d,]+)", words, re.M
    )
    assert figures, words
    assert [int(f.replace(",", "")) for f in figures.groups()] == [
        run["tokens_before"],
        run["tokens_after"],
        run["tokens_freed"],
    ]
    assert f"{run['items_collected']:,} items removed" in words
    assert f"jaato-gc ledger {first[1]}" in words
    assert "{" not in words


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


def test_an_upload_of_several_files_reports_each_and_stores_the_good_ones(
    cli, tmp_path, capsys, project
):
    good = tmp_path / "good.json"
    good.write_bytes(session_file(6))
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")

    code = cli(["upload", str(good), str(empty)])

    out, errors = capsys.readouterr()
    assert code == jaato_gc.EXIT_REFUSED
    assert "1 of 2 files refused" in errors
    stored, refused = out.splitlines()
    assert stored.startswith("good.json\tstored\tsession ")
    assert refused == "empty.json\tempty\tthe file is empty"
    assert project.sessions.count() == 1


def test_a_missing_local_file_sends_nothing(cli, tmp_path, capsys, project):
    good = tmp_path / "good.json"
    good.write_bytes(session_file(6))

    code = cli(["upload", str(good), str(tmp_path / "nope.json")])

    assert code == jaato_gc.EXIT_USAGE
    assert "nothing was uploaded" in capsys.readouterr().err
    assert project.sessions.count() == 0


def test_lists_show_what_a_reader_needs(cli, tmp_path, capsys, project):
    session_path = tmp_path / "agent.json"
    session_path.write_bytes(session_file(20))
    config_path = tmp_path / "gc.json"
    config_path.write_text(json.dumps(BUDGET_POLICY))
    cli(["upload", str(session_path)])
    session_id = int(capsys.readouterr().out.split("session ")[-1])
    cli(["--json", "run", str(session_id), "--config", str(config_path), "--wait"])
    run = json.loads(capsys.readouterr().out)

    cli(["sessions"])
    sessions = capsys.readouterr().out
    cli(["ledger", str(run["id"])])
    ledger = capsys.readouterr().out.splitlines()

    session = project.sessions.get()
    assert sessions.split("\t")[:5] == [
        str(session.pk),
        "agent.json",
        session.source_format,
        f"{session.turn_count:,} turns",
        f"{session.total_tokens:,} tokens",
    ]
    assert len(ledger) == run["items_collected"]
    assert all(line.strip() for line in ledger)
    assert ledger[0].split("\t")[0] == "0"
    assert ledger[0].split("\t")[4].endswith(" tokens")


def test_policies_name_their_latest_version_and_its_id(cli, capsys, project):
    policy = dashboard_services.policy_create(project=project, name="Tight", config=BUDGET_POLICY)
    version = policy.versions.get()

    assert cli(["policies"]) == jaato_gc.EXIT_OK

    line = capsys.readouterr().out.strip()
    assert line.split("\t")[:4] == [
        str(policy.pk),
        "Tight",
        f"version 1 (id {version.pk})",
        "budget",
    ]


def test_output_to_a_closed_pipe_ends_quietly(live_server, project, tmp_path):
    """``jaato-gc sessions | head -1``: the reader leaves early; no traceback follows."""
    ed = make_member(project, "ed", Role.EDITOR)
    for seed in range(3):
        background.session_upload(
            project=project, filename=f"s{seed}.json", data=session_file(4, seed=seed)
        )
    token = team_services.token_create(user=ed, name="pipe", projects=[project]).secret
    env = {**os.environ, "JAATO_TOKEN": token, "JAATO_URL": live_server.url}
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    with os.fdopen(write, "wb") as closed:
        done = subprocess.run(
            [sys.executable, "-m", "jaato_web.client", "sessions"],
            stdout=closed,
            stderr=subprocess.PIPE,
            env=env,
            timeout=60,
            check=False,
        )

    assert done.returncode == jaato_gc.EXIT_CLOSED_PIPE
    assert done.stderr == b""


@pytest.mark.parametrize(
    ("path", "target"), [(JAATO_REPO_FILE, 60), (JAATO_TUI_EXAMPLE_FILE, 40)], ids=["repo", "tui"]
)
def test_jaatos_own_gc_json_files_import_as_policies_and_run(
    cli, tmp_path, capsys, project, path, target
):
    """JAATO's shipped files as they are: imported through the API as a policy, listed, run by
    version and as a --config file, each run with a ledger, and no refusal anywhere."""
    session_path = tmp_path / "agent.json"
    session_path.write_bytes(session_file(20))  # gpt-4's window, about 63 % full
    cli(["upload", str(session_path)])
    session_id = int(capsys.readouterr().out.split("session ")[-1])
    editor = signed_in_client(User.objects.get(username="ed"))
    imported = editor.post(
        "/api/policies/import", {"file": SimpleUploadedFile(path.name, path.read_bytes())}
    )
    assert imported.status_code == 201, imported.content
    policy, version = imported.json(), imported.json()["latest"]

    assert cli(["policies"]) == jaato_gc.EXIT_OK
    listed = capsys.readouterr().out.strip().split("\t")
    by_version = cli(["--json", "run", str(session_id), "--policy-version", str(version["id"])])
    run = json.loads(capsys.readouterr().out)
    assert cli(["--json", "show-run", str(run["id"])]) == jaato_gc.EXIT_OK
    run = json.loads(capsys.readouterr().out)
    assert cli(["ledger", str(run["id"])]) == jaato_gc.EXIT_OK
    ledger = capsys.readouterr().out.splitlines()
    by_file = cli(["--json", "run", str(session_id), "--config", str(path), "--wait"])
    from_file = json.loads(capsys.readouterr().out)
    errors = capsys.readouterr().err

    assert listed == [str(policy["id"]), path.stem, f"version 1 (id {version['id']})", "budget"]
    assert by_version == by_file == jaato_gc.EXIT_OK
    assert run["status"] == from_file["status"] == "done"
    assert run["tokens_before"] > 8_192 * target / 100 >= run["tokens_after"]
    assert len(ledger) == run["items_collected"] > 0
    assert all(
        re.fullmatch(r"\d+\tephemeral\tconversation\tturn \d+\t[\d,]+ tokens\t.*", line)
        for line in ledger
    ), ledger
    assert from_file["items_collected"] == run["items_collected"]
    assert from_file["tokens_after"] == run["tokens_after"]
    assert errors == ""


# --- jaato-gc hook ---------------------------------------------------------------------------

SPOTTER = Path(__file__).parents[1] / "fixtures" / "formats" / "spotter"
SPOTTER_SESSION = "258c7280-ae70-4798-800f-63464d01a85d"


def _hook_event(name: str, **fields: str) -> str:
    """What Claude Code writes on a hook's stdin for a real session of the fixtures."""
    return json.dumps(
        {
            "session_id": SPOTTER_SESSION,
            "transcript_path": str(SPOTTER / f"{SPOTTER_SESSION}.jsonl"),
            "cwd": "/home/USER/projects/spotter",
            "hook_event_name": name,
            **fields,
        }
    )


def _run_hook(env: dict[str, str], stdin: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jaato_web.client", "hook", *extra],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )


def test_the_precompact_hook_uploads_a_real_transcript_with_its_subagents(
    live_server, project, tmp_path
):
    ed = make_member(project, "ed", Role.EDITOR)
    token = team_services.token_create(user=ed, name="hook", projects=[project]).secret
    log = tmp_path / "hook.log"
    env = {"JAATO_TOKEN": token, "JAATO_URL": live_server.url, "JAATO_HOOK_LOG": str(log)}

    done = _run_hook(env, _hook_event("PreCompact", trigger="auto", custom_instructions=""))

    assert done.returncode == 0
    assert done.stdout == ""  # Claude Code would show it for nothing: the log has it
    assert f"PreCompact auto: {SPOTTER_SESSION}.zip\tstored\tsession " in log.read_text()
    stored = project.sessions.get()
    engine = dashboard_services.engine_session_of(stored)
    assert {agent.agent_id for agent in engine.subagents} == {"a881341", "acompact-fffbd0"}
    assert len(engine.compactions) == 1


def test_the_precompact_hook_uploads_a_real_codex_rollout(live_server, project, tmp_path):
    ed = make_member(project, "ed", Role.EDITOR)
    token = team_services.token_create(user=ed, name="hook", projects=[project]).secret
    log = tmp_path / "hook.log"
    [rollout] = (SPOTTER.parent / "codemie_code").glob("rollout-*.jsonl")
    event = {
        "session_id": "019e1625-789d-76c0-80ab-3724b5ddb799",
        "transcript_path": str(rollout),
        "cwd": "/workspace",
        "hook_event_name": "PreCompact",
        "model": "gpt-5.5",
        "trigger": "auto",
    }
    env = {"JAATO_TOKEN": token, "JAATO_URL": live_server.url, "JAATO_HOOK_LOG": str(log)}

    done = _run_hook(env, json.dumps(event))

    assert (done.returncode, done.stdout) == (0, "")
    assert f"PreCompact auto: {rollout.name}\tstored\tsession " in log.read_text()
    assert project.sessions.get().source_format == "codex"


def test_the_hook_with_the_dashboard_down_exits_0_at_once_and_logs_why(tmp_path):
    log = tmp_path / "nested" / "hook.log"
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {"JAATO_TOKEN": "t", "JAATO_URL": f"http://127.0.0.1:{port}", "JAATO_HOOK_LOG": str(log)}

    started = time.monotonic()
    done = _run_hook(env, _hook_event("SessionEnd", reason="prompt_input_exit"))
    elapsed = time.monotonic() - started

    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert elapsed < 5
    assert "failed: cannot reach" in log.read_text()


@pytest.mark.parametrize(
    ("stdin", "env", "logged"),
    [
        ("not json", {"JAATO_TOKEN": "t"}, "failed:"),
        (_hook_event("PreCompact", trigger="manual"), {"JAATO_TOKEN": ""}, "JAATO_TOKEN"),
        (
            json.dumps({"hook_event_name": "SessionEnd", "transcript_path": "/nope.jsonl"}),
            {},
            "no transcript at /nope.jsonl",
        ),
    ],
    ids=["bad-input", "no-token", "no-transcript"],
)
def test_the_hook_never_fails_the_agent(tmp_path, stdin, env, logged):
    log = tmp_path / "hook.log"
    done = _run_hook({**env, "JAATO_HOOK_LOG": str(log)}, stdin)

    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert logged in log.read_text()


def test_the_hook_hands_the_agent_what_its_compaction_left_out(tmp_path):
    log = tmp_path / "hook.log"
    done = _run_hook(
        {"JAATO_HOOK_LOG": str(log)}, _hook_event("SessionStart", source="compact"), "--anchors"
    )

    assert done.returncode == 0
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    handed = output["additionalContext"]
    # A file the compacted conversation worked on, which its summary names by no spelling.
    assert "- lib/spotter/transcripts/project.ex" in handed
    assert "Files:" in handed
    assert "handed lost anchors" in log.read_text()
    # Without --anchors, or on a start that follows no compaction, it says nothing.
    assert (
        _run_hook(
            {"JAATO_HOOK_LOG": str(log)}, _hook_event("SessionStart", source="compact")
        ).stdout
        == ""
    )
    assert (
        _run_hook(
            {"JAATO_HOOK_LOG": str(log)}, _hook_event("SessionStart", source="startup"), "--anchors"
        ).stdout
        == ""
    )
