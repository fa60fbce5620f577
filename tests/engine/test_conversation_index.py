"""The flat index a built budget carries: used while it holds, never once a value is edited."""

from __future__ import annotations

from typing import Any

import gcengine
from gcengine import InstructionSource
from gcengine.conversation import budget_index
from gcengine.gc import GCTriggerReason
from gcengine.running import load_gc_plugin, plugin_options
from gcengine.tokens import TokenCounter
from tests.engine.strategies import policy, session_at

CONFIG = policy(type="budget", threshold_percent=80, target_percent=60, preserve_recent_turns=3)


def collect(session: gcengine.Session, budget: gcengine.InstructionBudget) -> dict[str, Any]:
    plugin = load_gc_plugin("budget", plugin_options(CONFIG))
    usage = {"percent_used": budget.utilization_percent()}
    history, result = plugin.collect(session.history, usage, CONFIG, GCTriggerReason.MANUAL, budget)
    return {"history": [m.message_id for m in history], "result": result.model_dump()}


def test_a_built_budget_is_collected_from_its_index_as_from_its_tree(
    counter: TokenCounter,
) -> None:
    session = session_at(40, 90, counter, tool_every=2, seed=5)
    assert budget_index(session.budget) is not None
    copy = session.budget.model_copy(deep=True)
    assert budget_index(copy) is None, "a copy is a new value: read from its tree"
    assert copy.total_tokens() == session.budget.total_tokens()
    assert collect(session, copy) == collect(session, session.budget)


def test_editing_a_budget_in_place_drops_its_index(counter: TokenCounter) -> None:
    session = session_at(40, 90, counter, tool_every=2, seed=6)
    conversation = session.budget.entries[InstructionSource.CONVERSATION]
    before = session.budget.total_tokens()
    turn = next(iter(conversation.children.values()))
    leaf = list(turn.children.values())[-1]
    leaf.tokens += 1_000
    assert budget_index(session.budget) is None
    assert session.budget.total_tokens() == before + 1_000
    fresh = session.budget.model_copy(deep=True)
    assert collect(session, session.budget) == collect(session, fresh)


def test_adding_a_child_in_place_drops_the_index(counter: TokenCounter) -> None:
    session = session_at(20, 90, counter, seed=7)
    before = session.budget.total_tokens()
    session.budget.add_child(InstructionSource.CONVERSATION, "extra", 500)
    assert session.budget.total_tokens() == before + 500


def test_editing_a_message_drops_the_index(counter: TokenCounter) -> None:
    session = session_at(20, 90, counter, seed=8)
    history = [m.model_copy() for m in session.history]
    assert budget_index(session.budget) is not None
    history[0].metadata = {"edited": True}
    assert budget_index(session.budget) is None


def test_a_run_takes_the_figures_of_kept_messages_from_the_budget_before(
    counter: TokenCounter,
) -> None:
    session = session_at(60, 95, counter, tool_every=1, seed=9)
    outcome = gcengine.run_gc(session, CONFIG)
    assert outcome.result.items_collected > 0
    assert outcome.budget_after == gcengine.rebuild_budget(outcome.session, counter)
