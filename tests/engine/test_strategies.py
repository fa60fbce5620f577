"""The five strategies: what each removes, and the guarantees every one keeps."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import GCPolicy, InstructionSource, MessageKind, Role, split_into_turns
from gcengine.gc import GCTriggerReason, RemovalReason
from gcengine.gc.summarizers import sentences
from gcengine.running import (
    PluginError,
    discover_gc_plugins,
    load_gc_plugin,
    plugins,
    run_gc,
)
from gcengine.synthetic import SessionShape
from gcengine.tokens import TokenCounter, count_message
from tests.engine.strategies import leaves, model, policy, result, session_at, user

STRATEGIES = ["truncate", "summarize", "hybrid", "budget", "reachability"]


def test_the_package_registers_its_strategies_for_jaato_under_names_of_their_own() -> None:
    """What JAATO's ``discover_gc_plugins`` reads: the engine's names load its JAATO plugins,
    and none of JAATO's own names is registered by the engine."""
    from importlib.metadata import entry_points

    ours = {
        ep.name: ep.load()
        for ep in entry_points(group="jaato.gc_plugins")
        if ep.value.startswith("gcengine.")
    }
    assert {name: cls().name for name, cls in ours.items()} == {
        f"gc_gcengine_{short}": f"gc_gcengine_{short}" for short in STRATEGIES
    }


STRATEGY_NAMES = ["gc_truncate", "gc_summarize", "gc_hybrid", "gc_budget", "gc_reachability"]


def test_all_five_strategies_are_discoverable_and_load_by_either_name() -> None:
    assert set(STRATEGY_NAMES) <= set(discover_gc_plugins())
    assert load_gc_plugin("truncate").name == "gc_truncate"
    assert load_gc_plugin("gc_budget", {"preserve_recent_turns": 2}).name == "gc_budget"
    assert load_gc_plugin("gcengine_hybrid").name == "gc_hybrid"
    assert load_gc_plugin("gc_gcengine_reachability").name == "gc_reachability"
    with pytest.raises(PluginError, match="no GC plugin named 'fifo'"):
        load_gc_plugin("fifo")


