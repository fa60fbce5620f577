"""``rules: "jaato"``: truncate, summarize, hybrid and budget collect by JAATO's plugins' rules.

The cases are JAATO's own tests (``plugins/gc/tests``, ``plugins/gc_budget/tests``), as
reference §8 lists them, on the same histories: ``n`` turns of a user message and a model
answer, JAATO's usage dict (``percent_used`` 80 only) and no budget, where JAATO's plugins take
every turn that is not recent or pinned whatever the target, the original request too. Beside
them, what stays the engine's under both rules (locked content, tool calls with their
results) and the policy key itself.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import ConfigError, GCPolicy, Message, MessageKind, Role, build_budget, dump_gc_config
from gcengine.gc import GCResult, GCTriggerReason, RemovalReason
from gcengine.running import load_gc_plugin, run_gc
from gcengine.running.jaato_plugins import engine_config
from gcengine.strategies import strategy_spec
from gcengine.tokens import TokenCounter
from tests.engine.strategies import collect as collect_with_budget
from tests.engine.strategies import leaves, model, policy, result, session_at, user

JAATO = {"rules": "jaato"}
NO_SUMMARIZER = (
    "No summarizer function configured. Provide a 'summarizer' callable in plugin config."
)


def turns(n: int) -> list[Message]:
    """JAATO's ``make_history``: ``n`` (user, model) text pairs."""
    history = []
    for i in range(n):
        history += [user(f"User message {i}", f"u{i}"), model(f"Model response {i}", f"m{i}")]
    return history


def mock_summarizer(conversation: str) -> str:
    return f"Summary of {len(conversation)} chars"


def collect(
    name: str,
    history: list[Message],
    counter: TokenCounter,
    options: dict[str, Any] | None = None,
    **config: Any,
) -> tuple[list[Message], GCResult]:
    """JAATO's call: the plugin started with ``options``, JAATO's usage dict, no budget."""
    plugin = load_gc_plugin(name, options or {})
    collected: tuple[list[Message], GCResult] = plugin.collect(
        history,
        {"percent_used": 80.0},
        policy(type=name, **JAATO, **config),
        GCTriggerReason.THRESHOLD,
        counter=counter,
    )
    return collected


def kept_users(history: list[Message]) -> list[str]:
    return [m.message_id for m in history if m.message_id.startswith("u")]


# --- truncate -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "preserve", "pins", "kept"),
    [
        pytest.param(10, 3, [], ["u7", "u8", "u9"], id="truncates-old-turns"),
        pytest.param(10, 2, [0, 3], ["u0", "u3", "u8", "u9"], id="pinned"),
        pytest.param(5, 0, [2], ["u2"], id="no-recent-turns"),
    ],
)
def test_truncate_takes_every_turn_not_recent_or_pinned_whatever_the_target(
    n: int, preserve: int, pins: list[int], kept: list[str], counter: TokenCounter
) -> None:
    """JAATO: ``test_truncates_old_turns`` (7 items, 6 messages), ``test_preserves_pinned_
    indices`` (6 items), ``get_preserved_indices`` with no recent turns. The original request
    goes with the others: without a budget nothing is locked."""
    new, outcome = collect(
        "truncate", turns(n), counter, preserve_recent_turns=preserve, pinned_turn_indices=pins
    )
    assert outcome.success
    assert kept_users(new) == kept
    assert len(new) == 2 * len(kept)
    assert outcome.items_collected == n - len(kept)
    assert {item.reason for item in outcome.removal_list} == {RemovalReason.TRUNCATED}
    assert outcome.tokens_freed > 0


def test_truncate_options_over_the_policy_and_jaatos_details(counter: TokenCounter) -> None:
    """JAATO: ``test_plugin_config_overrides_gc_config`` (5 taken) and ``test_result_details``
    (turns before 10, after 3, preserve_count 3)."""
    _, overridden = collect(
        "truncate", turns(10), counter, {"preserve_recent_turns": 5}, preserve_recent_turns=2
    )
    assert overridden.items_collected == 5
    _, outcome = collect("truncate", turns(10), counter, preserve_recent_turns=3)
    details = outcome.details
    assert (details["turns_before"], details["turns_after"]) == (10, 3)
    assert details["preserve_count"] == 3
    assert details["preserved_indices"] == [7, 8, 9]


def test_truncate_notice_goes_first_with_jaatos_figures(counter: TokenCounter) -> None:
    """JAATO: ``test_notification_when_enabled`` (the notice first) and
    ``test_custom_notification_template`` ("Cleared 3 turns!")."""
    new, outcome = collect(
        "truncate", turns(5), counter, {"notify_on_gc": True}, preserve_recent_turns=2
    )
    assert outcome.notification == "Context cleaned: removed 3 old turns, kept 2 recent turns."
    assert (new[0].role, new[0].kind) == (Role.USER, MessageKind.NOTICE)
    assert new[0].text == f"[System: {outcome.notification}]"
    assert kept_users(new) == ["u3", "u4"]
    _, custom = collect(
        "truncate",
        turns(5),
        counter,
        {"notify_on_gc": True},
        preserve_recent_turns=2,
        notification_template="Cleared {removed} turns!",
    )
    assert custom.notification == "Cleared 3 turns!"


