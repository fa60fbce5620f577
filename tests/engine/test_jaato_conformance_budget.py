"""JAATO's own tests of its policy-aware collector (``gc_budget``), ported.

JAATO builds budgets by hand for these cases: a 10,000-token context, sources with fixed
figures, and a conversation either flat (no messages behind it) or with one child per message
(``msg_<i>``, as JAATO's session builds it). The same budgets are built here and handed to our
plugin's ``collect``, as an agent framework would.

Where ours differs on purpose:

* every phase respects ``preserve_recent_turns`` and pins (JAATO's phase 1b does not, B8);
* a tool call and all its results form one removal unit, which takes the most protective
  policy of its messages, instead of a separate ``tool_call_pair`` item added after the fact
  whatever its policy (B10);
* figures are budget tokens, counted once (JAATO double-counts and reports a chars/4 history
  delta in its notice, B6).

Of the 41 cases in JAATO's file, 27 are ported (3 by the lifecycle test of
``test_jaato_conformance.py``, the rest here), and these 14 are not:

==============================  ==================================================================
JAATO case                      why it is not ported
==============================  ==================================================================
``TestShouldCollect`` (6:       already covered for every strategy by ``test_strategies::``
auto_trigger off, threshold     ``test_should_collect_in_threshold_and_continuous_mode``
reached, not reached, turn
limit, continuous above and
at the target)
``TestGCConfigNewFields`` (5:   already covered by ``test_config::test_defaults`` and the
defaults, pressure 0, None,     continuous-mode tests next to it
85, custom target)
``TestToolCallPairMap::``       an internal helper on an empty history, with no behaviour of its
``test_empty_history``          own (the collections below start from empty and full histories)
``TestExpandRemovalPairs::``    pairs are never expanded after the fact: the call and its results
``test_pair_expansion_reason_`` are one unit from the start and go under that unit's reason, so
``is_tool_call_pair``           no ``tool_call_pair`` item exists (B10)
==============================  ==================================================================
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gcengine import (
    FunctionCall,
    GCConfig,
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    Message,
    MessageKind,
    Part,
    Role,
)
from gcengine.gc import GCRemovalItem, GCResult, GCTriggerReason, RemovalReason
from gcengine.running import load_gc_plugin
from tests.engine.strategies import collect, model, policy, result, user

CONVERSATION = InstructionSource.CONVERSATION
ENRICHMENT = InstructionSource.ENRICHMENT
PLUGIN = InstructionSource.PLUGIN
EPHEMERAL, LOCKED, PRESERVABLE = GCPolicy.EPHEMERAL, GCPolicy.LOCKED, GCPolicy.PRESERVABLE


def jaato_budget() -> InstructionBudget:
    """An empty budget of JAATO's test size: a 10,000-token context."""
    return InstructionBudget.create_default(session_id="s", context_limit=10_000)


def per_message_budget(
    history: Sequence[Message], figures: Sequence[int], policies: Sequence[GCPolicy]
) -> InstructionBudget:
    """JAATO's session-style conversation: one ``msg_<i>`` child per message, oldest first."""
    budget = jaato_budget()
    for index, (message, tokens, gc_policy) in enumerate(
        zip(history, figures, policies, strict=True)
    ):
        budget.add_child(
            CONVERSATION,
            f"msg_{index}",
            tokens,
            gc_policy,
            created_at=float(index),
            message_ids=[message.message_id],
        )
    return budget


def collect_budget(
    budget: InstructionBudget,
    config: GCConfig,
    history: Sequence[Message] = (),
    preserve: int | None = None,
) -> tuple[list[Message], GCResult]:
    """Our gc_budget on a hand-built budget; ``preserve`` is given as JAATO's tests give it,
    as the plugin's own option."""
    options = {} if preserve is None else {"preserve_recent_turns": preserve}
    return collect(load_gc_plugin("budget", options), list(history), config, budget)


def ledger(result: GCResult) -> list[tuple[InstructionSource, str | None, str, int]]:
    return [(i.source, i.child_key, i.reason, i.tokens_freed) for i in result.removal_list]