def test_the_engines_strategies_load_without_reading_installed_packages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ours win over any installed plugin of the same name: a run need not read every
    package's entry points to find them, and a package whose metadata is broken cannot stop
    them. Any other name is looked up among the installed plugins."""

    def unreadable(**_: object) -> list[object]:
        raise OSError("broken package metadata")

    monkeypatch.setattr(plugins, "entry_points", unreadable)

    assert [load_gc_plugin(name).name for name in ("budget", "gc_truncate")] == [
        "gc_budget",
        "gc_truncate",
    ]
    with pytest.raises(OSError, match="broken package metadata"):
        load_gc_plugin("fifo")


@pytest.mark.parametrize("name", STRATEGIES)
def test_should_collect_in_threshold_and_continuous_mode(name: str) -> None:
    plugin = load_gc_plugin(name)
    threshold = policy(type=name, threshold_percent=75, target_percent=60)
    assert plugin.should_collect({"percent_used": 80}, threshold) == (
        True,
        GCTriggerReason.THRESHOLD,
    )
    assert plugin.should_collect({"percent_used": 50}, threshold) == (False, None)
    limited = policy(type=name, threshold_percent=90, max_turns=10)
    assert plugin.should_collect({"percent_used": 50, "turns": 15}, limited) == (
        True,
        GCTriggerReason.TURN_LIMIT,
    )
    continuous = policy(type=name, target_percent=60, pressure_percent=0)
    assert plugin.should_collect({"percent_used": 65}, continuous) == (
        True,
        GCTriggerReason.CONTINUOUS,
    )
    assert plugin.should_collect({"percent_used": 60}, continuous) == (False, None)
    assert plugin.should_collect({"percent_used": 99}, policy(type=name, auto_trigger=False)) == (
        False,
        None,
    )


@pytest.mark.parametrize("name", STRATEGIES)
def test_nothing_is_removed_when_usage_is_already_at_target(
    name: str, counter: TokenCounter
) -> None:
    session = session_at(20, 55, counter, seed=1)
    outcome = run_gc(session, policy(type=name))
    assert outcome.result.success
    assert outcome.result.items_collected == 0
    assert outcome.session.history == session.history


@pytest.mark.parametrize("name", STRATEGIES)
def test_stops_at_the_target_instead_of_keeping_only_recent_turns(
    name: str, counter: TokenCounter
) -> None:
    session = session_at(60, 85, counter, seed=2)
    outcome = run_gc(session, policy(type=name, target_percent=60))
    after = outcome.budget_after.utilization_percent()
    assert after <= 60
    assert after > 45, "a collection that stops at the target leaves most of the context"
    assert len(outcome.session.turns()) > 30


def test_truncate_removes_whole_turns_oldest_first(counter: TokenCounter) -> None:
    session = session_at(40, 90, counter, seed=3)
    outcome = run_gc(session, policy(type="truncate"))
    removed = [item.turn_index for item in outcome.result.removal_list]
    assert removed == sorted(removed)
    assert removed[0] == 1, "turn 0 holds the locked original request"
    assert {item.reason for item in outcome.result.removal_list} == {RemovalReason.TRUNCATED}
    turns_before = {t.index: t.message_ids for t in session.turns()}
    for item in outcome.result.removal_list:
        assert item.message_ids == turns_before[item.turn_index]
        assert item.child_key == f"turn_{item.turn_index}"


def test_pins_by_turn_index_and_by_message_id_survive(counter: TokenCounter) -> None:
    session = session_at(40, 95, counter, seed=4)
    pinned_message = session.turns()[9].messages[-1].message_id
    outcome = run_gc(
        session,
        policy(type="truncate", pinned_turn_indices=[4], pinned_message_ids=[pinned_message]),
    )
    kept = {t.index for t in outcome.session.turns()}
    assert {4, 9} <= kept
    assert 5 not in kept


def test_pins_name_turns_as_uploaded_even_after_an_earlier_collection(
    counter: TokenCounter,
) -> None:
    session = session_at(40, 95, counter, seed=5)
    first = run_gc(session, policy(type="truncate", target_percent=70)).session
    assert 3 not in {t.index for t in first.turns()}
    pinned = max(t.index for t in first.turns() if t.index is not None) - 10
    second = run_gc(first, policy(type="truncate", target_percent=20, pinned_turn_indices=[pinned]))
    assert pinned in {t.index for t in second.session.turns()}


def test_summarize_chains_summaries(counter: TokenCounter) -> None:
    session = session_at(50, 90, counter, seed=6)
    first = run_gc(session, policy(type="summarize", target_percent=70))
    summaries = [m for m in first.session.history if m.kind is MessageKind.SUMMARY]
    assert len(summaries) == 1
    assert summaries[0].metadata["summary_number"] == 1
    covered = summaries[0].metadata["covers_turns"]
    assert covered == [i.turn_index for i in first.result.removal_list]
    assert leaves(first.session)[summaries[0].message_id] is GCPolicy.PRESERVABLE
    assert "gc_summary_1" in first.budget_after.entries[InstructionSource.CONVERSATION].children

    second = run_gc(first.session, policy(type="summarize", target_percent=40))
    chain = [m for m in second.session.history if m.kind is MessageKind.SUMMARY]
    assert len(chain) == 1
    assert chain[0].metadata["summary_number"] == 2
    assert chain[0].metadata["covers_summary"] == 1
    assert "Earlier:" in chain[0].text


def test_a_summary_is_never_taken_for_the_original_request(counter: TokenCounter) -> None:
    session = session_at(30, 90, counter, seed=7)
    outcome = run_gc(session, policy(type="summarize", notify_on_gc=True))
    policies = leaves(outcome.session)
    locked = [m for m in outcome.session.history if policies[m.message_id] is GCPolicy.LOCKED]
    assert locked == [session.history[0]]
    kinds = [m.kind for m in outcome.session.history if m.kind is not MessageKind.CHAT]
    assert sorted(kinds) == [MessageKind.NOTICE, MessageKind.SUMMARY]


def test_the_extractive_summary_keeps_tool_calls_with_their_arguments_and_results(
    counter: TokenCounter,
) -> None:
    session = session_at(12, 99, counter, seed=8, tool_every=1)
    outcome = run_gc(session, policy(type="summarize", preserve_recent_turns=1, target_percent=10))
    summary = next(m for m in outcome.session.history if m.kind is MessageKind.SUMMARY)
    covered = summary.metadata["covers_turns"][0]
    turn = next(t for t in session.turns() if t.index == covered)
    call = next(c for m in turn.messages for c in m.function_calls)
    assert f"called {call.name}(path=" in summary.text
    assert "returned" in summary.text


@settings(max_examples=500, deadline=None)
@given(text=st.text(st.sampled_from("ab.!? \n\t\r\x0b\x0c\x1c\x85\xa0\u2003\u2028"), max_size=40))
def test_the_summarizer_splits_sentences_where_the_sentence_pattern_does(text: str) -> None:
    assert sentences(text) == re.split(r"(?<=[.!?])\s+|\n+", text)


def test_a_failing_summarizer_fails_the_run_and_changes_nothing(counter: TokenCounter) -> None:
    session = session_at(30, 90, counter, seed=9)
    before = copy.deepcopy(session)

    def broken(transcript: str) -> str:
        raise RuntimeError("model offline")

    plugin = load_gc_plugin("summarize", {"summarizer": broken})
    outcome = run_gc(session, policy(type="summarize"), plugin=plugin)
    assert not outcome.result.success
    assert "Summarization failed: model offline" in (outcome.result.error or "")
    assert outcome.session == before
    assert session == before


@pytest.mark.parametrize(
    ("middle", "expect_truncated", "expect_summarized"),
    [(0, True, False), (10, True, True), (100, False, True)],
)
def test_hybrid_options_change_the_outcome(
    middle: int, expect_truncated: bool, expect_summarized: bool, counter: TokenCounter
) -> None:
    session = session_at(40, 99, counter, seed=10)
    outcome = run_gc(
        session,
        policy(
            type="hybrid", summarize_middle_turns=middle, target_percent=30, threshold_percent=80
        ),
    )
    reasons = {item.reason for item in outcome.result.removal_list}
    assert (RemovalReason.TRUNCATED in reasons) is expect_truncated
    assert (RemovalReason.SUMMARIZED in reasons) is expect_summarized


def test_budget_takes_ephemeral_content_oldest_first_whole_ephemeral_turns_included(
    counter: TokenCounter,
) -> None:
    """Phase 1b: tool exchanges inside older turns and turns whose every message is ephemeral
    (one unit each), oldest first, before any partial turn goes in phase 2."""
    session = session_at(60, 70, counter, seed=11)
    policies = leaves(session)
    outcome = run_gc(session, policy(type="budget", target_percent=60, threshold_percent=65))
    items = outcome.result.removal_list
    assert items
    assert {item.reason for item in items} == {RemovalReason.EPHEMERAL}
    positions = {m.message_id: p for p, m in enumerate(session.history)}
    firsts = [min(positions[i] for i in item.message_ids) for item in items]
    assert firsts == sorted(firsts)
    whole_turns = 0
    for item in items:
        removed = [m for m in session.history if m.message_id in item.message_ids]
        turn = next(t for t in session.turns() if t.index == item.turn_index)
        if item.message_ids == turn.message_ids:
            whole_turns += 1
            assert all(policies[i] is GCPolicy.EPHEMERAL for i in item.message_ids)
            continue
        calls = {c.id for m in removed for c in m.function_calls}
        answers = {r.call_id for m in removed for r in m.function_responses}
        assert calls
        assert calls == answers
    assert whole_turns


def test_budget_takes_a_wholly_ephemeral_turn_before_older_partial_turns(
    counter: TokenCounter,
) -> None:
    """The seed's order: an old turn whose every entry is ephemeral goes in phase 1b, before
    phase 2 takes partial turns that are older still."""
    history = [user("Start with the plan.", "u0"), model("Planned.", "m0")]
    for turn in range(1, 6):
        history += [
            user(f"Question {turn} " * 30, f"u{turn}"),
            model(f"Answer {turn}.", f"m{turn}"),
        ]
    budget = gcengine.build_budget(history, counter, context_limit=1_000)
    conversation = budget.entries[InstructionSource.CONVERSATION]
    for _, leaf in conversation.walk():
        # Turns 1 and 2 hold a preservable-free but locked-free mix: their answers are
        # conditional, so they are partial turns; turn 3 is wholly ephemeral.
        if not leaf.children and leaf.message_ids[0] in {"m1", "m2"}:
            leaf.gc_policy = GCPolicy.CONDITIONAL
    plugin = load_gc_plugin("budget", {"preserve_recent_turns": 2})
    usage = {"percent_used": budget.utilization_percent()}
    target = int(budget.total_tokens() - conversation_turn_tokens(budget, "u3") + 1)
    config = policy(
        type="budget", target_percent=target / 10, threshold_percent=min(100, target / 10 + 1)
    )
    _, result = plugin.collect(history, usage, config, GCTriggerReason.MANUAL, budget)
    assert [(i.turn_index, i.reason) for i in result.removal_list] == [(3, RemovalReason.EPHEMERAL)]


def test_a_turn_that_loses_its_first_message_and_keeps_the_rest_is_counted_after(
    counter: TokenCounter,
) -> None:
    """A history that begins mid-task with the model's call: gc_budget takes that exchange,
    and the first turn keeps only the model's closing answer, which begins the new history's
    first turn. The run's count of turns after is the new history's."""
    history = [
        model("", "m0", "c0"),
        result(Role.TOOL, "t0", "c0"),
        model("Done with the setup.", "m0b"),
        user("Now the task.", "u1"),
    ]
    for turn in range(2, 6):
        history += [user(f"Question {turn}.", f"u{turn}"), model(f"Answer {turn}.", f"m{turn}")]
    budget = gcengine.build_budget(history, counter, context_limit=200)
    plugin = load_gc_plugin("budget", {"preserve_recent_turns": 4})
    config = policy(type="budget", target_percent=1, threshold_percent=2, pressure_percent=None)

    new_history, result_ = plugin.collect(
        history, {"percent_used": 100.0}, config, GCTriggerReason.MANUAL, budget
    )

    taken = [i.message_ids for i in result_.removal_list]
    assert taken == [["m0", "t0"]], "the exchange, and nothing else of the first turn"
    assert [m.message_id for m in new_history][:2] == ["m0b", "u1"]
    assert result_.details["turns_before"] == len(split_into_turns(history)) == 6
    assert result_.details["turns_after"] == len(split_into_turns(new_history)) == 6


def conversation_turn_tokens(budget: gcengine.InstructionBudget, first_id: str) -> int:
    conversation = budget.entries[InstructionSource.CONVERSATION]
    turn = next(t for t in conversation.children.values() if t.message_ids[0] == first_id)
    return turn.total_tokens()


def test_budget_touches_preservable_only_under_pressure_and_never_in_continuous_mode(
    counter: TokenCounter,
) -> None:
    session = session_at(40, 95, counter, seed=12, tool_every=2)
    preservable = {mid for mid, p in leaves(session).items() if p is GCPolicy.PRESERVABLE}
    assert preservable
    continuous = run_gc(session, policy(type="budget", target_percent=5, pressure_percent=0))
    assert preservable <= {m.message_id for m in continuous.session.history}
    assert continuous.result.details["preservable_removed"] == 0
    pressured = run_gc(session, policy(type="budget", target_percent=5, pressure_percent=90))
    assert pressured.result.details["preservable_removed"] > 0
    relaxed = run_gc(session, policy(type="budget", target_percent=5, pressure_percent=99))
    assert relaxed.result.details["preservable_removed"] == 0


def test_budget_clears_enrichment_and_ephemeral_plugin_entries_first(counter: TokenCounter) -> None:
    session = session_at(10, 50, counter, seed=13)
    recorded = gcengine.InstructionBudget.create_default(context_limit=session.context_limit)
    recorded.entries[InstructionSource.ENRICHMENT].tokens = 3000
    recorded.add_child(
        InstructionSource.PLUGIN, "web_search", 2000, GCPolicy.EPHEMERAL, created_at=1.0
    )
    recorded.add_child(InstructionSource.PLUGIN, "filesystem", 800, GCPolicy.LOCKED)
    del recorded.entries[InstructionSource.CONVERSATION]
    session = session.model_copy(update={"recorded_budget": recorded})
    session.budget = gcengine.rebuild_budget(session, counter)
    outcome = run_gc(session, policy(type="budget", target_percent=45, threshold_percent=50))
    first, second = outcome.result.removal_list[:2]
    assert (first.source, first.child_key, first.reason) == (
        InstructionSource.ENRICHMENT,
        None,
        RemovalReason.ENRICHMENT_BULK_CLEAR,
    )
    assert (second.source, second.child_key) == (InstructionSource.PLUGIN, "web_search")
    plugin_entry = outcome.budget_after.entries[InstructionSource.PLUGIN]
    assert list(plugin_entry.children) == ["filesystem"]
    assert outcome.budget_after.entries[InstructionSource.ENRICHMENT].total_tokens() == 0


def test_budget_without_a_budget_falls_back_to_truncation_and_says_so(
    counter: TokenCounter,
) -> None:
    session = session_at(20, 90, counter, seed=14)
    plugin = load_gc_plugin("budget")
    usage = {"percent_used": 90.0, "context_limit": session.context_limit, "turns": 20}
    history, result = plugin.collect(
        session.history, usage, policy(type="budget"), GCTriggerReason.MANUAL
    )
    assert result.details["mode"] == "fallback_truncate"
    assert {i.reason for i in result.removal_list} == {RemovalReason.TRUNCATED_FALLBACK}
    assert len(history) < len(session.history)


def test_collect_never_mutates_its_inputs(counter: TokenCounter) -> None:
    session = session_at(30, 95, counter, seed=15)
    history, budget = copy.deepcopy(session.history), session.budget.model_copy(deep=True)
    for name in STRATEGIES:
        run_gc(session, policy(type=name, notify_on_gc=True))
    assert session.history == history
    assert session.budget == budget


@pytest.mark.parametrize("name", STRATEGIES)
def test_notification_is_a_notice_with_the_strategys_figures(
    name: str, counter: TokenCounter
) -> None:
    session = session_at(30, 95, counter, seed=16)
    templates = {
        "truncate": "Cleared {removed} turns!",
        "summarize": "Summarized {removed}.",
        "hybrid": "{truncated}T {summarized}S {kept}K",
        "budget": "Cleared {items} items, {freed} tokens.",
        "reachability": "Stashed {stashed}, deleted {deleted}, freed {freed}.",
    }
    outcome = run_gc(
        session, policy(type=name, notify_on_gc=True, notification_template=templates[name])
    )
    notices = [m for m in outcome.session.history if m.kind is MessageKind.NOTICE]
    assert len(notices) == 1
    assert notices[0].text == f"[System: {outcome.result.notification}]"
    assert "{" not in (outcome.result.notification or "{")


# --- Guarantees, for every strategy, on generated sessions -----------------------------------


def scenario_session(scenario: dict[str, Any], counter: TokenCounter) -> gcengine.Session:
    shape: SessionShape = scenario["shape"]
    fields = ("tool_every", "parallel_calls", "user_chars", "model_chars", "tool_result_chars")
    return session_at(
        shape.turns,
        scenario["usage"],
        counter,
        seed=shape.seed,
        **{k: getattr(shape, k) for k in fields},
    )


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    target = draw(st.integers(10, 70))
    pressure = draw(st.sampled_from([0, 0, target + 5, 95]))
    return {
        "shape": SessionShape(
            turns=draw(st.integers(2, 30)),
            tool_every=draw(st.integers(0, 3)),
            parallel_calls=draw(st.integers(1, 3)),
            user_chars=draw(st.sampled_from([40, 400])),
            model_chars=draw(st.sampled_from([60, 600])),
            tool_result_chars=draw(st.sampled_from([200, 2000])),
            seed=draw(st.integers(0, 10_000)),
        ),
        "usage": draw(st.floats(30, 150)),
        "policy": {
            "target_percent": target,
            "threshold_percent": min(100, target + draw(st.integers(1, 30))),
            "pressure_percent": pressure,
            "preserve_recent_turns": draw(st.integers(0, 6)),
            "pinned_turn_indices": draw(st.lists(st.integers(0, 30), max_size=3)),
            "notify_on_gc": draw(st.booleans()),
            "summarize_middle_turns": draw(st.integers(0, 12)),
        },
    }


@pytest.mark.parametrize("name", STRATEGIES)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=scenarios())
def test_every_strategy_keeps_every_guarantee(
    name: str, scenario: dict[str, Any], counter: TokenCounter
) -> None:
    session = scenario_session(scenario, counter)
    config = policy(type=name, **scenario["policy"])
    before = copy.deepcopy(session)
    outcome = run_gc(session, config)
    result, after = outcome.result, outcome.session
    assert session == before, "the original session is untouched"
    assert result.success
    # The turn counts reported are those of the histories before and after.
    assert result.details["turns_before"] == len(session.turns())
    assert result.details["turns_after"] == len(after.turns())

    before_policies = leaves(session)
    kept_ids = {m.message_id for m in after.history}
    # Locked content is never removed.
    assert {mid for mid, p in before_policies.items() if p is GCPolicy.LOCKED} <= kept_ids
    # Recent and pinned turns stay whole.
    chat_turns = [t for t in session.turns() if t.kind is MessageKind.CHAT]
    recent = chat_turns[-config.preserve_recent_turns :] if config.preserve_recent_turns else []
    pinned = [t for t in chat_turns if t.index in set(config.pinned_turn_indices)]
    for turn in recent + pinned:
        assert set(turn.message_ids) <= kept_ids
    # Removal units are whole turns or complete exchanges: no call without its answer.
    calls = {c.id for m in after.history for c in m.function_calls}
    answers = {r.call_id for m in after.history for r in m.function_responses}
    assert calls == answers
    # Every turn index is unique and was a turn of the upload.
    indices = [t.index for t in after.turns() if t.index is not None]
    assert len(indices) == len(set(indices))
    assert set(indices) <= {t.index for t in session.turns()}
    # The ledger has no duplicates and its figures add up.
    ledger_ids = [i for item in result.removal_list for i in item.message_ids]
    assert len(ledger_ids) == len(set(ledger_ids))
    figures = {
        m.message_id: t for m, t in ((m, count_message(m, counter)) for m in session.history)
    }
    conversation_items = [
        i for i in result.removal_list if i.source is InstructionSource.CONVERSATION
    ]
    for item in conversation_items:
        assert item.tokens_freed == sum(figures[mid] for mid in item.message_ids)
    inserted = sum(count_message(m, counter) for m in after.history if m.message_id not in figures)
    freed = sum(item.tokens_freed for item in result.removal_list)
    assert result.tokens_before - result.tokens_after == freed - inserted
    # The budget after is the budget of the new history, with the same keys for what stayed.
    assert outcome.budget_after == gcengine.rebuild_budget(after, counter)
    assert result.tokens_after == outcome.budget_after.total_tokens()
    keys_before = set(outcome.budget_before.entries[InstructionSource.CONVERSATION].children)
    keys_after = set(outcome.budget_after.entries[InstructionSource.CONVERSATION].children)
    assert {k for k in keys_after if k.startswith("turn_")} <= keys_before
    # Stopping rule: nothing removed at or below target; otherwise stop once there.
    target = int(session.context_limit * config.target_percent / 100)
    if result.tokens_before <= target:
        assert result.items_collected == 0
    elif (
        result.removal_list
        and name in ("truncate", "budget", "reachability")
        and not config.notify_on_gc
    ):
        last = result.removal_list[-1]
        assert result.tokens_before - (freed - last.tokens_freed) > target


def verbose_summarizer(transcript: str) -> str:
    """A summarizer that writes more than it was given, whatever the cap."""
    return transcript * 3 + " and more" * 50


def run_scenario(name: str, scenario: dict[str, Any], **overrides: Any) -> gcengine.GCOutcome:
    """``run_gc`` of the scenario's session under its policy (with ``overrides``), the
    summarizing strategies writing with the scenario's summarizer."""
    session = scenario_session(scenario, scenario["counter"])
    config = policy(type=name, **{**scenario["policy"], **overrides})
    options = gcengine.running.plugin_options(config)
    verbose = scenario["summarizer"] == "verbose"
    options["summarizer"] = verbose_summarizer if verbose else scenario["summarizer"]
    return run_gc(session, config, plugin=load_gc_plugin(name, options))