def test_a_collection_that_takes_nothing_puts_jaatos_no_op_notice_first(
    counter: TokenCounter,
) -> None:
    """JAATO's truncate, summarize and hybrid prepend the no-op notice (the engine's rules
    only report it)."""
    history = turns(5)
    new, outcome = collect(
        "truncate", history, counter, {"notify_on_gc": True}, preserve_recent_turns=10
    )
    assert outcome.items_collected == 0
    assert outcome.notification == (
        "GC triggered but all 5 turns preserved (preserve_recent_turns=10). No context removed."
    )
    assert new[0].text == f"[System: {outcome.notification}]"
    assert new[1:] == history


@pytest.mark.parametrize("name", ["truncate", "summarize", "hybrid"])
def test_jaatos_truncate_summarize_and_hybrid_have_no_continuous_mode(name: str) -> None:
    """Reference §3.2: their ``should_collect`` ignores continuous mode: the threshold only."""
    plugin = load_gc_plugin(name)
    continuous = {"type": name, "pressure_percent": 0, "target_percent": 40}
    usage = {"percent_used": 60.0, "turns": 3}
    assert plugin.should_collect(usage, policy(**continuous)) == (
        True,
        GCTriggerReason.CONTINUOUS,
    )
    assert plugin.should_collect(usage, policy(**continuous, rules="jaato")) == (False, None)
    usage = {"percent_used": 85.0, "turns": 3}
    assert plugin.should_collect(usage, policy(**continuous, rules="jaato")) == (
        True,
        GCTriggerReason.THRESHOLD,
    )


# --- summarize ------------------------------------------------------------------------------


def test_summarize_without_a_summarizer_fails_as_jaatos_does(counter: TokenCounter) -> None:
    """JAATO: ``test_fails_without_summarizer``: no offline summarizer under JAATO's rules."""
    history = turns(10)
    new, outcome = collect("summarize", history, counter, preserve_recent_turns=2)
    assert not outcome.success
    assert outcome.error == NO_SUMMARIZER
    assert new == history


def test_summarize_puts_one_summary_of_every_unprotected_turn_first(
    counter: TokenCounter,
) -> None:
    """JAATO: ``test_summarizes_old_turns`` (8 items, 5 messages, the summary first) and
    ``test_result_details`` (turns after 4, 7 summarized, preserve 3)."""
    history = turns(10)
    new, outcome = collect(
        "summarize", history, counter, {"summarizer": mock_summarizer}, preserve_recent_turns=2
    )
    assert outcome.items_collected == 8
    assert len(new) == 5
    assert new[0].kind is MessageKind.SUMMARY
    assert new[0].text.startswith("[Context Summary")
    assert new[1:] == history[-4:]
    again, details_of = collect(
        "summarize", history, counter, {"summarizer": mock_summarizer}, preserve_recent_turns=3
    )
    details = details_of.details
    assert (details["turns_before"], details["turns_after"]) == (10, 4)
    assert (details["turns_summarized"], details["preserve_count"]) == (7, 3)
    assert details["summary_length"] == len(again[0].text.splitlines()[1])


@pytest.mark.parametrize("name", ["summarize", "hybrid"])
def test_a_summarizer_that_raises_fails_the_collection(name: str, counter: TokenCounter) -> None:
    """JAATO: ``test_summarizer_exception_handled`` of summarize and hybrid (the engine's
    hybrid truncates the ancient generation first and never asks the summarizer here)."""

    def failing(_: str) -> str:
        raise RuntimeError("Summarization failed!")

    history = turns(20)
    new, outcome = collect(
        name,
        history,
        counter,
        {"summarizer": failing, "summarize_middle_turns": 5},
        preserve_recent_turns=3,
    )
    assert not outcome.success
    assert outcome.error is not None
    assert "Summarization failed" in outcome.error
    assert new == history


# --- hybrid ---------------------------------------------------------------------------------


def test_hybrid_without_a_summarizer_truncates_every_unprotected_turn(
    counter: TokenCounter,
) -> None:
    """JAATO: ``test_truncates_without_summarizer`` (17 truncated, 6 messages) and the custom
    template ("17T")."""
    new, outcome = collect(
        "hybrid",
        turns(20),
        counter,
        {"summarize_middle_turns": 5, "notify_on_gc": True},
        preserve_recent_turns=3,
        notification_template="Collected: {truncated}T, {summarized}S, {kept}K",
    )
    details = outcome.details
    assert (details["turns_truncated"], details["turns_summarized"]) == (17, 0)
    assert details["had_summarizer"] is False
    assert outcome.notification == "Collected: 17T, 0S, 3K"
    assert new[0].kind is MessageKind.NOTICE
    assert new[1:] == turns(20)[-6:]


