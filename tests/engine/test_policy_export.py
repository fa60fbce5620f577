"""A policy as other frameworks' settings: every key mapped or said to be unmapped, and the
figures each target needs worked out from the window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine.cli import main
from tests.engine.strategies import policy

TARGETS = [
    "anthropic_context_editing",
    "anthropic_compaction",
    "openai_compaction",
    "langchain",
    "google_adk",
    "letta",
    "claude_code",
]


def targets(config: gcengine.GCConfig, window: int = 200_000) -> dict[str, gcengine.TargetExport]:
    exported = gcengine.export_policy(config, window)
    assert exported.context_window == window
    return {t.target: t for t in exported.targets}


def settings_of(target: gcengine.TargetExport) -> dict[str, Any]:
    return {s.name: s.value for s in target.settings}


def test_anthropic_context_editing_gets_absolute_tokens_from_the_window() -> None:
    editing = targets(policy(type="budget", threshold_percent=80, target_percent=60))[
        "anthropic_context_editing"
    ]
    assert settings_of(editing)["trigger"] == {"type": "input_tokens", "value": 160_000}
    assert settings_of(editing)["clear_at_least"] == {"type": "input_tokens", "value": 40_000}
    assert settings_of(editing)["keep"] == {"type": "tool_uses", "value": 5}
    snippet = json.loads(editing.snippet.split("\n", 1)[1])
    assert snippet["context_management"]["edits"][0]["trigger"]["value"] == 160_000
    assert editing.snippet.startswith("# header: anthropic-beta: context-management-2025-06-27")
    unmapped = {u.key: u.why for u in editing.unmapped}
    assert "tool results only" in unmapped["pressure_percent"]


def test_anthropic_compaction_is_raised_to_its_minimum_and_says_so() -> None:
    compaction = targets(policy(type="summarize"), window=32_000)["anthropic_compaction"]
    trigger = next(s for s in compaction.settings if s.name == "trigger")
    assert trigger.value == {"type": "input_tokens", "value": 50_000}
    assert not trigger.exact
    assert "25,600" in trigger.note


def test_langchain_summarizes_for_summarizing_strategies_and_clears_tool_uses_otherwise() -> None:
    summarizing = targets(policy(type="summarize", threshold_percent=75, target_percent=40))
    assert "SummarizationMiddleware(" in summarizing["langchain"].snippet
    assert 'trigger=("fraction", 0.75)' in summarizing["langchain"].snippet
    assert 'keep=("fraction", 0.4)' in summarizing["langchain"].snippet
    clearing = targets(policy(type="truncate", threshold_percent=75, target_percent=40))
    assert "ClearToolUsesEdit(" in clearing["langchain"].snippet
    assert "trigger=150000" in clearing["langchain"].snippet


def test_adk_refuses_a_policy_without_a_trigger() -> None:
    adk = targets(policy(type="summarize", auto_trigger=False))["google_adk"]
    assert not adk.available
    assert adk.refusal is not None
    assert "validator" in adk.refusal
    assert adk.settings == []
    assert adk.snippet == ""
    with_trigger = targets(policy(type="summarize", preserve_recent_turns=3))["google_adk"]
    assert settings_of(with_trigger)["event_retention_size"] == 6


def test_letta_and_claude_code() -> None:
    exported = targets(policy(type="hybrid", target_percent=40, max_summary_tokens=500))
    assert json.loads(exported["letta"].snippet) == {
        "compaction_settings": {
            "mode": "sliding_window",
            "sliding_window_percentage": 0.6,
            "clip_chars": 2000,
        }
    }
    assert exported["claude_code"].snippet == (
        "export CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=80\nexport CLAUDE_CODE_AUTO_COMPACT_WINDOW=200000"
    )
    manual = targets(policy(auto_trigger=False))["claude_code"]
    assert "DISABLE_AUTO_COMPACT=true" in manual.snippet


CONFIGS = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["truncate", "summarize", "hybrid", "budget"]),
        "threshold_percent": st.integers(50, 95),
        "auto_trigger": st.booleans(),
        "preserve_recent_turns": st.integers(0, 10),
        "notify_on_gc": st.booleans(),
    },
    optional={
        "max_turns": st.integers(1, 500),
        "pinned_turn_indices": st.lists(st.integers(0, 50), max_size=3, unique=True),
        "max_summary_tokens": st.integers(50, 2_000),
        "summarize_middle_turns": st.integers(0, 20),
    },
).map(lambda d: {**d, "target_percent": d["threshold_percent"] - 20})


@settings(max_examples=100, deadline=None)
@given(CONFIGS, st.integers(1_000, 2_000_000))
def test_every_key_of_the_policy_is_mapped_or_said_to_be_unmapped(
    data: dict[str, Any], window: int
) -> None:
    config = policy(**data)
    written = gcengine.dump_gc_config(config)
    exported = gcengine.export_policy(config, window)
    assert [t.target for t in exported.targets] == TARGETS
    for target in exported.targets:
        mapped = {key for s in target.settings for key in s.from_keys}
        unmapped = {u.key for u in target.unmapped}
        if target.available:
            assert mapped | unmapped == set(written), target.target
            assert not mapped & unmapped, target.target
        else:
            assert unmapped == set(written)
        for item in target.unmapped:
            assert item.value == written[item.key]
            assert item.why


def test_a_window_too_small_is_refused() -> None:
    with pytest.raises(gcengine.ConfigError):
        gcengine.export_policy(policy(), 10)


def test_the_command_line_exports_scores_and_prices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gc.json"
    config.write_text(json.dumps({"type": "summarize", "threshold_percent": 80}))
    session = tmp_path / "session.json"
    demo = gcengine.generate_demo_session(gcengine.DemoShape(turns=60))
    session.write_text(demo if isinstance(demo, str) else json.dumps(demo))

    assert main(["export-policy", str(config), "--window", "100000"]) == 0
    out = capsys.readouterr().out
    assert "== Anthropic context editing" in out
    assert '"value": 80000' in out
    assert "not mapped: target_percent" in out

    assert main(["export-policy", str(config), "--json", "--session", str(session)]) == 0
    assert json.loads(capsys.readouterr().out)["context_window"] == 200_000  # claude-sonnet-4

    assert main(["export-policy", str(config), "--json", "--model", "claude-opus-4-6[1m]"]) == 0
    assert json.loads(capsys.readouterr().out)["context_window"] == 1_000_000

    assert main(["export-policy", str(config)]) == 2
    assert "context_window: no context window" in capsys.readouterr().err

    assert main(["score", str(session), "--config", str(config), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)["run"]
    assert scored["compactions"] == 1
    assert {c["anchor_class"] for c in scored["classes"]} == {c.value for c in gcengine.AnchorClass}

    assert main(["score", str(session)]) == 0
    assert "records no compaction of its own" in capsys.readouterr().out

    # Two policies: each run as it stands, and both at the smaller one's size (the second
    # keeps more).
    keep_more = tmp_path / "keep-more.json"
    keep_more.write_text(json.dumps({"type": "truncate", "target_percent": 70}))
    runs = ["score", str(session), "--config", str(config), "--config", str(keep_more)]
    assert main([*runs, "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    sizes = {scored[f"run {path} at equal size"]["size"] for path in (config, keep_more)}
    assert sizes == {min(scored[f"run {path}"]["tokens_after"] for path in (config, keep_more))}
    assert main(runs) == 0
    assert "for equal size" in capsys.readouterr().out

    assert main(["cost", str(session), "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "priced as Claude Sonnet 4" in out
    assert "without GC" in out

    assert main(["cost", str(session), "--config", str(config), "--model", "llama-3"]) == 2
    assert "no price for model 'llama-3'" in capsys.readouterr().err


# --- continuous mode and the window ---------------------------------------------------------


CONTINUOUS = {
    "type": "budget",
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 0,
}


def test_a_continuous_policy_exports_its_target_as_the_trigger() -> None:
    """Continuous mode collects as soon as usage passes the target; the threshold is unused."""
    exported = targets(gcengine.load_gc_config(CONTINUOUS, env={}), window=100_000)

    editing = settings_of(exported["anthropic_context_editing"])
    assert editing["trigger"] == {"type": "input_tokens", "value": 60_000}
    assert settings_of(exported["openai_compaction"])["compact_threshold"] == 60_000
    assert settings_of(exported["anthropic_compaction"])["trigger"]["value"] == 60_000
    assert settings_of(exported["langchain"])["trigger"] == 60_000
    assert settings_of(exported["google_adk"])["token_threshold"] == 60_000
    assert settings_of(exported["claude_code"])["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] == 60
    for target in ("anthropic_context_editing", "openai_compaction", "claude_code"):
        unmapped = {u.key: u.why for u in exported[target].unmapped}
        assert "continuous mode" in unmapped["threshold_percent"], target


def test_a_threshold_policy_still_exports_its_threshold_as_the_trigger() -> None:
    config = gcengine.load_gc_config({**CONTINUOUS, "pressure_percent": 90}, env={})
    exported = targets(config, window=100_000)
    assert settings_of(exported["openai_compaction"])["compact_threshold"] == 80_000


def test_the_export_window_is_the_one_asked_for_else_the_sessions_else_the_models() -> None:
    assert gcengine.export_window(window=50_000, session_window=200_000) == 50_000
    assert gcengine.export_window(session_window=200_000, model="gpt-4o") == 200_000
    assert gcengine.export_window(model="gpt-4o") == 128_000
    with pytest.raises(gcengine.ConfigError) as unknown:
        gcengine.export_window(model="no-such-model")
    assert unknown.value.key == "context_window"
    assert "no-such-model" in unknown.value.reason
    with pytest.raises(gcengine.ConfigError):
        gcengine.export_window()