def summarizing_scenarios() -> st.SearchStrategy[dict[str, Any]]:
    """``scenarios``, with notices on or off, a summary cap, and a summarizer that keeps to it
    (extractive, digest) or one that writes more than it replaces."""
    return scenarios().flatmap(
        lambda scenario: st.fixed_dictionaries(
            {
                "shape": st.just(scenario["shape"]),
                "usage": st.just(scenario["usage"]),
                "policy": st.fixed_dictionaries(
                    {
                        **{k: st.just(v) for k, v in scenario["policy"].items()},
                        "notify_on_gc": st.booleans(),
                        "max_summary_tokens": st.sampled_from([None, 4, 40, 400]),
                    }
                ),
                "summarizer": st.sampled_from(["extractive", "digest", "verbose"]),
            }
        )
    )


@pytest.mark.parametrize("name", STRATEGIES)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=scenarios())
def test_the_budget_after_a_run_is_updated_from_what_it_changed_and_equals_a_rebuild(
    name: str, scenario: dict[str, Any], counter: TokenCounter
) -> None:
    """A run updates the budget with what it removed and inserted: every turn it left alone
    keeps the very entry it had before, and the whole is the budget built from scratch."""
    session = scenario_session(scenario, counter)
    outcome = run_gc(session, policy(type=name, **scenario["policy"]))
    assert outcome.budget_after == gcengine.rebuild_budget(outcome.session, counter)
    before = outcome.budget_before.entries[InstructionSource.CONVERSATION].children
    after = outcome.budget_after.entries[InstructionSource.CONVERSATION].children
    changed = {m.message_id for m in session.history} ^ {
        m.message_id for m in outcome.session.history
    }
    for key, entry in after.items():
        old = before.get(key)
        if old is not None and key.startswith("turn_") and not changed & set(old.message_ids):
            assert entry is old, f"{key} was left alone but rebuilt"