@pytest.mark.parametrize(
    ("n", "summarized", "messages"),
    [
        pytest.param(20, 17, 7, id="old-and-middle"),
        pytest.param(30, 25, 11, id="generational-boundaries"),
        pytest.param(12, 7, 11, id="all-middle-no-ancient"),
    ],
)
def test_hybrid_with_a_summarizer_summarizes_both_generations_into_one(
    n: int, summarized: int, messages: int, counter: TokenCounter
) -> None:
    """JAATO: ``test_summarizes_old_and_middle`` (17), ``test_generational_boundaries`` (25,
    11 messages), ``test_all_middle_no_ancient`` (7): the middle generation's size changes
    nothing taken."""
    preserve = 3 if n == 20 else 5
    new, outcome = collect(
        "hybrid",
        turns(n),
        counter,
        {"summarizer": mock_summarizer, "summarize_middle_turns": 5 if n == 20 else 10},
        preserve_recent_turns=preserve,
    )
    details = outcome.details
    assert (details["turns_summarized"], details["turns_truncated"]) == (summarized, 0)
    assert details["had_summarizer"] is True
    assert new[0].kind is MessageKind.SUMMARY
    assert len(new) == 1 + 2 * preserve
    if n != 12:
        assert len(new) == messages


# --- budget ---------------------------------------------------------------------------------


def test_budget_without_a_budget_takes_jaatos_fallback(counter: TokenCounter) -> None:
    """JAATO: ``test_fallback_without_budget``: every unprotected turn, reason
    ``truncated_fallback``, mode ``fallback_truncate``, and no notice even when asked."""
    new, outcome = collect(
        "budget", turns(10), counter, {"notify_on_gc": True}, preserve_recent_turns=2
    )
    assert outcome.details["mode"] == "fallback_truncate"
    assert len(new) == 4
    assert outcome.items_collected == 8
    assert {item.reason for item in outcome.removal_list} == {RemovalReason.TRUNCATED_FALLBACK}
    assert outcome.notification is None


def test_budget_with_a_budget_collects_alike_under_both_rules(counter: TokenCounter) -> None:
    session = session_at(20, 95, counter)
    engine = run_gc(session, policy(type="budget"))
    jaato = run_gc(session, policy(type="budget", rules="jaato"))
    assert jaato.result == engine.result
    assert jaato.session.history == engine.session.history


def test_a_replay_follows_the_rules(counter: TokenCounter) -> None:
    """A replay collects with the same engine: under JAATO's rules each collection takes every
    turn not recent or locked, under the engine's it stops at the target."""
    session = session_at(30, 120, counter, tool_every=0)
    keep = {"type": "truncate", "preserve_recent_turns": 2, "target_percent": 40}
    engine = gcengine.simulate(session, policy(**keep))
    jaato = gcengine.simulate(session, policy(**keep, rules="jaato"))
    assert engine.events
    assert jaato.events
    for event in engine.events:
        assert event.result.tokens_after <= event.result.details["target_tokens"]
    for event in jaato.events:
        assert event.result.details["turns_after"] == 1 + 2  # the original request's, two recent
    assert min(e.result.tokens_after for e in jaato.events) < min(
        e.result.tokens_after for e in engine.events
    )


# --- what stays the engine's under JAATO's rules ----------------------------------------------


def test_locked_content_stays_and_tool_calls_go_with_their_results(counter: TokenCounter) -> None:
    """A session's budget locks the original request: under JAATO's rules its turn stays
    whole (JAATO's truncate would take it); every other old turn goes whole, its tool calls
    with their results."""
    history = [
        user("Fix the build.", "u0"),
        model("Looking.", "m0", "c0"),
        result(Role.TOOL, "t0", "c0"),
        model("Done.", "a0"),
        user("Now the tests.", "u1"),
        model("Running.", "m1", "c1", "c2"),
        result(Role.USER, "t1", "c1", "c2"),
        model("Green.", "a1"),
        user("Thanks.", "u2"),
        model("Welcome.", "a2"),
    ]
    budget = build_budget(history, counter, context_limit=60)
    plugin = load_gc_plugin("truncate")
    config = policy(type="truncate", rules="jaato", preserve_recent_turns=1)
    new, _ = collect_with_budget(plugin, history, config, budget)
    assert [m.message_id for m in new] == ["u0", "m0", "t0", "a0", "u2", "a2"]


# --- the key --------------------------------------------------------------------------------


