"""gc_budget's ephemeral phase decides on positions (``Planned``): the units and the removal
list made afterwards from what it took are the ones a collection makes for those turns and
exchanges as it goes, so the result says exactly what it said when every unit was made."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gcengine import GCConfig, Session, load_gc_plugin, load_session, plugin_options
from gcengine.budget import GCPolicy
from gcengine.gc.plan import Collection, Decision, Planned, start_collection
from gcengine.gc.plan.units import Unit
from gcengine.gc.types import GCRemovalItem, RemovalReason
from gcengine.messages import Role
from gcengine.tokens import TokenCounter
from tests.engine.strategies import jaato_session_files, model, policy, result, session_at, user


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


def ephemeral_as_defined(collection: Collection) -> list[Unit]:
    """gc_budget's phase 1b as it is defined, from the collection's own pieces: turn by turn,
    an unsealed turn whole when it may go whole and every message of it is ephemeral, else
    its ephemeral exchanges, notices and text pieces as ``inner_units`` finds them."""
    inner = list(collection.inner_units())
    policies = collection.figures.policies
    wanted: list[Unit] = []
    for turn in range(collection.turn_count):
        if turn in collection.sealed:
            continue
        start, end = collection.layout.span(turn)
        if turn not in collection.protected and all(
            policies[p] is GCPolicy.EPHEMERAL for p in range(start, end)
        ):
            wanted.append(collection.turn_unit(turn))
        else:
            wanted += [
                u for u in inner if u.turn_position == turn and u.policy is GCPolicy.EPHEMERAL
            ]
    return wanted


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    file=jaato_session_files(max_turns=6),
    preserve=st.integers(0, 3),
    exchanges=st.none() | st.integers(0, 2),
)
def test_the_ephemeral_phase_offers_what_it_is_defined_to_offer(
    file: dict[str, Any], preserve: int, exchanges: int | None, counter: TokenCounter
) -> None:
    # Its candidates are read in one pass beside the turns: they are the same units, in the
    # same order, as the phase's definition gives, for any session, sealed recent turns and
    # sealed recent exchanges included, with the figures deciding reads.
    session = load_session(file, counter=counter)
    config = budget_policy().model_copy(update={"preserve_recent_exchanges": exchanges})
    collection = start_collection(session.history, {}, config, session.budget, counter, preserve)
    offered = list(collection.ephemeral_units())
    made = [u.unit() if isinstance(u, Planned) else u for u in offered]
    assert made == ephemeral_as_defined(collection)
    for candidate, unit in zip(offered, made, strict=True):
        assert (candidate.tokens, candidate.created_at, candidate.policy) == (
            unit.tokens,
            unit.created_at,
            unit.policy,
        )
        assert list(candidate.positions) == list(unit.positions)


@pytest.mark.parametrize("preserve", [0, 2])
def test_the_ephemeral_phase_offers_what_the_model_said_before_its_tool_work(
    preserve: int, counter: TokenCounter
) -> None:
    # Model text just before a call is a piece of its own, offered before the exchange it
    # leads up to; a turn's later exchanges read back only to the end of the one before.
    history = [
        message
        for i in range(6)
        for message in (
            user(f"question {i}", f"u{i}"),
            model("let me look that up", f"t{i}"),
            model("", f"c{i}", f"call{i}"),
            result(Role.TOOL, f"r{i}", f"call{i}"),
            model("and once more", f"s{i}"),
            model("", f"d{i}", f"again{i}"),
            result(Role.TOOL, f"e{i}", f"again{i}"),
            model(f"answer {i}", f"a{i}"),
        )
    ]
    collection = start_collection(history, {}, budget_policy(), None, counter, preserve)
    offered = [u.unit() if isinstance(u, Planned) else u for u in collection.ephemeral_units()]
    assert any(unit.key.endswith("/text") for unit in offered)
    assert offered == ephemeral_as_defined(collection)