def removed_ids(result: GCResult) -> list[str]:
    return [mid for item in result.removal_list for mid in item.message_ids]


# --- budget entries outside the conversation ------------------------------------------------


def test_a_budget_already_below_target_is_left_alone_and_says_so() -> None:
    """JAATO: ``test_already_below_target`` (SYSTEM 1,000 locked, target 60 %)."""
    budget = jaato_budget()
    budget.set_entry(InstructionSource.SYSTEM, 1000)
    history = [user("q", "u0"), model("a", "m0")]
    new_history, outcome = collect_budget(budget, policy(type="budget"), history)
    assert outcome.success
    assert outcome.items_collected == 0
    assert "below target" in outcome.details["message"]
    assert new_history == history


@pytest.mark.parametrize(
    ("conversation", "tokens_after"),
    [
        pytest.param(6000, 6000, id="clearing-enrichment-reaches-the-target"),
        pytest.param(7000, 7000, id="nothing-else-to-take"),
    ],
)
def test_enrichment_is_cleared_whole_first(conversation: int, tokens_after: int) -> None:
    """JAATO: ``test_clears_enrichment_first``, ``test_removal_list_populated`` and
    ``test_apply_removals_no_op_without_message_ids``.

    The enrichment source goes whole, as one item without message ids, so the history is not
    touched. A flat conversation has no messages behind it, so nothing more can go.
    """
    budget = jaato_budget()
    budget.set_entry(ENRICHMENT, 2000)
    budget.set_entry(CONVERSATION, conversation)
    history = [user("q", "u0"), model("a", "m0")]
    new_history, outcome = collect_budget(budget, policy(type="budget"), history)

    assert outcome.details["enrichment_cleared"] is True
    assert ledger(outcome) == [(ENRICHMENT, None, RemovalReason.ENRICHMENT_BULK_CLEAR, 2000)]
    assert all(isinstance(item, GCRemovalItem) for item in outcome.removal_list)
    assert outcome.removal_list[0].message_ids == []
    assert new_history == history
    assert (outcome.tokens_before, outcome.tokens_after) == (conversation + 2000, tokens_after)


def test_ephemeral_entries_go_oldest_first_and_only_as_many_as_needed() -> None:
    """JAATO: ``test_removes_ephemeral_oldest_first`` (which only asks for one removal).

    Two ephemeral plugin entries of 1,000 tokens; freeing 1,000 takes the older one only.
    """
    budget = jaato_budget()
    budget.add_child(PLUGIN, "old", 1000, EPHEMERAL, created_at=1.0)
    budget.add_child(PLUGIN, "new", 1000, EPHEMERAL, created_at=2.0)
    budget.set_entry(CONVERSATION, 6500)
    _, outcome = collect_budget(budget, policy(type="budget", target_percent=75))
    assert ledger(outcome) == [(PLUGIN, "old", RemovalReason.EPHEMERAL, 1000)]
    assert outcome.details["ephemeral_removed"] == 1


@pytest.mark.parametrize(
    ("pressure", "removed"),
    [
        pytest.param(0, False, id="continuous-mode"),
        pytest.param(99, False, id="usage-below-pressure"),
        pytest.param(90, True, id="usage-at-or-above-pressure"),
    ],
)
def test_preservable_entries_go_only_under_pressure_and_never_in_continuous_mode(
    pressure: int, removed: bool
) -> None:
    """JAATO: ``test_continuous_mode_never_touches_preservable`` and
    ``test_pressure_mode_removes_preservable`` (which asserts only success).

    A preservable plugin entry of 2,000 and a locked conversation of 7,500: usage is 95 %.
    """
    budget = jaato_budget()
    budget.add_child(PLUGIN, "formatter", 2000, PRESERVABLE)
    budget.set_entry(CONVERSATION, 7500, LOCKED)
    config = policy(type="budget", target_percent=30, pressure_percent=pressure)
    _, outcome = collect_budget(budget, config)
    expected = [(PLUGIN, "formatter", RemovalReason.PRESERVABLE_UNDER_PRESSURE, 2000)]
    assert ledger(outcome) == (expected if removed else [])
    assert outcome.details["preservable_removed"] == int(removed)