def test_the_rules_key_is_checked_and_written_only_when_not_the_engines() -> None:
    assert policy(type="truncate").rules == "engine"
    assert "rules" not in dump_gc_config(policy(type="truncate"))
    assert dump_gc_config(policy(type="truncate", rules="jaato"))["rules"] == "jaato"
    with pytest.raises(ConfigError) as raised:
        policy(type="truncate", rules="strict")
    assert raised.value.key == "rules"
    with pytest.raises(ConfigError) as raised:
        policy(type="truncate", plugin_config={"rules": "JAATO"})
    assert raised.value.key == "plugin_config.rules"


def test_plugin_config_rules_win_over_the_key(counter: TokenCounter) -> None:
    """As JAATO's plugins read their options over their ``GCConfig``."""
    session = session_at(10, 95, counter, tool_every=0)
    keep = {"type": "truncate", "preserve_recent_turns": 2}
    by_key = run_gc(session, policy(**keep, rules="jaato"))
    by_option = run_gc(session, policy(**keep, plugin_config={"rules": "jaato"}))
    overruled = run_gc(session, policy(**keep, rules="jaato", plugin_config={"rules": "engine"}))
    assert by_option.session.history == by_key.session.history
    assert overruled.session.history == run_gc(session, policy(**keep)).session.history
    assert overruled.session.history != by_key.session.history


# --- the property -----------------------------------------------------------------------------


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    turns_count=st.integers(2, 25),
    tool_every=st.integers(0, 3),
    parallel=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    usage=st.floats(30, 150),
    preserve=st.integers(0, 6),
    pins=st.lists(st.integers(0, 25), max_size=3),
    notify=st.booleans(),
)
def test_jaatos_truncate_keeps_exactly_the_protected_turns_with_tool_pairs_whole(
    turns_count: int,
    tool_every: int,
    parallel: int,
    seed: int,
    usage: float,
    preserve: int,
    pins: list[int],
    notify: bool,
    counter: TokenCounter,
) -> None:
    """Under JAATO's rules truncate keeps exactly the recent turns (the last ``preserve``,
    whatever they hold), the pinned ones and those holding locked content, each whole, and
    takes every other turn whole, whatever the usage and target: no call without its
    results."""
    session = session_at(
        turns_count, usage, counter, tool_every=tool_every, parallel_calls=parallel, seed=seed
    )
    config = policy(
        type="truncate",
        rules="jaato",
        preserve_recent_turns=preserve,
        pinned_turn_indices=pins,
        notify_on_gc=notify,
    )
    outcome = run_gc(session, config)
    assert outcome.result.success
    kept = {m.message_id for m in outcome.session.history}
    locked = {mid for mid, p in leaves(session).items() if p is GCPolicy.LOCKED}
    every = session.turns()
    recent = every[max(0, len(every) - preserve) :] if preserve else []
    for turn in every:
        ids = set(turn.message_ids)
        protected = turn in recent or turn.index in set(pins) or bool(ids & locked)
        assert ids <= kept if protected else not ids & kept, turn.index
    calls = {c.id for m in outcome.session.history for c in m.function_calls}
    answers = {r.call_id for m in outcome.session.history for r in m.function_responses}
    assert calls == answers
    inserted = [m for m in outcome.session.history if m.message_id not in leaves(session)]
    if inserted:
        assert outcome.session.history[0] is inserted[0]
        assert inserted[0].kind is MessageKind.NOTICE


# --- in JAATO -------------------------------------------------------------------------------


def jaatos_config(**plugin_config: Any) -> SimpleNamespace:
    """JAATO's ``GCConfig`` as the plugins read it (attributes only)."""
    return SimpleNamespace(
        threshold_percent=80.0,
        target_percent=60.0,
        pressure_percent=None,
        max_turns=None,
        auto_trigger=True,
        check_before_send=True,
        preserve_recent_turns=5,
        pinned_turn_indices=[],
        plugin_config=plugin_config,
    )


def test_in_jaato_the_config_means_jaatos_rules_unless_the_options_say_engine() -> None:
    """The plugins JAATO loads read the config JAATO hands them as JAATO means it; the
    plugin's options (gc.json's ``plugin_config``, which JAATO's loader hands the plugin at
    ``initialize``, or JAATO's ``GCConfig.plugin_config``) choose the engine's."""
    spec = strategy_spec("truncate")
    assert engine_config(spec, jaatos_config(), {}).rules == "jaato"
    assert engine_config(spec, jaatos_config(), {"rules": "engine"}).rules == "engine"
    assert engine_config(spec, jaatos_config(rules="engine"), {}).rules == "engine"
    assert engine_config(spec, jaatos_config(rules="engine"), {"rules": "jaato"}).rules == "jaato"
    with pytest.raises(ConfigError) as raised:
        engine_config(spec, jaatos_config(), {"rules": "strict"})
    assert raised.value.key == "plugin_config.rules"