@pytest.mark.parametrize("name", STRATEGIES)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=summarizing_scenarios())
def test_a_collection_never_grows_the_context(
    name: str, scenario: dict[str, Any], counter: TokenCounter
) -> None:
    """Whatever it removes and inserts (a summary, a notice), a run ends with no more tokens
    in context than it started with; a summary never costs what it replaces."""
    outcome = run_scenario(name, {**scenario, "counter": counter})
    result = outcome.result
    assert result.success
    assert result.tokens_after <= result.tokens_before
    assert outcome.budget_after.total_tokens() <= outcome.budget_before.total_tokens()
    written = result.details.get("summary_number")
    if written is not None:
        summary = next(
            m
            for m in outcome.session.history
            if m.kind is MessageKind.SUMMARY and m.metadata.get("summary_number") == written
        )
        # what it covers: the turns summarized, or what the reachability strategy stashed
        replaced = sum(
            i.tokens_freed
            for i in result.removal_list
            if i.reason == RemovalReason.SUMMARIZED or (i.verdict and i.verdict.action == "stashed")
        )
        assert count_message(summary, counter) < replaced


@pytest.mark.parametrize("name", STRATEGIES)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=summarizing_scenarios())
def test_a_collection_lands_at_or_below_the_target_counting_what_it_inserts(
    name: str, scenario: dict[str, Any], counter: TokenCounter
) -> None:
    """Usage after a run, its summary and notice in, is at or below the target, unless the run
    took everything it may take: then a run aiming at zero takes exactly the same."""
    scenario = {**scenario, "counter": counter}
    outcome = run_scenario(name, scenario)
    session, result = outcome.session, outcome.result
    target = int(session.context_limit * scenario["policy"]["target_percent"] / 100)
    if result.tokens_after <= target:
        return
    everything = run_scenario(name, scenario, target_percent=0).result

    def removed(r: gcengine.GCResult) -> set[str]:
        return {i for item in r.removal_list for i in item.message_ids}

    assert removed(result) == removed(everything)


