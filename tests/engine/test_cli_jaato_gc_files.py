"""JAATO's own shipped gc.json files through ``python -m gcengine run`` and ``simulate``: a
user points the command line at the file JAATO gave them and gets a ledger and a replay."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import gcengine
from gcengine import MessageKind
from gcengine.cli import main
from gcengine.synthetic import SessionShape, generate_session_file

GC_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gc"
JAATO_FILES = [
    pytest.param(GC_FIXTURES / "jaato_repo_gc.json", 60, id="repo-jaato-gc-json"),
    pytest.param(GC_FIXTURES / "jaato_tui_example_gc.json", 40, id="jaato-tui-example"),
]


@pytest.fixture
def session_path(tmp_path: Path) -> Path:
    """Twenty short turns on gpt-4's 8,192-token window: about 63 % full, above both files'
    targets, so both have something to collect."""
    shape = SessionShape(
        turns=20, user_chars=300, model_chars=400, tool_result_chars=1200, tool_every=3, seed=1
    )
    document = generate_session_file(shape)
    document["connection"]["model"] = "gpt-4"
    path = tmp_path / "session.json"
    path.write_text(json.dumps(document))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("config", "target"), JAATO_FILES)
def test_run_prints_a_ledger_and_lands_at_the_files_target(
    config: Path, target: int, session_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "run", str(session_path), "--config", str(config), "--all")

    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "gc_budget: ok"
    figures = re.fullmatch(
        r"tokens    ([\d,]+) \(([\d.]+)%\) -> ([\d,]+) \(([\d.]+)%\); freed ([\d,]+); (\d+) items?",
        lines[1],
    )
    assert figures is not None, lines[1]
    before, after, freed = (int(figures[i].replace(",", "")) for i in (1, 3, 5))
    ledger = [line for line in lines if line.startswith("  - ")]
    assert float(figures[2]) > target >= float(figures[4])
    assert before - after == freed > 0
    assert len(ledger) == int(figures[6]) > 0
    # The ledger lists what went; "freed" is net of the notice the example writes in.
    ledger_total = sum(int(line.split()[4].replace(",", "")) for line in ledger)
    if json.loads(config.read_text())["notify_on_gc"]:
        assert 0 < ledger_total - freed < 100
    else:
        assert ledger_total == freed


def test_run_summarizes_a_long_ledger_unless_asked_for_every_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shape = SessionShape(
        turns=80, user_chars=300, model_chars=400, tool_result_chars=1200, tool_every=3, seed=1
    )
    document = generate_session_file(shape)
    document["connection"]["model"] = "gpt-4"
    path = tmp_path / "long.json"
    path.write_text(json.dumps(document))
    config = str(GC_FIXTURES / "jaato_repo_gc.json")

    _, summary, _ = run_cli(capsys, "run", str(path), "--config", config)
    _, every, _ = run_cli(capsys, "run", str(path), "--config", config, "--all")
    _, as_json, _ = run_cli(capsys, "run", str(path), "--config", config, "--json")

    result = json.loads(as_json)
    items = result["removal_list"]
    assert len(items) > 20
    listed = [line for line in summary.splitlines() if line.startswith("  - ")]
    assert len(listed) < 20 < len(items)
    # Counts by reason and by source add up to the whole ledger, tokens too.
    by_reason = re.findall(r"^    (\S+) +([\d,]+) items? +([\d,]+) tokens$", summary, re.M)
    assert by_reason
    assert sum(int(n.replace(",", "")) for _, n, _ in by_reason) == len(items) * 2
    assert f"and {len(items) - len(listed):,} more" in summary
    assert "--all" in summary
    # Every item with --all, each turn numbered as people read it (index 0 is turn 1).
    every_listed = [line for line in every.splitlines() if line.startswith("  - ")]
    assert len(every_listed) == len(items)
    first = items[0]
    assert f"turn {first['turn_index'] + 1} " in every_listed[0]
    assert listed == every_listed[: len(listed)]


@pytest.mark.parametrize(("config", "target"), JAATO_FILES)
def test_simulate_replays_in_continuous_mode_under_the_files_target(
    config: Path, target: int, session_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "simulate", str(session_path), "--config", str(config))

    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"gc_budget, continuous, target {target}%, limit 8,192"
    events = [line.split() for line in lines if line.startswith("  turn ")]
    assert lines[1].startswith(f"turns 20; GC events {len(events)}; ")
    assert events
    for event in events:
        # "turn 14 post_turn continuous 44.3% -> 39.1% 2 items"
        assert event[3] == "continuous"
        assert float(event[4].rstrip("%")) > target >= float(event[6].rstrip("%"))


def test_the_tui_examples_notice_reports_what_went_in_jaatos_words(
    session_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example turns notices on: the collected session holds JAATO's template filled in
    with the turns removed whole and the turns kept whole (the original request's turn aside),
    counted here from the two files' message ids."""
    out_path = tmp_path / "collected.json"
    config = GC_FIXTURES / "jaato_tui_example_gc.json"

    code, out, _ = run_cli(
        capsys, "run", str(session_path), "--config", str(config), "--out", str(out_path)
    )

    assert code == 0
    assert out.splitlines()[-1] == f"wrote     {out_path}"
    before = gcengine.load_session(session_path)
    after = gcengine.load_session(out_path)
    still_there = {m.message_id for m in after.history}
    removed = kept = 0
    for turn in before.turns()[1:]:
        present = [m.message_id in still_there for m in turn.messages]
        removed += not any(present)
        kept += all(present)
    notices = [m.text for m in after.history if m.kind is MessageKind.NOTICE]
    assert removed > 0
    assert notices == [
        f"[System: Context cleaned: {removed} turns removed, 0 turns summarized, "
        f"{kept} recent turns preserved.]"
    ]


