"""What a run reports and leaves: it takes in one go all its policy may take, says when that
does not reach the target, never changes the session it is given, and a run that takes
nothing changes no figure."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import (
    DemoShape,
    GCConfig,
    GCPolicy,
    InstructionSource,
    Session,
    generate_demo_session,
    load_gc_config,
    load_session,
    run_gc,
)
from gcengine.strategies import STRATEGY_SPECS
from gcengine.synthetic import SessionShape, generate_session_file
from gcengine.tokens import TokenCounter
from gcengine.window import with_context_limit
from tests.engine.conftest import EXAMPLES
from tests.engine.strategies import jaato_session_files

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gc"
SHIPPED = ("jaato_repo_gc.json", "jaato_tui_example_gc.json")
"""JAATO's own gc.json files: gc_budget in continuous mode (pressure 0), targets 60 and 40."""

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def shipped(name: str, **changes: Any) -> GCConfig:
    return load_gc_config({**json.loads((FIXTURES / name).read_text()), **changes})


@cache
def demo_file(turns: int) -> str:
    return json.dumps(generate_demo_session(DemoShape(turns=turns)))


def demo(turns: int) -> Session:
    return load_session(demo_file(turns))


def percent(session: Session, tokens: int) -> float:
    return round(session.budget.percent_of(tokens), 1)


def leaf_policies(session: Session) -> dict[str, GCPolicy]:
    conversation = session.budget.get_entry(InstructionSource.CONVERSATION)
    assert conversation is not None
    return {
        leaf.message_ids[0]: leaf.gc_policy
        for leaf in conversation.leaves()
        if len(leaf.message_ids) == 1
    }


# --- one run takes what its policy may take ---------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_a_continuous_budget_run_takes_in_one_run_all_its_policy_may_take(name: str) -> None:
    """Continuous mode never takes preservable content, and the closing answers of tool loops
    are preservable: once the tool work before them is gone they still are, so running the
    same policy again takes nothing more. The target (2 %) is below what the policy keeps, and
    the run says it stopped short."""
    session = demo(60)
    config = shipped(name, target_percent=2)

    first = run_gc(session, config)
    second = run_gc(first.session, config)

    assert first.result.items_collected > 0
    assert second.result.items_collected == 0
    assert second.result.tokens_after == first.result.tokens_after
    assert first.result.details["target_reached"] is False
    assert "above the 2% target" in first.result.details["short_of_target"]


def test_a_kept_closing_answer_stays_preservable_after_a_run_and_a_save() -> None:
    session = demo(60)
    before = leaf_policies(session)
    outcome = run_gc(session, shipped("jaato_repo_gc.json", target_percent=2))
    kept = {m.message_id for m in outcome.session.history}
    preservable = {i for i, p in before.items() if p is GCPolicy.PRESERVABLE and i in kept}
    assert preservable

    for after in (outcome.session, load_session(gcengine.dump_session(outcome.session))):
        policies = leaf_policies(after)
        assert {i for i in preservable if policies[i] is not GCPolicy.PRESERVABLE} == set()


