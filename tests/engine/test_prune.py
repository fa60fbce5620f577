"""Pruning chosen segments: exactly those go, whatever the usage; what no collection may take
is refused with its reason, before anything changes; and a prune's stash restores as a run's."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import ConfigError, PruneRefused, Session
from gcengine.tokens import TokenCounter
from tests.engine.test_reachability import (
    coding_history,
    demo_scenarios,
    demo_session,
    reachability,
    session_of,
)

# Turn 4 (index 3) lists the docs, which nothing later names; turn 2 (index 1) runs the tests.
DOCS = "turn_3/c3-call"
TESTS = "turn_1/c1-call"
ACTIVE_FILE = "src/billing/tax.py, a file the latest 3 turns work on"


@pytest.fixture
def coding(counter: TokenCounter) -> Session:
    """The written coding session of the reachability tests, at 90 % of its window."""
    return session_of(coding_history(), counter)


def test_a_prune_takes_exactly_the_named_segments_below_the_target(coding: Session) -> None:
    relaxed = reachability(threshold_percent=99, target_percent=98, preserve_recent_turns=2)
    assert gcengine.run_gc(coding, relaxed).result.items_collected == 0  # nothing to collect
    config = gcengine.pruning_config(relaxed, "stash", [DOCS, "turn_3"])
    outcome = gcengine.run_gc(coding, config)
    items = outcome.result.removal_list
    assert [item.child_key for item in items] == [DOCS, "turn_3"]
    assert all(item.verdict is not None and item.verdict.action == "stashed" for item in items)
    assert items[0].verdict is not None
    assert items[0].verdict.sentence.startswith(
        "named to be pruned; unreachable: no later turn names docs/intro.md; score "
    )
    turns = {m.turn_index for m in outcome.session.history}
    assert {m.turn_index for m in coding.history} - turns == {3}
    stash = outcome.result.stash
    assert stash is not None
    assert [s.segment_id for s in stash.segments] == [DOCS, "turn_3"]
    back = gcengine.restore(outcome.session, stash, [DOCS, "turn_3"])
    assert back.history == coding.history


def test_a_reachable_segment_named_is_taken_and_says_it_was_reachable(coding: Session) -> None:
    outcome = gcengine.run_gc(
        coding, gcengine.pruning_config(reachability(), "delete", ["turn_0/c0-call"])
    )
    (item,) = outcome.result.removal_list
    assert item.verdict is not None
    assert item.verdict.action == "deleted"
    assert item.verdict.sentence.startswith(
        "named to be pruned; reachable: the reply of turn 1 reports this tool output; "
    )
    assert outcome.result.stash is not None
    assert outcome.result.stash.segments == []


def test_pinned_locked_recent_and_root_segments_are_refused_with_their_reasons(
    coding: Session,
) -> None:
    config = reachability(pinned_turn_indices=[1], preserve_recent_turns=2)
    named = [TESTS, "turn_0", "turn_7", "turn_2", "turn_2/c2-call", DOCS, "turn_9/nothing"]
    with pytest.raises(PruneRefused) as refused:
        gcengine.check_pruning(coding, gcengine.pruning_config(config, None, named))
    recent = "in one of the 2 turns a collection never touches (preserve_recent_turns)"
    assert refused.value.refused == {
        TESTS: "this tool output is in a pinned turn, which no collection touches",
        "turn_0": "this turn holds locked content, which no collection removes",
        "turn_7": f"this turn is {recent}",
        "turn_2": "this turn goes only whole, and the read_file output of turn 3 is the latest "
        f"work on {ACTIVE_FILE}",
        "turn_2/c2-call": f"this tool output is the latest work on {ACTIVE_FILE}",
    }
    assert refused.value.unknown == ["turn_9/nothing"]
    assert str(refused.value).startswith(f"nothing pruned: {TESTS}: this tool output is in a")
    assert str(refused.value).endswith("the session has no segment 'turn_9/nothing'")
    # A run of the same policy refuses the same way, before taking anything.
    with pytest.raises(PruneRefused):
        gcengine.run_gc(coding, gcengine.pruning_config(config, None, named))
    gcengine.check_pruning(coding, gcengine.pruning_config(config, None, [DOCS]))  # takeable


def test_pruning_config_reads_any_policy_as_reachability_with_the_action_asked() -> None:
    budget = gcengine.load_gc_config({"type": "budget", "plugin_config": {"x": 1}}, env={})
    config = gcengine.pruning_config(budget, "auto", ["turn_2", "turn_2"])
    assert (config.plugin, config.action) == ("gc_reachability", "auto")
    assert config.plugin_config == {"x": 1, "segment_ids": ["turn_2"]}
    again = gcengine.pruning_config(config)  # no segments named: a policy run again
    assert (again.action, again.plugin_config) == ("auto", {"x": 1})


def test_named_segments_must_be_a_list_of_ids(coding: Session) -> None:
    config = reachability(plugin_config={"segment_ids": "turn_3"})
    with pytest.raises(ConfigError, match=r"plugin_config\.segment_ids"):
        gcengine.run_gc(coding, config)


@st.composite
def prune_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    return {**draw(demo_scenarios()), "pick": draw(st.randoms(use_true_random=False))}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=prune_scenarios())
def test_a_prune_takes_what_it_names_and_restores_to_the_original(
    scenario: dict[str, Any],
) -> None:
    session = demo_session(scenario)
    policy = reachability(**scenario["policy"])
    candidates = [s.segment_id for s in gcengine.analyze(session, policy).candidates]
    assume(candidates)  # with nothing to name, a prune is the policy's own run
    named = scenario["pick"].sample(candidates, min(len(candidates), 4))
    outcome = gcengine.run_gc(session, gcengine.pruning_config(policy, "stash", named))
    taken = [item.child_key for item in outcome.result.removal_list]
    if not taken:  # what was named frees less than the notice saying so would cost
        assert policy.notify_on_gc
        assert outcome.session.history == session.history
        return
    assert set(taken) == set(named)
    stash = outcome.result.stash
    assert stash is not None
    restored = gcengine.restore(outcome.session, stash, [s.segment_id for s in stash.segments])
    assert restored.history == session.history
