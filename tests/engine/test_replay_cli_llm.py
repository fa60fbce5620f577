"""Replaying sessions, the command line, and the LLM summarizer against a local server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gcengine
from gcengine import MessageKind, Session
from gcengine.cli import main
from gcengine.gc import LLMSummarizer, SummarizerError
from gcengine.running import load_gc_plugin, run_gc, simulate
from gcengine.synthetic import SessionShape, generate_session_file
from gcengine.tokens import TokenCounter
from tests.chat_server import FakeChatServer
from tests.engine.conftest import EXAMPLES


def long_session(counter: TokenCounter, turns: int = 300, limit: int = 60_000) -> Session:
    session = gcengine.load_session(
        generate_session_file(SessionShape(turns=turns, seed=21)), counter=counter
    )
    session = session.model_copy(update={"context_limit": limit})
    session.budget = gcengine.rebuild_budget(session, counter)
    return session


def post_turn_percent(replay: gcengine.Simulation) -> list[float]:
    return [replay.percent(s.tokens_after) for s in replay.steps if s.point == "post_turn"]


def test_threshold_mode_draws_a_sawtooth(counter: TokenCounter) -> None:
    """Collections start at the threshold and fall to the target; the closing answers of tool
    turns are preservable and stay below the pressure threshold, so as they pile up the
    sawtooth's floor rises above the target (each collection still takes what it may)."""
    replay = simulate(long_session(counter), gcengine.load_gc_config({"type": "budget"}, env={}))
    assert len(replay.events) >= 5
    for event in replay.events:
        assert replay.percent(event.result.tokens_before) >= 80
        assert event.result.tokens_after < event.result.tokens_before
    assert all(replay.percent(e.result.tokens_after) <= 60 for e in replay.events[:5])
    assert 80 <= replay.peak_percent < 90
    usage = post_turn_percent(replay)
    assert min(usage[100:]) < 65 < max(usage[100:])


def test_continuous_mode_ripples_around_the_target(counter: TokenCounter) -> None:
    """Small collections whenever usage passes the target; preservable closing answers are
    never taken in continuous mode, so usage creeps up as they pile up."""
    config = gcengine.load_gc_config({"type": "budget", "pressure_percent": 0}, env={})
    replay = simulate(long_session(counter), config)
    usage = post_turn_percent(replay)[100:]
    assert all(u <= 60 for u in post_turn_percent(replay)[:100])
    assert min(usage) > 55, "continuous collections are small: usage stays close to the target"
    for event in replay.events:
        assert replay.percent(event.result.tokens_before) > 60
        assert replay.percent(event.result.tokens_before - event.result.tokens_after) < 5
    assert len(replay.events) > 150


def test_replay_respects_pins_and_counts_usage_like_the_budget(counter: TokenCounter) -> None:
    session = long_session(counter, turns=120)
    config = gcengine.load_gc_config({"type": "truncate", "pinned_turn_indices": [7]}, env={})
    replay = simulate(session, config)
    removed = {item.turn_index for event in replay.events for item in event.result.removal_list}
    assert 7 not in removed
    assert 8 in removed
    last = replay.steps[-1]
    assert replay.events, "the session outgrows its limit, so GC ran"
    # The running total is the budget's own figure at the point of each collection.
    for event in replay.events:
        step = next(
            s for s in replay.steps if s.turn_index == event.turn_index and s.point == event.point
        )
        assert step.tokens_before == event.result.tokens_before
        assert step.tokens_after == event.result.tokens_after
    assert last.tokens_after <= session.context_limit


def test_replay_counts_the_window_not_the_conversation_the_file_recorded(
    counter: TokenCounter,
) -> None:
    """A file with JAATO's own budget records the whole conversation; the replay's usage is
    what the window holds, from the first check on, not the recording on top of it."""
    shape = SessionShape(turns=40, seed=4, with_budget_state=True)
    session = gcengine.load_session(generate_session_file(shape), counter=counter)
    config = gcengine.load_gc_config({"type": "budget", "pressure_percent": 0}, env={})
    replay = simulate(session, config)
    first_turn = session.turns()[0].messages
    alone = session.model_copy(update={"history": first_turn})
    first = replay.steps[0]
    assert (first.point, first.collected) == ("pre_message", False)
    assert replay.steps[1].tokens_before == gcengine.rebuild_budget(alone, counter).total_tokens()


class _Foreign:
    """A plugin the engine does not know: it is handed budget trees, and checks each is the
    budget of the history it is asked to collect."""

    name = "foreign"

    def __init__(self, counter: TokenCounter, session: Session) -> None:
        self.inner = load_gc_plugin("budget")
        self.counter, self.session, self.checked = counter, session, 0

    def initialize(self, config: Any = None) -> None: ...

    def shutdown(self) -> None: ...

    def should_collect(self, usage: Any, config: gcengine.GCConfig) -> Any:
        return self.inner.should_collect(usage, config)

    def collect(self, history: Any, usage: Any, config: Any, reason: Any, budget: Any) -> Any:
        window = self.session.model_copy(update={"history": list(history)})
        assert budget == gcengine.rebuild_budget(window, self.counter)
        self.checked += 1
        return self.inner.collect(history, usage, config, reason, budget)