def test_as_jaato_runs_a_file_naming_jaatos_plugin_with_jaatos_rules_and_says_so(
    session_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JAATO's truncate takes every turn but the recent ones and the original request's,
    whatever the target; the engine's stops at the target. ``--as-jaato`` gives the former for
    a file naming JAATO's plugin, as the dashboard reads an imported one, and says why on
    stderr (the ledger on stdout stays the ledger)."""
    config = tmp_path / "gc.json"
    config.write_text(
        json.dumps(
            {
                "type": "truncate",
                "threshold_percent": 50,
                "target_percent": 40,
                "preserve_recent_turns": 3,
            }
        )
    )

    results = {}
    for flags in ((), ("--as-jaato",)):
        code, out, err = run_cli(
            capsys, "run", str(session_path), "--config", str(config), "--json", *flags
        )
        assert code == 0
        results[flags] = (json.loads(out), err)

    engine, engine_err = results[()]
    jaato, jaato_err = results[("--as-jaato",)]
    assert engine_err == ""
    assert jaato_err == (
        f"note: {config} names JAATO's own plugin and no rules: read with JAATO's rules, "
        "as JAATO runs it\n"
    )
    assert engine["details"]["target_reached"]
    assert engine["tokens_after"] <= 0.4 * 8192
    # The original request's turn, the three recent ones, and the notice at the top.
    assert jaato["details"]["turns_after"] == 5
    assert jaato["details"]["preserved_indices"] == [0, 17, 18, 19]
    assert jaato["tokens_after"] < engine["tokens_after"]


def test_as_jaato_reads_a_file_that_states_its_rules_as_it_says(
    session_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file stating the engine's rules means them under ``--as-jaato`` too, without a note
    (it states the keys JAATO's loader would fill in otherwise: continuous mode, notices)."""
    config = tmp_path / "gc.json"
    policy = {
        "type": "truncate",
        "threshold_percent": 50,
        "target_percent": 40,
        "pressure_percent": 90,
        "notify_on_gc": True,
        "rules": "engine",
    }
    config.write_text(json.dumps(policy))
    outputs = []
    for flags in ((), ("--as-jaato",)):
        code, out, err = run_cli(
            capsys, "run", str(session_path), "--config", str(config), "--json", *flags
        )
        assert (code, err) == (0, "")
        outputs.append(out)
    assert outputs[0] == outputs[1]