@pytest.mark.parametrize(
    ("key", "gc_policy", "reason"),
    [
        pytest.param("tool_result_42", EPHEMERAL, RemovalReason.EPHEMERAL, id="ephemeral"),
        pytest.param(
            "memo_99", PRESERVABLE, RemovalReason.PRESERVABLE_UNDER_PRESSURE, id="preservable"
        ),
    ],
)
def test_the_ledger_names_an_entry_by_its_key_not_its_label(
    key: str, gc_policy: GCPolicy, reason: str
) -> None:
    """JAATO: ``test_ephemeral_candidates_return_dict_keys`` and
    ``test_preservable_candidates_return_dict_keys``: removing by label removed nothing."""
    budget = jaato_budget()
    budget.add_child(PLUGIN, key, 2000, gc_policy, label="A label that is not the key")
    budget.set_entry(CONVERSATION, 7500, LOCKED)
    _, outcome = collect_budget(budget, policy(type="budget", target_percent=30))
    assert ledger(outcome) == [(PLUGIN, key, reason, 2000)]
    assert budget.remove_child(PLUGIN, key), "the key in the ledger removes the entry"


@pytest.mark.parametrize(
    ("template", "notification"),
    [
        pytest.param(None, "Context cleaned: removed 1 items, freed 3000 tokens.", id="default"),
        pytest.param("Cleared {items} items!", "Cleared 1 items!", id="custom"),
    ],
)
def test_the_notice_reports_items_and_budget_tokens_freed(
    template: str | None, notification: str
) -> None:
    """JAATO: budget's ``test_notification_when_enabled`` and ``test_custom_notification_
    template``.

    ``freed`` is the 3,000 budget tokens the enrichment held; JAATO's is a chars/4 delta of
    the history, which here would be 0 (B6).
    """
    budget = jaato_budget()
    budget.set_entry(ENRICHMENT, 3000)
    budget.set_entry(CONVERSATION, 6000)
    config = policy(type="budget", notify_on_gc=True, notification_template=template)
    new_history, outcome = collect_budget(budget, config)
    assert outcome.notification == notification
    assert [m.text for m in new_history] == [f"[System: {notification}]"]


def test_removal_items_default_like_jaatos() -> None:
    """JAATO: ``TestGCRemovalItem`` (default values, full initialisation): plugins written for
    JAATO build these items the same way."""
    item = GCRemovalItem(source=CONVERSATION)
    assert (item.child_key, item.tokens_freed, item.reason, item.message_ids) == (None, 0, "", [])
    full = GCRemovalItem(
        source=PLUGIN, child_key="k", tokens_freed=5, reason="ephemeral", message_ids=["m"]
    )
    assert (full.source, full.child_key, full.tokens_freed, full.reason, full.message_ids) == (
        PLUGIN,
        "k",
        5,
        "ephemeral",
        ["m"],
    )


# --- the conversation ------------------------------------------------------------------------


def test_wholly_ephemeral_older_turns_go_whole_oldest_first_as_ephemeral_content() -> None:
    """JAATO: ``test_end_to_end_gc_collect_frees_tokens``, ``test_apply_removals_removes_
    messages_with_ids``, and the pair map's ``test_no_tool_calls`` and ``test_no_pairs_no_
    expansion``.

    Six alternating messages of 1,500 tokens, all ephemeral as the test's budget says, and a
    target of 50 %. JAATO removes single messages across turns; ours takes whole turns, oldest
    first, keeping the last one (``preserve_recent_turns`` 1), and the history loses exactly
    the ledger's messages. A turn whose every message is ephemeral is ephemeral content: it
    goes in phase 1b, as one unit.
    """
    history = [user("q0", "u0"), model("a0", "m0"), user("q1", "u1"), model("a1", "m1")]
    history += [user("q2", "u2"), model("a2", "m2")]
    budget = per_message_budget(history, [1500] * 6, [EPHEMERAL] * 6)
    new_history, outcome = collect_budget(
        budget, policy(type="budget", target_percent=50), history, preserve=1
    )

    assert ledger(outcome) == [
        (CONVERSATION, "turn_0", RemovalReason.EPHEMERAL, 3000),
        (CONVERSATION, "turn_1", RemovalReason.EPHEMERAL, 3000),
    ]
    assert new_history == [m for m in history if m.message_id not in removed_ids(outcome)]
    assert [m.message_id for m in new_history] == ["u2", "m2"]
    assert (outcome.tokens_before, outcome.tokens_after) == (9000, 3000)