def conversation_leaves(budget: gcengine.InstructionBudget) -> list[gcengine.SourceEntry]:
    conversation = budget.entries[InstructionSource.CONVERSATION]
    return [e for _, e in conversation.walk() if not e.children and e.message_ids]


def flattened(budget: gcengine.InstructionBudget) -> gcengine.InstructionBudget:
    """The same per-message figures laid out as JAATO lays them out: ``msg_<i>`` leaves."""
    flat = budget.model_copy(deep=True)
    conversation = flat.entries[InstructionSource.CONVERSATION]
    conversation.children = {f"msg_{i}": e for i, e in enumerate(conversation_leaves(flat))}
    return flat


@pytest.mark.parametrize("name", STRATEGIES)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=scenarios())
def test_the_budget_layout_does_not_change_what_is_collected(
    name: str, scenario: dict[str, Any], counter: TokenCounter
) -> None:
    """Figures are read straight from the layout the budget builder makes; any other layout of
    the same figures is read the general way, with the same outcome."""
    session = scenario_session(scenario, counter)
    config = policy(type=name, **scenario["policy"])
    plugin = load_gc_plugin(name, gcengine.running.plugin_options(config))
    usage = {"percent_used": session.budget.utilization_percent()}

    def collect(budget: gcengine.InstructionBudget) -> tuple[list[Any], dict[str, Any]]:
        history, result = plugin.collect(
            session.history, usage, config, GCTriggerReason.MANUAL, budget, counter=counter
        )
        return history, result.model_dump()

    assert collect(flattened(session.budget)) == collect(session.budget)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=scenarios(), shuffle=st.randoms(use_true_random=False))
