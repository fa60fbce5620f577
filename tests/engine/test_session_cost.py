"""A whole session's cost: every recorded call of every context, the agent's own compaction call
(Claude Code's ``acompact`` sub-agent) included, each priced as the model that answered it;
and a policy replayed over the whole session, call by call."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

import gcengine
from gcengine.cli import main

SPOTTER = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "spotter"
AUTO = "258c7280-ae70-4798-800f-63464d01a85d"
SWITCHED = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


def with_subagents(name: str) -> bytes:
    """The session file and its ``subagents`` folder zipped, as a person uploads them."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(SPOTTER / f"{name}.jsonl", f"{name}.jsonl")
        for agent in sorted((SPOTTER / name / "subagents").glob("agent-*.jsonl")):
            archive.write(agent, f"{name}/subagents/{agent.name}")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def auto() -> gcengine.Session:
    return gcengine.load_session(with_subagents(AUTO))


def test_every_call_of_every_context_is_counted_with_the_compaction_call(
    auto: gcengine.Session,
) -> None:
    cost = gcengine.recorded_cost(auto, gcengine.DEFAULT_PRICES)
    assert cost.contexts == 2
    # All 152 calls of the session, not only those after its compaction.
    assert cost.agent.calls == len(auto.recorded_usage) == 152
    after = {m.message_id for m in auto.history}
    assert sum(u.message_id in after for u in auto.recorded_usage) < 152
    # The compaction call as the acompact file recorded it (fffbd0: 3 / 166,758 read / 2,487).
    assert cost.compaction.calls == 1
    assert (
        cost.compaction.uncached_tokens,
        cost.compaction.cache_read_tokens,
        cost.compaction.cache_write_tokens,
    ) == (3, 166_758, 2_487)
    assert cost.subagents.calls == 3
    assert cost.total.calls == 156
    assert cost.total.dollars == pytest.approx(
        cost.agent.dollars + cost.compaction.dollars + cost.subagents.dollars
    )
    opus = gcengine.price_for_model("claude-opus-4-6", gcengine.DEFAULT_PRICES)
    assert opus is not None
    assert opus.output_per_mtok is not None
    compaction = next(c for c in cost.calls if c.caller == "compaction")
    assert compaction.dollars == pytest.approx(
        (3 * opus.input_per_mtok + 166_758 * opus.cache_read_per_mtok) / 1e6
        + (2_487 * opus.cache_write_per_mtok + compaction.output_tokens * opus.output_per_mtok)
        / 1e6
    )


def test_each_call_is_priced_as_the_model_that_answered_it() -> None:
    session = gcengine.load_session(SPOTTER / f"{SWITCHED}.jsonl")
    cost = gcengine.recorded_cost(session, gcengine.DEFAULT_PRICES)
    models = {c.model for c in cost.calls}
    assert any(m.startswith("claude-haiku-4") for m in models if m)
    assert any(m.startswith("claude-opus-4") for m in models if m)
    haiku = gcengine.price_for_model("claude-haiku-4-5", gcengine.DEFAULT_PRICES)
    assert haiku is not None
    call = next(c for c in cost.calls if c.model and c.model.startswith("claude-haiku"))
    assert call.dollars == pytest.approx(
        (
            call.uncached_tokens * haiku.input_per_mtok
            + call.cache_read_tokens * haiku.cache_read_per_mtok
            + call.cache_write_tokens * haiku.cache_write_per_mtok
            + call.output_tokens * (haiku.output_per_mtok or 0)
        )
        / 1e6
    )
    # Priced as one model when asked.
    as_opus = gcengine.recorded_cost(session, gcengine.DEFAULT_PRICES, "claude-opus-4-6")
    assert {c.model for c in as_opus.calls} == {"claude-opus-4-6"}
    assert as_opus.total.dollars > cost.total.dollars


def test_a_model_without_a_price_leaves_the_total_unpriced(auto: gcengine.Session) -> None:
    cost = gcengine.recorded_cost(auto, gcengine.DEFAULT_PRICES, "llama-3")
    assert cost.total.dollars is None
    assert cost.unpriced_models == ["llama-3"]


def test_the_uncompacted_session_holds_every_context_without_the_summaries(
    auto: gcengine.Session,
) -> None:
    whole = gcengine.uncompacted(auto)
    summary = auto.compactions[0].summary_message_id
    ids = [m.message_id for m in whole.history]
    assert summary not in ids
    assert len(ids) == len(set(ids))
    assert set(ids) == (
        {m.message_id for m in auto.compactions[0].replaced} | {m.message_id for m in auto.history}
    ) - {summary}
    assert whole.compactions == []
    # A policy replayed on it steps before each of the session's calls, not only the last
    # context's.
    replay = gcengine.simulate(whole, gcengine.load_gc_config(BUDGET, env={}))
    called = [s.call_number for s in replay.steps if s.point == "pre_call"]
    assert len(called) > sum(
        1 for u in auto.recorded_usage if u.message_id in {m.message_id for m in auto.history}
    )
    assert called == sorted(called)


BUDGET = {"type": "budget", "threshold_percent": 80, "target_percent": 60}


def test_cli_cost_reads_the_subagents_folder_beside_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gc.json"
    config.write_text(json.dumps(BUDGET))
    session = SPOTTER / f"{AUTO}.jsonl"
    assert main(["cost", str(session), "--config", str(config)]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line}
    assert "152 calls" in lines["agent"]
    assert "1 calls" in lines["compaction"]
    assert "166,758 read" in lines["compaction"]
    assert "156 calls" in lines["total"]
    assert "2026-11-25" in out
    assert "https://" in out

    assert main(["cost", str(session), "--config", str(config), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["recorded"]["compaction"]["calls"] == 1
    assert data["recorded"]["agent"]["calls"] == 152
    assert data["policy"]["usage"]["requests"] > 33
    assert all(p["source"].startswith("https://") and p["as_of"] for p in data["prices"])


def test_claude_prices_carry_cache_and_output_prices() -> None:
    for price in gcengine.DEFAULT_PRICES:
        if price.model.startswith("claude") and price.model != "claude-sonnet-5":
            assert price.output_per_mtok is not None
            assert price.output_per_mtok > price.input_per_mtok
            assert price.cache_write_per_mtok == pytest.approx(1.25 * price.input_per_mtok)
            assert price.cache_read_per_mtok == pytest.approx(0.1 * price.input_per_mtok)
