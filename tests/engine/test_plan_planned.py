"""gc_budget's ephemeral phase decides on positions (``Planned``): the units and the removal
list made afterwards from what it took are the ones a collection makes for those turns and
exchanges as it goes, so the result says exactly what it said when every unit was made."""

from __future__ import annotations

import pytest

from gcengine import GCConfig, Session, load_gc_plugin, plugin_options
from gcengine.gc.plan import Collection, Decision, Planned, start_collection
from gcengine.gc.types import GCRemovalItem, RemovalReason
from gcengine.tokens import TokenCounter
from tests.engine.strategies import policy, session_at


def budget_policy() -> GCConfig:
    return policy(
        type="gc_budget",
        threshold_percent=80,
        target_percent=60,
        pressure_percent=90,
        preserve_recent_turns=5,
    )


def decided(session: Session, counter: TokenCounter) -> tuple[Collection, Decision]:
    config = budget_policy()
    strategy = load_gc_plugin("gc_budget", plugin_options(config))
    collection = start_collection(session.history, {}, config, session.budget, counter, 5)
    return collection, strategy.decide(collection, counter)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def session(counter: TokenCounter) -> Session:
    return session_at(120, 85, counter, tool_every=2, seed=11)


def test_units_made_later_are_those_made_as_it_goes(
    session: Session, counter: TokenCounter
) -> None:
    collection, decision = decided(session, counter)
    planned = [unit for unit, _ in decision.taken if isinstance(unit, Planned)]
    # Both kinds were decided on by position: whole turns and exchanges inside turns.
    assert any(p.whole_turn for p in planned)
    assert any(not p.whole_turn for p in planned)
    exchanges = {unit.key: unit for unit in collection.inner_units()}
    for unit, why in decision.removed:
        assert why == RemovalReason.EPHEMERAL
        if unit.whole_turn:
            assert unit.turn_position is not None
            assert unit == collection.turn_unit(unit.turn_position)
        else:
            assert unit == exchanges[unit.key]
    assert decision.freed == sum(unit.tokens for unit, _ in decision.removed)
    assert decision.removed_positions == {p for unit, _ in decision.removed for p in unit.positions}


def test_removal_list_is_read_from_the_units(session: Session, counter: TokenCounter) -> None:
    _, decision = decided(session, counter)
    items = decision.removal_items()
    assert items == [
        GCRemovalItem(
            unit.source,
            unit.key,
            unit.tokens,
            why,
            list(unit.message_ids),
            unit.turn_index,
            unit.verdict,
        )
        for unit, why in decision.removed
    ]
    # The items own their lists: changing one changes no unit, nor the collection's ids.
    items[0].message_ids.append("changed")
    assert "changed" not in decision.removed[0][0].message_ids


def test_units_are_made_once_and_keep_through_truncation(
    session: Session, counter: TokenCounter
) -> None:
    _, decision = decided(session, counter)
    # A unit taken into a summary that is then dropped for truncation.
    decision.taken[0] = (decision.taken[0][0], RemovalReason.SUMMARIZED)
    units = [unit for unit, _ in decision.removed]
    assert all(a is b for (a, _), b in zip(decision.removed, units, strict=True))
    decision.truncate_instead("for the test")
    assert all(a is b for (a, _), b in zip(decision.removed, units, strict=True))
    assert decision.removed[0][1] == RemovalReason.TRUNCATED
    assert decision.reasons()[RemovalReason.TRUNCATED] == 1
    assert decision.removal_items()[0].reason == RemovalReason.TRUNCATED