def test_budget_takes_ephemeral_units_oldest_first_whatever_the_creation_times(
    scenario: dict[str, Any], shuffle: Any, counter: TokenCounter
) -> None:
    """With creation times in history order (as built) phase 1b reads turns lazily; with any
    other times it sorts them all. Either way the ledger is oldest first, largest first on a
    tie, and the guarantees hold."""
    session = scenario_session(scenario, counter)
    budget = session.budget.model_copy(deep=True)
    leaves = conversation_leaves(budget)
    times = [leaf.created_at for leaf in leaves]
    shuffle.shuffle(times)
    for leaf, created in zip(leaves, times, strict=True):
        leaf.created_at = created
    created = {leaf.message_ids[0]: leaf.created_at or 0.0 for leaf in leaves}
    config = policy(type="budget", **scenario["policy"])
    plugin = load_gc_plugin("budget", gcengine.running.plugin_options(config))
    usage = {"percent_used": budget.utilization_percent()}
    history, result = plugin.collect(
        session.history, usage, config, GCTriggerReason.MANUAL, budget, counter=counter
    )
    ephemeral = [
        (min(created[i] for i in item.message_ids), -item.tokens_freed)
        for item in result.removal_list
        if item.reason == RemovalReason.EPHEMERAL and item.source is InstructionSource.CONVERSATION
    ]
    assert ephemeral == sorted(ephemeral)
    kept = {m.message_id for m in history}
    assert {e.message_ids[0] for e in leaves if e.gc_policy is GCPolicy.LOCKED} <= kept
    calls = {c.id for m in history for c in m.function_calls}
    assert calls == {r.call_id for m in history for r in m.function_responses}


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_repeated_message_id_takes_only_the_copy_in_the_unit_removed(
    name: str, counter: TokenCounter
) -> None:
    """Two messages share an id: one in an old turn, one in the last (recent) turn. Removing
    the old turn removes the old copy only; the recent copy is protected and stays."""
    session = session_at(12, 95, counter, tool_every=1, seed=11)
    turns = session.turns()
    old = next(m for m in turns[2].messages if m.role is gcengine.Role.MODEL and m.is_text_only)
    copy_ = old.model_copy(update={"turn_index": turns[-1].index})
    session = session.model_copy(update={"history": [*session.history, copy_]})
    session.budget = gcengine.rebuild_budget(session, counter)
    config = policy(type=name, target_percent=20, threshold_percent=30, preserve_recent_turns=2)
    outcome = run_gc(session, config)
    assert outcome.result.success
    removed_turns = {item.turn_index for item in outcome.result.removal_list}
    assert turns[2].index in removed_turns
    kept = outcome.session.history
    assert [m for m in kept if m.message_id == old.message_id] == [copy_]
    assert kept[-1] is copy_
    assert outcome.budget_after == gcengine.rebuild_budget(outcome.session, counter)