def tool_work_in_turn_1(
    *work: Message, tokens: dict[str, int], policies: dict[str, GCPolicy] | None = None
) -> tuple[list[Message], InstructionBudget]:
    """Three turns in JAATO's per-message budget, with ``work`` in the middle one.

    Turn 0 is the locked original request and its answer, turn 1 a request, ``work`` and a
    preservable closing answer (as for a turn that used tools), turn 2 the recent one. Every
    message costs 50 tokens and is ephemeral unless ``tokens`` or ``policies`` say otherwise,
    so only what ``work`` holds is worth collecting.
    """
    history = [user("q0", "u0"), model("a0", "m0"), user("q1", "u1"), *work]
    history += [model("done", "m1"), user("q2", "u2"), model("a2", "m2")]
    chosen = {"u0": LOCKED, "m1": PRESERVABLE, **(policies or {})}
    return history, per_message_budget(
        history,
        [tokens.get(m.message_id, 50) for m in history],
        [chosen.get(m.message_id, EPHEMERAL) for m in history],
    )


def collect_older_turns(
    budget: InstructionBudget, history: list[Message], target: int = 20
) -> tuple[list[Message], GCResult]:
    """Collect down to ``target`` percent with only the last turn preserved."""
    return collect_budget(budget, policy(type="budget", target_percent=target), history, preserve=1)


def _exchange_in_an_older_turn(call_policy: GCPolicy) -> tuple[list[Message], InstructionBudget]:
    """JAATO's pair-aware case, one turn later: a call (100) and its 5,000-token result."""
    return tool_work_in_turn_1(
        model("", "mA", "A"),
        result(Role.TOOL, "tA", "A"),
        tokens={"mA": 100, "tA": 5000},
        policies={"mA": call_policy},
    )


def test_a_tool_call_and_its_result_go_together() -> None:
    """JAATO: ``test_gc_removes_tool_result_keeps_pairing``, ``test_simple_pair``,
    ``test_removing_tool_result_also_removes_model``, ``test_removing_model_also_removes_
    tool_result`` and ``test_both_already_in_removal_no_duplicates``.

    One ledger item holds the call and its result (100 + 5,000 tokens), with no duplicates;
    the request and the preservable closing answer of that turn stay, and no call or result
    is left alone.
    """
    history, budget = _exchange_in_an_older_turn(EPHEMERAL)
    new_history, outcome = collect_older_turns(budget, history)
    assert ledger(outcome) == [(CONVERSATION, "turn_1/mA", RemovalReason.EPHEMERAL, 5100)]
    assert removed_ids(outcome) == ["mA", "tA"]
    assert [m.message_id for m in new_history] == ["u0", "m0", "u1", "m1", "u2", "m2"]