def test_a_run_keeping_marked_closing_answers_leaves_the_budget_its_history_has() -> None:
    """A run keeps closing answers as marked copies (the same parts, other metadata): the
    budget after it, which reuses the figures of the one before, is the budget rebuilt from
    scratch."""
    session = gcengine.load_session(generate_session_file(SessionShape(turns=300, seed=300)))
    session = session.model_copy(
        update={"context_limit": session.budget.total_tokens() * 100 // 85}
    )
    counter = gcengine.counter_by_name(session.token_counter)
    session.budget = gcengine.rebuild_budget(session, counter)
    policy = {"type": "budget", "threshold_percent": 80, "target_percent": 60}
    outcome = run_gc(session, gcengine.load_gc_config(policy, env={}))
    assert any(m.metadata.get("closes_tool_loop") for m in outcome.session.history)
    assert outcome.session.budget == gcengine.rebuild_budget(outcome.session, counter)


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_jaato_shipped_policies_on_a_3000_turn_session_stop_once_and_say_so(name: str) -> None:
    """JAATO's own files on a 3,000-turn session: the first run stops where continuous mode
    must (the preservable closing answers stay), says it is short of the target, and a
    second run of the same policy takes nothing."""
    session = demo(3000)
    config = shipped(name)

    first = run_gc(session, config)
    second = run_gc(first.session, config)

    assert percent(session, first.result.tokens_after) > config.target_percent
    assert second.result.items_collected == 0
    assert second.result.tokens_after == first.result.tokens_after
    assert first.result.details["target_reached"] is False


def test_a_run_that_reaches_its_target_says_so() -> None:
    outcome = run_gc(demo(60), shipped("jaato_repo_gc.json", target_percent=30))
    assert outcome.result.items_collected > 0
    assert outcome.result.details["target_reached"] is True
    assert "short_of_target" not in outcome.result.details


# --- a run never changes its input ------------------------------------------------------------


def test_a_run_leaves_the_figures_of_a_budget_edited_in_place_as_they_were() -> None:
    """Turns made locked in place: the budget's figures say so before the run, and still do
    after it (the run read the tree, it did not keep a reading of it that says otherwise)."""
    session = demo(40)
    conversation = session.budget.get_entry(InstructionSource.CONVERSATION)
    assert conversation is not None
    for turn in list(conversation.children.values())[:10]:
        turn.gc_policy = GCPolicy.LOCKED
    figures = (session.budget.gc_eligible_tokens(), session.budget.gc_headroom_percent())
    snapshot = session.budget.snapshot()

    run_gc(session, load_gc_config({"type": "budget", "target_percent": 20}))

    assert (session.budget.gc_eligible_tokens(), session.budget.gc_headroom_percent()) == figures
    assert session.budget.snapshot() == snapshot


def _edited_in_place(session: Session, data: st.DataObject) -> None:
    """Some entries of the session's budget given another policy by assignment."""
    entries = [entry for _, entry in session.budget.entries.items()]
    entries += [node for entry in entries for _, node in entry.walk() if node is not entry]
    if not entries:
        return
    picked = data.draw(st.lists(st.sampled_from(entries), max_size=4))
    for entry in picked:
        entry.gc_policy = data.draw(st.sampled_from(list(GCPolicy)))


def _policy(data: st.DataObject, strategy: str) -> GCConfig:
    target = data.draw(st.integers(1, 60))
    pressure = data.draw(st.sampled_from([0, 90]))
    return load_gc_config(
        {
            "type": strategy,
            "target_percent": target,
            "threshold_percent": target + 10,
            "pressure_percent": pressure,
            "preserve_recent_turns": data.draw(st.integers(0, 2)),
            "notify_on_gc": data.draw(st.booleans()),
        }
    )


@PROPERTY_SETTINGS
@given(file=jaato_session_files(max_turns=4), data=st.data())
def test_no_run_changes_the_session_it_is_given(
    file: dict[str, Any], data: st.DataObject, counter: TokenCounter
) -> None:
    session = with_context_limit(load_session(file, counter=counter), 1_000)
    if data.draw(st.booleans()):
        _edited_in_place(session, data)
    dump, snapshot = session.model_dump_json(), session.budget.snapshot()
    for spec in STRATEGY_SPECS:
        run_gc(session, _policy(data, spec.name))
        assert session.model_dump_json() == dump, spec.name
        assert session.budget.snapshot() == snapshot, spec.name


# --- a run that takes nothing changes nothing ------------------------------------------------


def _figures(session: Session) -> tuple[int, int, int, int, int]:
    budget = session.budget
    return (
        budget.total_tokens(),
        budget.gc_eligible_tokens(),
        budget.locked_tokens(),
        budget.preservable_tokens(),
        session.turn_count(),
    )


@pytest.mark.parametrize("strategy", [spec.name for spec in STRATEGY_SPECS])
def test_a_run_on_a_budget_snapshot_that_removes_nothing_changes_no_figure(strategy: str) -> None:
    session = load_session((EXAMPLES / "jaato_budget_snapshot.json").read_bytes())

    outcome = run_gc(session, load_gc_config({"type": strategy}))

    assert outcome.result.items_collected == 0
    assert outcome.result.tokens_before == outcome.result.tokens_after
    assert outcome.budget_after.snapshot() == outcome.budget_before.snapshot()
    assert _figures(outcome.session) == _figures(session)


@PROPERTY_SETTINGS
@given(file=jaato_session_files(max_turns=4), data=st.data())
def test_a_run_that_removes_nothing_leaves_every_figure_as_it_was(
    file: dict[str, Any], data: st.DataObject, counter: TokenCounter
) -> None:
    session = load_session(file, counter=counter)
    if data.draw(st.booleans()):
        session = with_context_limit(session, 1_000)
    for spec in STRATEGY_SPECS:
        outcome = run_gc(session, _policy(data, spec.name))
        if outcome.result.items_collected:
            continue
        assert outcome.result.tokens_before == outcome.result.tokens_after, spec.name
        assert outcome.result.details.get("turns_before", session.turn_count()) == (
            outcome.result.details.get("turns_after", session.turn_count())
        )
        assert _figures(outcome.session) == _figures(session), spec.name
        assert outcome.budget_after.snapshot() == outcome.budget_before.snapshot(), spec.name


# --- the hybrid starter policy says why it wrote no summary ----------------------------------


def test_hybrid_says_why_it_kept_the_middle_instead_of_summarizing_it() -> None:
    """Dropping the oldest turns reaches the target before the middle generation is needed:
    no summary is written, and the run's record says so with the figures."""
    policy = gcengine.starter_policies()["Hybrid (summarize the middle)"]
    outcome = run_gc(demo(200), load_gc_config(policy))
    details = outcome.result.details

    assert details["turns_summarized"] == 0
    assert details["middle_kept"] == (
        f"dropping {details['turns_truncated']} of the {details['ancient_turns']} ancient turns "
        f"reached the target, so the {policy['summarize_middle_turns']} middle turns were kept "
        "as they are, not summarized"
    )


def test_hybrid_writes_its_summary_when_dropping_the_oldest_turns_is_not_enough() -> None:
    policy = {**gcengine.starter_policies()["Hybrid (summarize the middle)"], "target_percent": 5}
    outcome = run_gc(demo(200), load_gc_config(policy))

    assert outcome.result.details["turns_summarized"] > 0
    assert "middle_kept" not in outcome.result.details


def test_an_incremental_batch_short_of_the_target_says_it_is_a_batch() -> None:
    config = load_gc_config(
        {"type": "reachability", "target_percent": 10, "incremental": True, "batch_size": 5}
    )
    outcome = run_gc(demo(60), config, reason="incremental")

    assert outcome.result.items_collected == 5
    assert outcome.result.details["target_reached"] is False
    assert (
        "an incremental collection takes at most 5 segments"
        in (outcome.result.details["short_of_target"])
    )