# --- Examples of the exact guarantees --------------------------------------------------------


@pytest.mark.parametrize("name", ["summarize", "hybrid"])
def test_a_summary_larger_than_what_it_replaces_is_truncation_instead(
    name: str, counter: TokenCounter
) -> None:
    """A summarizer that writes more than it was given never grows the context: the turns are
    truncated instead, and the details say why."""
    session = session_at(12, 95, counter, seed=21)
    config = policy(type=name, target_percent=50, summarize_middle_turns=20)
    options = {**gcengine.running.plugin_options(config), "summarizer": verbose_summarizer}
    outcome = run_gc(session, config, plugin=load_gc_plugin(name, options))
    result = outcome.result
    assert result.success
    assert result.tokens_after < result.tokens_before
    assert "not smaller than" in result.details["summary_skipped"]
    assert {i.reason for i in result.removal_list} == {RemovalReason.TRUNCATED}
    assert not [m for m in outcome.session.history if m.kind is MessageKind.SUMMARY]
    assert result.details["summary_tokens"] == 0


def test_a_summary_longer_than_max_summary_tokens_is_truncation_instead(
    counter: TokenCounter,
) -> None:
    session = session_at(12, 95, counter, seed=22)
    config = policy(type="summarize", target_percent=50, max_summary_tokens=5)
    options = {**gcengine.running.plugin_options(config), "summarizer": lambda text: "word " * 200}
    result = run_gc(session, config, plugin=load_gc_plugin("summarize", options)).result
    assert "max_summary_tokens (5)" in result.details["summary_skipped"]
    assert result.tokens_after < result.tokens_before


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_run_with_notices_lands_at_the_target_with_its_notice_in(
    name: str, counter: TokenCounter
) -> None:
    """The notice (and summary) a run writes is counted in its stopping rule."""
    session = session_at(40, 90, counter, seed=23, tool_every=2)
    for target in (40, 55, 61, 70):
        config = policy(type=name, target_percent=target, notify_on_gc=True)
        result = run_gc(session, config).result
        assert result.items_collected
        assert result.tokens_after <= int(session.context_limit * target / 100), target