def test_a_preservable_call_is_never_dragged_out_by_its_ephemeral_result() -> None:
    """JAATO's pair expansion pulls the call in whatever its policy (B10); here the exchange
    takes the call's preservable policy, so without pressure nothing of it goes."""
    history, budget = _exchange_in_an_older_turn(PRESERVABLE)
    new_history, outcome = collect_older_turns(budget, history)
    assert outcome.removal_list == []
    assert new_history == history


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param([["A", "B"]], id="one-message-answers-both"),
        pytest.param([["A"], ["B"]], id="answered-across-two-messages"),
    ],
)
def test_a_parallel_batch_goes_as_one_exchange(answers: list[list[str]]) -> None:
    """JAATO: the pair map's ``test_multiple_calls_in_one_message`` and utils'
    ``test_valid_multiple_calls_in_one_group``.

    A batch answered over two messages is one unit too; JAATO's repair of such a batch, partly
    answered, deleted the call and orphaned the answer (B25).
    """
    calls = [
        Part.from_function_call(FunctionCall(id=call_id, name="tool")) for call_id in ("A", "B")
    ]
    batch = Message(role=Role.MODEL, parts=calls, message_id="mAB")
    replies = [result(Role.TOOL, f"t{''.join(ids)}", *ids) for ids in answers]
    sizes = {"mAB": 100} | {m.message_id: 4000 // len(replies) for m in replies}
    history, budget = tool_work_in_turn_1(batch, *replies, tokens=sizes)

    _, outcome = collect_older_turns(budget, history)
    assert removed_ids(outcome) == ["mAB", *(m.message_id for m in replies)]
    assert [item.tokens_freed for item in outcome.removal_list] == [4100]


@pytest.mark.parametrize(
    ("target", "removed"),
    [
        pytest.param(40, ["mA", "tA"], id="the-older-exchange-is-enough"),
        pytest.param(10, ["mA", "tA", "mB", "tB"], id="both-exchanges"),
    ],
)
def test_sequential_exchanges_are_separate_units_taken_oldest_first(
    target: int, removed: list[str]
) -> None:
    """JAATO: the pair map's ``test_sequential_pairs`` and utils' ``test_sequential_tool_call_
    chains``: each call with its own result, one after the other (the second answered
    Google-style, in a user message)."""
    history, budget = tool_work_in_turn_1(
        model("", "mA", "A"),
        result(Role.TOOL, "tA", "A"),
        model("", "mB", "B"),
        result(Role.USER, "tB", "B"),
        tokens={"mA": 100, "tA": 3000, "mB": 100, "tB": 3000},
    )
    new_history, outcome = collect_older_turns(budget, history, target)
    assert removed_ids(outcome) == removed
    assert {i.reason for i in outcome.removal_list} == {RemovalReason.EPHEMERAL}
    calls = {c.id for m in new_history for c in m.function_calls}
    answers = {r.call_id for m in new_history for r in m.function_responses}
    assert calls == answers


@pytest.mark.parametrize("preserve", [0, 1])
def test_a_tool_exchange_in_the_turn_of_the_original_request_can_go(preserve: int) -> None:
    """The first request often starts a long tool loop: its turn holds locked content, so it
    never goes whole, but an ephemeral exchange inside it is removed like any other."""
    history = [
        user("fix the build", "u0"),
        model("looking", "m0", "call_A"),
        result(Role.TOOL, "t0", "call_A"),
        model("done", "m0b"),
        user("thanks", "u1"),
        model("welcome", "m1"),
    ]
    budget = per_message_budget(
        history,
        [50, 100, 5000, 50, 50, 50],
        [LOCKED, EPHEMERAL, EPHEMERAL, PRESERVABLE, EPHEMERAL, EPHEMERAL],
    )

    new_history, outcome = collect_budget(
        budget, policy(type="budget", target_percent=20), history, preserve=preserve
    )

    assert removed_ids(outcome)[:2] == ["m0", "t0"]
    assert outcome.tokens_after <= 2000
    assert [m.message_id for m in new_history][:2] == ["u0", "m0b"]


@pytest.mark.parametrize("strategy", ["truncate", "summarize", "hybrid", "budget"])
def test_without_a_budget_the_original_request_is_kept(strategy: str) -> None:
    """JAATO's ``test_fallback_without_budget``, for every strategy: with no budget to read
    policies from, the user's first request is still locked, so its turn stays."""
    history = [m for i in range(6) for m in (user(f"u{i}", f"u{i}"), model(f"m{i}", f"m{i}"))]
    plugin = load_gc_plugin(strategy, {"preserve_recent_turns": 2})

    new_history, outcome = plugin.collect(
        history,
        {"percent_used": 95.0, "context_limit": 50, "turns": 6},
        policy(type=strategy, target_percent=0),
        GCTriggerReason.MANUAL,
        None,
    )

    assert outcome.success
    kept = [m.message_id for m in new_history if m.kind is MessageKind.CHAT]
    assert kept[:2] == ["u0", "m0"]
    assert kept[-4:] == ["u4", "m4", "u5", "m5"]
    if strategy == "budget":
        assert outcome.details["mode"] == "fallback_truncate"