def test_a_replay_hands_other_plugins_the_budget_of_the_window(counter: TokenCounter) -> None:
    session = long_session(counter, turns=80, limit=20_000)
    config = gcengine.load_gc_config({"type": "budget", "pressure_percent": 0}, env={})
    foreign = _Foreign(counter, session)
    replay = simulate(session, config, plugin=foreign)  # type: ignore[arg-type]
    ours = simulate(session, config)
    assert foreign.checked == len(replay.events) > 10
    assert replay.model_dump(exclude={"plugin"}) == ours.model_dump(exclude={"plugin"})


def test_replay_checks_before_send_only_when_asked(counter: TokenCounter) -> None:
    session = long_session(counter, turns=60)
    points = {s.point for s in simulate(session, gcengine.load_gc_config({}, env={})).steps}
    assert points == {"pre_message", "post_turn"}
    config = gcengine.load_gc_config({"check_before_send": False}, env={})
    assert {s.point for s in simulate(session, config).steps} == {"post_turn"}


def run_cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_config(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "gc.json"
    path.write_text(json.dumps(fields))
    return path


def test_cli_inspect_shows_usage_tree_and_drift(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli("inspect", str(EXAMPLES / "jaato_session_v2.1.json"), capsys=capsys)
    assert code == 0
    assert "context limit 200,000 (from model)" in out
    assert "🔒" in out
    assert "conversation" in out
    assert "turn_1" in out  # the first turn, as JAATO labels it
    assert "turn_0" not in out
    assert "drift     recorded 85 vs counted" in out


def test_cli_inspect_json_is_the_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        "inspect", str(EXAMPLES / "jaato_budget_snapshot.json"), "--json", capsys=capsys
    )
    assert code == 0
    assert json.loads(out) == json.loads((EXAMPLES / "jaato_budget_snapshot.json").read_text())


def test_cli_run_prints_the_ledger_and_writes_the_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session_path = tmp_path / "session.json"
    session_path.write_text(json.dumps(generate_session_file(SessionShape(turns=40, seed=2))))
    config = write_config(tmp_path, type="truncate", target_percent=1, threshold_percent=2)
    out_path = tmp_path / "out.json"
    code, out, _ = run_cli(
        "run", str(session_path), "--config", str(config), "--out", str(out_path), capsys=capsys
    )
    assert code == 0
    assert "gc_truncate: ok" in out
    assert "truncated" in out
    collected = gcengine.load_session(out_path)
    assert len(collected.turns()) == 6  # turn 0 (locked request) and the 5 recent turns
    code, out, _ = run_cli(
        "run", str(session_path), "--config", str(config), "--json", capsys=capsys
    )
    assert json.loads(out)["items_collected"] == 34


def test_cli_run_of_a_reachability_policy_says_why_each_item_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session_path = tmp_path / "demo.json"
    session_path.write_text(
        json.dumps(gcengine.generate_demo_session(gcengine.DemoShape(turns=30, seed=4)))
    )
    config = write_config(tmp_path, type="reachability", target_percent=20, threshold_percent=30)
    code, out, _ = run_cli("run", str(session_path), "--config", str(config), capsys=capsys)
    assert code == 0
    assert "gc_reachability: ok" in out
    verdicts = [line.strip() for line in out.splitlines() if line.startswith("      stashed: ")]
    assert verdicts
    assert all(re.search(r"; score \d\.\d\d \(", line) for line in verdicts)
    assert verdicts[0].startswith("stashed: unreachable: ")


def test_cli_names_turns_as_jaato_numbers_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ledger and the replay say ``turn 2`` for the turn with stable index 1, as a JAATO
    log (``turn_2``) does."""
    session_path = tmp_path / "session.json"
    session_path.write_text(json.dumps(generate_session_file(SessionShape(turns=12, seed=3))))
    config = write_config(tmp_path, type="truncate", target_percent=1, threshold_percent=2)
    code, out, _ = run_cli("run", str(session_path), "--config", str(config), capsys=capsys)
    assert code == 0
    ledger = [line.split() for line in out.splitlines() if line.startswith("  - ")]
    # Turn 1 holds the locked request: the first turn removed is turn 2.
    assert ledger[0][2:4] == ["turn", "2"]
    assert not [line for line in ledger if line[2:4] == ["turn", "0"]]
    code, out, _ = run_cli("simulate", str(session_path), "--config", str(config), capsys=capsys)
    events = [line.split() for line in out.splitlines() if line.startswith("  turn ")]
    assert events
    replay = gcengine.simulate(
        gcengine.load_session(session_path), gcengine.load_gc_config(config, env={})
    )
    assert [int(e[1]) for e in events] == [e.turn_number for e in replay.events]
    assert all(e.turn_number == e.turn_index + 1 for e in replay.events if e.turn_index is not None)
    assert replay.model_dump()["events"][0]["turn_number"] == replay.events[0].turn_number


def test_cli_simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, type="budget")
    code, out, _ = run_cli(
        "simulate",
        str(EXAMPLES / "jaato_session_v2.1.json"),
        "--config",
        str(config),
        capsys=capsys,
    )
    assert code == 0
    assert "GC events 0" in out
    code, out, _ = run_cli(
        "simulate",
        str(EXAMPLES / "jaato_session_v2.1.json"),
        "--config",
        str(config),
        "--json",
        capsys=capsys,
    )
    assert json.loads(out)["plugin"] == "gc_budget"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["inspect", "/does/not/exist.json"], "cannot read"),
        (
            ["run", str(EXAMPLES / "jaato_session_v2.1.json"), "--config", "/does/not/exist.json"],
            "cannot read",
        ),
        (
            [
                "run",
                str(EXAMPLES / "jaato_session_v2.1.json"),
                "--config",
                "{config}",
                "--plugin",
                "fifo",
            ],
            "no GC plugin",
        ),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, type="truncate")
    code, _, err = run_cli(*[a.replace("{config}", str(config)) for a in args], capsys=capsys)
    assert code == 2
    assert message in err
    assert "Traceback" not in err
    assert err.count("\n") == 1


def test_cli_bad_session_names_the_json_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads((EXAMPLES / "jaato_session_v2.1.json").read_text())
    data["history"][2]["parts"][0]["is_error"] = "no"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    code, _, err = run_cli("inspect", str(path), capsys=capsys)
    assert code == 2
    assert "history[2].parts[0].is_error" in err


def test_llm_summarizer_uses_the_configured_endpoint(
    chat_server: str, monkeypatch: pytest.MonkeyPatch, counter: TokenCounter
) -> None:
    monkeypatch.setenv("JAATO_GC_LLM_BASE_URL", chat_server)
    monkeypatch.setenv("JAATO_GC_LLM_MODEL", "local-model")
    monkeypatch.setenv("JAATO_GC_LLM_API_KEY", "secret")
    session = long_session(counter, turns=30, limit=20_000)
    config = gcengine.load_gc_config(
        {"type": "summarize", "plugin_config": {"summarizer": "llm"}}, env={}
    )
    outcome = run_gc(session, config)
    assert outcome.result.success
    summary = next(m for m in outcome.session.history if m.kind is MessageKind.SUMMARY)
    assert "Decided: fix parser.py (3 bugs)." in summary.text
    assert summary.metadata["summarizer"] == "llm"
    request = FakeChatServer.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer secret"
    assert request["body"]["model"] == "local-model"
    assert "[Called" in request["body"]["messages"][1]["content"]


def test_a_failing_endpoint_fails_the_run_and_changes_nothing(
    chat_server: str, monkeypatch: pytest.MonkeyPatch, counter: TokenCounter
) -> None:
    FakeChatServer.status = 503
    monkeypatch.setenv("JAATO_GC_LLM_BASE_URL", chat_server)
    monkeypatch.setenv("JAATO_GC_LLM_MODEL", "local-model")
    session = long_session(counter, turns=30, limit=20_000)
    config = gcengine.load_gc_config(
        {"type": "summarize", "plugin_config": {"summarizer": "llm"}}, env={}
    )
    outcome = run_gc(session, config)
    assert not outcome.result.success
    assert "HTTP 503" in (outcome.result.error or "")
    assert outcome.session is session


def test_the_llm_summarizer_needs_its_settings_and_its_server(counter: TokenCounter) -> None:
    with pytest.raises(SummarizerError, match="JAATO_GC_LLM_BASE_URL"):
        LLMSummarizer.from_environment({})
    unreachable = LLMSummarizer("http://127.0.0.1:9", "m", timeout=2)
    plugin = load_gc_plugin("summarize", {"summarizer": unreachable})
    session = long_session(counter, turns=30, limit=20_000)
    outcome = run_gc(session, gcengine.load_gc_config({"type": "summarize"}, env={}), plugin=plugin)
    assert not outcome.result.success
    assert "cannot reach http://127.0.0.1:9" in (outcome.result.error or "")


def test_cli_output_to_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``gcengine inspect session.json | head -1``: the reader leaves; no error follows."""
    session = tmp_path / "s.json"
    session.write_text(json.dumps(generate_session_file(SessionShape(turns=30, seed=3))))
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    with os.fdopen(write, "wb") as closed:
        done = subprocess.run(
            [sys.executable, "-m", "gcengine", "inspect", str(session), "--children", "40"],
            stdout=closed,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )

    assert done.returncode == 141
    assert done.stderr == b""
