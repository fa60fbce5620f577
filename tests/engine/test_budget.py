"""The instruction budget's figures, snapshots and policy derivation."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import (
    POLICY_ORDER,
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    SourceEntry,
    most_protective,
)
from tests.engine.conftest import EXAMPLES, example
from tests.engine.strategies import jaato_session_files

CONV = InstructionSource.CONVERSATION


def budget_with_children(limit: int = 1000) -> InstructionBudget:
    budget = InstructionBudget.create_default(session_id="s", context_limit=limit)
    budget.add_child(InstructionSource.SYSTEM, "base", 100, GCPolicy.LOCKED)
    budget.add_child(CONV, "request", 50, GCPolicy.LOCKED)
    budget.add_child(CONV, "working", 200, GCPolicy.EPHEMERAL)
    budget.add_child(CONV, "summary", 30, GCPolicy.PRESERVABLE)
    budget.entries[InstructionSource.THINKING].tokens = 400
    return budget


def test_create_default_has_every_source_in_jaato_order() -> None:
    budget = InstructionBudget.create_default(session_id="x")
    assert list(budget.entries) == list(InstructionSource)
    assert budget.agent_type == "main"
    assert budget.entries[InstructionSource.SYSTEM].gc_policy is GCPolicy.LOCKED
    assert budget.entries[InstructionSource.ENRICHMENT].gc_policy is GCPolicy.EPHEMERAL
    assert budget.context_limit == 128_000


def test_figures_exclude_thinking_and_follow_policies() -> None:
    budget = budget_with_children()
    assert budget.total_tokens() == 380
    assert budget.total_tokens_all() == 780
    assert budget.locked_tokens() == 150
    assert budget.preservable_tokens() == 30
    assert budget.gc_eligible_tokens() == 200
    assert budget.utilization_percent() == 38.0
    assert budget.available_tokens() == 620
    assert budget.gc_headroom_percent() == 20.0


def test_available_never_goes_negative_and_a_zero_limit_is_zero_percent() -> None:
    budget = budget_with_children(limit=100)
    assert budget.available_tokens() == 0
    budget.context_limit = 0
    assert budget.utilization_percent() == 0.0
    assert budget.gc_headroom_percent() == 0.0


def test_a_container_counts_its_children_not_its_own_tokens() -> None:
    entry = SourceEntry(source=CONV, tokens=999, gc_policy=GCPolicy.PARTIAL)
    entry.add_child("a", 10, GCPolicy.EPHEMERAL)
    entry.add_child("b", 5, GCPolicy.EPHEMERAL)
    assert entry.total_tokens() == 15
    assert entry.effective_gc_policy() is GCPolicy.EPHEMERAL
    entry.add_child("c", 1, GCPolicy.LOCKED)
    assert entry.effective_gc_policy() is GCPolicy.PARTIAL
    assert entry.indicator() == "◐"


def test_jaato_quirks_of_the_buckets_are_kept() -> None:
    # An ephemeral parent makes everything under it eligible, a locked child included.
    parent = SourceEntry(source=CONV, gc_policy=GCPolicy.EPHEMERAL)
    parent.add_child("locked", 10, GCPolicy.LOCKED)
    parent.add_child("partial-leaf", 5, GCPolicy.PARTIAL)
    assert parent.gc_eligible_tokens() == 15
    assert parent.locked_tokens() == 10
    lone = SourceEntry(source=CONV, tokens=7, gc_policy=GCPolicy.PARTIAL)
    assert (lone.gc_eligible_tokens(), lone.locked_tokens(), lone.preservable_tokens()) == (0, 0, 0)


def test_add_and_remove_child() -> None:
    budget = InstructionBudget.create_default()
    child = budget.add_child(CONV, "turn_1", 12, GCPolicy.EPHEMERAL, message_ids=["m1"])
    assert child is not None
    assert child.source is CONV
    assert child.label == "turn_1"
    assert budget.remove_child(CONV, "turn_1") is True
    assert budget.remove_child(CONV, "turn_1") is False
    del budget.entries[CONV]
    assert budget.add_child(CONV, "x", 1) is None
    assert budget.remove_child(CONV, "x") is False


def test_policy_indicators() -> None:
    assert [p.indicator for p in GCPolicy] == ["🔒", "◑", "◐", "○", "◈"]
    assert all(p.description for p in GCPolicy)


def test_the_example_snapshot_reads_back_exactly() -> None:
    raw = example("jaato_budget_snapshot.json")
    budget = InstructionBudget.from_snapshot(raw)
    assert budget.snapshot() == raw
    assert budget.entries[InstructionSource.PLUGIN].tokens == 0
    assert budget.entries[InstructionSource.PLUGIN].total_tokens() == 962


def test_a_restored_container_is_not_locked_by_its_first_child() -> None:
    """JAATO restores a conversation that held only the locked request as LOCKED for good."""
    budget = InstructionBudget.create_default()
    budget.add_child(CONV, "msg_0", 10, GCPolicy.LOCKED)
    restored = InstructionBudget.from_snapshot(budget.snapshot())
    assert restored.entries[CONV].gc_policy is GCPolicy.PARTIAL
    restored.add_child(CONV, "msg_1", 500, GCPolicy.EPHEMERAL)
    assert restored.gc_eligible_tokens() == 500
    assert restored.locked_tokens() == 10


def test_a_stored_policy_the_figures_require_is_recovered() -> None:
    budget = InstructionBudget.create_default()
    parent = budget.add_child(CONV, "bundle", 0, GCPolicy.EPHEMERAL)
    assert parent is not None
    parent.add_child("a", 10, GCPolicy.LOCKED)
    snapshot = budget.snapshot()
    restored = InstructionBudget.from_snapshot(snapshot)
    assert restored.entries[CONV].children["bundle"].gc_policy is GCPolicy.EPHEMERAL
    assert restored.snapshot() == snapshot


def test_walk_visits_every_node_with_its_path() -> None:
    budget = budget_with_children()
    paths = [path for path, _ in budget.entries[CONV].walk()]
    assert paths == ["", "request", "working", "summary"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jaato_session_files(max_turns=4))
def test_leaves_are_the_nodes_without_children_in_walk_order(file: dict[str, Any]) -> None:
    budget = gcengine.load_session(json.dumps(file), counter=gcengine.load_counter("approx")).budget

    for entry in budget.entries.values():
        walked = [node for _, node in entry.walk() if not node.children]
        assert list(map(id, entry.leaves())) == list(map(id, walked))


def test_policy_order_ranks_every_policy_once_most_protective_first() -> None:
    assert sorted(POLICY_ORDER) == sorted(GCPolicy)
    assert POLICY_ORDER[0] is GCPolicy.LOCKED
    assert POLICY_ORDER[-1] is GCPolicy.EPHEMERAL
    # A conditional entry may be kept by the plugin owning its tool: above a mixed container.
    assert POLICY_ORDER.index(GCPolicy.CONDITIONAL) < POLICY_ORDER.index(GCPolicy.PARTIAL)


@given(st.lists(st.sampled_from(list(GCPolicy)), min_size=1))
def test_a_group_takes_the_most_protective_policy_of_its_members(
    policies: list[GCPolicy],
) -> None:
    chosen = most_protective(policies)
    assert chosen in policies
    assert all(POLICY_ORDER.index(chosen) <= POLICY_ORDER.index(p) for p in policies)
    # The shell stores policies as their string values: the answer is the same.
    assert most_protective([p.value for p in policies]) is chosen


def test_most_protective_of_nothing_or_of_unknown_values_is_ephemeral() -> None:
    assert most_protective([]) is GCPolicy.EPHEMERAL
    assert most_protective(["weird"]) is GCPolicy.EPHEMERAL
    assert most_protective(["weird", "preservable"]) is GCPolicy.PRESERVABLE


def test_budget_labels_number_turns_as_jaato_does() -> None:
    """JAATO labels the first turn ``turn_1``; the budget the engine builds says the same of
    the same messages as the budget JAATO recorded in the file."""
    session = gcengine.load_session(EXAMPLES / "jaato_session_v2.1.json")
    assert session.recorded_budget is not None
    recorded = session.recorded_budget.entries[gcengine.InstructionSource.CONVERSATION]
    built = session.budget.entries[gcengine.InstructionSource.CONVERSATION]

    def labels(entry: gcengine.SourceEntry) -> dict[str, str]:
        return {
            e.message_ids[0]: e.label or ""
            for _, e in entry.walk()
            if not e.children and len(e.message_ids) == 1
        }

    assert labels(built) == labels(recorded)
    turns = session.turns()
    assert [t.number for t in turns] == [1, 2]
    assert [built.children[f"turn_{t.index}"].label for t in turns] == ["turn_1", "turn_2"]
    assert gcengine.turn_label(0) == "turn 1"
    assert gcengine.turn_number(4) == 5