def test_budget_without_a_budget_truncates_against_the_usage_jaato_gives(
    counter: TokenCounter,
) -> None:
    """Through the plugin protocol, as JAATO calls it: no budget, JAATO's usage dict. The usage
    covers more than the history (the system prompt, tools), and truncation frees history
    tokens against it."""
    session = session_at(20, 10, counter, seed=24)
    history_tokens = session.budget.total_tokens()
    plugin = load_gc_plugin("budget", {"preserve_recent_turns": 2})
    usages = [
        {"percent_used": 85.0, "context_limit": history_tokens * 8, "turns": 20},
        {"percent_used": 85.0, "turns": 20},
        {"total_tokens": history_tokens * 10, "context_limit": history_tokens * 11},
    ]
    for usage in usages:
        history, result = plugin.collect(
            session.history, usage, policy(type="budget"), GCTriggerReason.MANUAL
        )
        assert result.details["mode"] == "fallback_truncate"
        assert result.items_collected > 0, usage
        assert len(history) < len(session.history)
        assert {i.reason for i in result.removal_list} == {RemovalReason.TRUNCATED_FALLBACK}


def test_continuous_mode_says_it_triggered(counter: TokenCounter) -> None:
    session = session_at(30, 70, counter, seed=25)
    continuous = policy(type="budget", target_percent=40, pressure_percent=0)
    replay = gcengine.simulate(session, continuous)
    assert replay.events
    assert {e.reason for e in replay.events} == {GCTriggerReason.CONTINUOUS}
    threshold = gcengine.simulate(session, policy(type="budget", target_percent=40))
    assert GCTriggerReason.CONTINUOUS not in {e.reason for e in threshold.events}
