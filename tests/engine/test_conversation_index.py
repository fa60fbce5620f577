"""The flat index a built budget carries, and what else the engine keeps of what it read from
a value (a message's anchors, a history's segment graph): used while it holds, never once a
value is edited, and kept on the values themselves, never in a table of the process."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pydantic
import pytest

import gcengine
from gcengine import InstructionSource, Part
from gcengine.conversation import budget_index
from gcengine.gc import GCTriggerReason
from gcengine.running import load_gc_plugin, plugin_options
from gcengine.session import CLOSING_ANSWER_KEY
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
    """The index stops standing for the history once one of its messages is edited in place:
    its layout is read again from the messages, and a collection reads the budget afresh."""
    session = session_at(20, 90, counter, seed=8)
    index = budget_index(session.budget)
    assert index is not None
    assert index.describes(session.history)
    turns = session.turn_count()
    last = session.history[-1]  # the closing answer of the last turn
    assert last.turn_index is not None
    last.turn_index += 1  # now a turn of its own
    assert not index.describes(session.history)
    assert session.turn_count() == turns + 1
    fresh = session.budget.model_copy(deep=True)
    assert collect(session, session.budget) == collect(session, fresh)


def test_editing_a_copy_of_a_message_leaves_the_index_of_the_original(
    counter: TokenCounter,
) -> None:
    """A copy is another value: editing it says nothing of the history the index was made for."""
    session = session_at(20, 90, counter, seed=8)
    copies = [m.model_copy() for m in session.history]
    copies[0].metadata = {"edited": True}
    index = budget_index(session.budget)
    assert index is not None
    assert index.describes(session.history)
    assert not index.describes(copies)


def test_an_edit_of_an_entry_deep_in_a_tree_read_from_a_copy_drops_its_index(
    counter: TokenCounter,
) -> None:
    """A budget that was not built (a copy, a JAATO snapshot) keeps the index its first
    collection reads, and an edit of one of its leaves drops it as for a built one."""
    session = session_at(40, 90, counter, tool_every=2, seed=10)
    copy = session.budget.model_copy(deep=True)
    before = collect(session, copy)
    assert budget_index(copy) is not None
    leaf = next(iter(copy.entries[InstructionSource.CONVERSATION].leaves()))
    leaf.tokens += 2_000
    assert budget_index(copy) is None
    assert collect(session, copy) == collect(session, copy.model_copy(deep=True))
    assert collect(session, copy) != before


def test_a_budget_rebuilt_after_a_run_shares_entries_and_sees_their_edits(
    counter: TokenCounter,
) -> None:
    """A run's budget after keeps the turns it left alone, the very same entries as the budget
    before: an edit of one of them reaches both budgets' figures."""
    session = session_at(60, 95, counter, tool_every=1, seed=11)
    outcome = gcengine.run_gc(session, CONFIG)
    before = session.budget.entries[InstructionSource.CONVERSATION]
    after = outcome.budget_after.entries[InstructionSource.CONVERSATION]
    shared = [key for key, turn in after.children.items() if before.children.get(key) is turn]
    assert shared, "the turns a run left alone are kept"
    totals = (session.budget.total_tokens(), outcome.budget_after.total_tokens())
    next(iter(after.children[shared[-1]].leaves())).tokens += 700
    assert budget_index(session.budget) is None
    assert budget_index(outcome.budget_after) is None
    assert (session.budget.total_tokens(), outcome.budget_after.total_tokens()) == (
        totals[0] + 700,
        totals[1] + 700,
    )


def test_editing_a_closing_answer_a_run_marked_drops_the_index_after(
    counter: TokenCounter,
) -> None:
    """A closing answer a run keeps while taking the tool work before it is a marked copy; the
    index of the budget after stops standing for the history once that copy is edited in place,
    as for any message it holds."""
    session = session_at(60, 95, counter, tool_every=1, seed=11)
    outcome = gcengine.run_gc(session, CONFIG)
    after = outcome.session.history
    originals = {id(m) for m in session.history}
    marked = [
        m for m in after if m.metadata.get(CLOSING_ANSWER_KEY) is True and id(m) not in originals
    ]
    assert marked, "the run kept a closing answer of a turn it took tool work from"
    index = budget_index(outcome.budget_after)
    assert index is not None
    assert index.describes(after)
    marked[0].parts = [Part.from_text("edited after the run")]
    assert not index.describes(after)


def test_a_run_takes_the_figures_of_kept_messages_from_the_budget_before(
    counter: TokenCounter,
) -> None:
    session = session_at(60, 95, counter, tool_every=1, seed=9)
    outcome = gcengine.run_gc(session, CONFIG)
    assert outcome.result.items_collected > 0
    assert outcome.budget_after == gcengine.rebuild_budget(outcome.session, counter)


def test_editing_a_message_drops_what_was_read_from_it() -> None:
    """A message keeps what was read from it (its anchors) until it is edited; a copy starts
    with nothing read."""
    message = gcengine.Message(
        role=gcengine.Role.USER, parts=[Part.from_text("Fix src/billing/tax.py")], message_id="u1"
    )
    readings = message.readings()
    readings.anchors = ("file:src/billing/tax.py",)
    assert message.readings() is readings
    assert message.model_copy().readings() is not readings
    message.parts = [Part.from_text("Now look at src/billing/invoice.py")]
    assert message.readings() is not readings
    assert message.readings().anchors is None


def test_parts_are_values_edited_only_on_a_copy() -> None:
    """A message's copy shares its parts, so a part edited in place would change both
    messages under what was read from them: parts refuse it."""
    part = Part.from_text("hello")
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        part.text = "changed"
    call = gcengine.FunctionCall(id="c1", name="grep", args={})
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        call.name = "sed"
    assert part.model_copy(update={"text": "changed"}).text == "changed"


def test_what_is_kept_of_a_session_goes_with_it(counter: TokenCounter) -> None:
    """Nothing the engine keeps outlives the values it was read from, and reference counting
    alone frees them (the engine's values form no reference cycles)."""
    session = session_at(30, 90, counter, tool_every=2, seed=12)
    gcengine.analyze(session, policy(type="reachability"))  # anchors and a segment graph
    probes = [
        weakref.ref(session.history[0]),
        weakref.ref(session.budget.entries[InstructionSource.CONVERSATION]),
    ]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del session
        assert [probe() for probe in probes] == [None, None]
    finally:
        if was_enabled:
            gc.enable()


def test_a_budget_of_a_leaf_per_message_in_order_is_read_by_position_as_by_id(
    counter: TokenCounter,
) -> None:
    """A JAATO session's budget names each message in one leaf of its own, in history order:
    read position by position (``index_in_order``), it gives the index reading it by id
    gives; any other budget is left to the reading by id."""
    from gcengine.gc.plan import index_by_id, index_in_order
    from gcengine.messages import turn_layout

    session = session_at(30, 90, counter, tool_every=2, seed=12)
    history = session.history
    layout = turn_layout(history)
    conversation = session.budget.entries[InstructionSource.CONVERSATION]
    leaves = [e for _, e in conversation.walk() if not e.children and e.message_ids]
    assert [e.message_ids[0] for e in leaves] == layout.message_ids
    # Figures a JAATO budget could hold: a time missing, policies and tokens of its own.
    tokens = [e.tokens + n % 7 for n, e in enumerate(leaves)]
    policies = [e.gc_policy for e in leaves]
    created: list[float | None] = [e.created_at for e in leaves]
    created[3] = None
    named = [list(e.message_ids) for e in leaves]

    def by_id() -> tuple[Any, int]:
        given = zip(tokens, policies, created, named, strict=True)
        return index_by_id(history, layout, given, counter, budgeted=True)

    read = index_in_order(history, layout, list(tokens), list(policies), created, named)
    assert read is not None
    (index, total), (expected, expected_total) = read, by_id()
    assert total == expected_total == sum(tokens)
    assert index.tokens == expected.tokens
    assert index.policies == expected.policies
    assert index.created_at == expected.created_at
    assert index.layout is layout
    assert all(index.covers(i) for i in layout.message_ids)

    # Out of order, a leaf naming two messages, a message no leaf names: read by id.
    swapped = [named[1], named[0], *named[2:]]
    assert index_in_order(history, layout, tokens, policies, created, swapped) is None
    paired = [named[0] + named[1], *named[2:]]
    assert index_in_order(history, layout, tokens[1:], policies[1:], created[1:], paired) is None
    assert index_in_order(history, layout, tokens[1:], policies[1:], created[1:], named[1:]) is None


def test_the_builder_flags_each_turns_closing_answer_also_in_turns_it_copies(
    counter: TokenCounter,
) -> None:
    """The index a budget is built with flags the closing answers (``closing_answer_ids`` of
    each turn), in the turns it reads and in those a budget after a run copies from the one
    before; a run collecting from the flags answers as one reading the messages."""
    from gcengine.session import closing_answer_ids

    session = session_at(60, 95, counter, tool_every=1, seed=13)
    outcome = gcengine.run_gc(session, CONFIG)
    marked = [m for m in outcome.session.history if m.metadata.get("closes_tool_loop")]
    assert marked, "the run keeps closing answers while their tool work goes"
    for budget, history in (
        (session.budget, session.history),
        (outcome.budget_after, outcome.session.history),
    ):
        index = budget_index(budget)
        assert index is not None
        assert index.closing is not None
        flagged = [bool(flag) for flag in index.closing]
        expected = []
        for turn in range(len(index.layout)):
            start, end = index.layout.span(turn)
            closing = closing_answer_ids(history[start:end])
            expected += [m.message_id in closing for m in history[start:end]]
        assert flagged == expected
    # Collected again: from the index's flags, and from a copy of the budget (read from its
    # tree, no flags).
    again = outcome.session
    assert collect(again, again.budget) == collect(again, again.budget.model_copy(deep=True))


def test_a_history_carrying_no_turns_is_split_at_user_messages_that_are_no_tool_results(
    counter: TokenCounter,
) -> None:
    """JAATO's messages carry no turn index: the layout of such a history starts a turn at its
    first message and at each user message that is no tool result (tool results sent as user
    messages and as tool messages alike stay in the turn that called), numbered in order: the
    turns a session reading the same messages with their turns recorded has."""
    from gcengine import Message, Role
    from gcengine.messages import FunctionCall, FunctionResponse, turn_layout

    def said(role: Role, text: str) -> Message:
        return Message(role=role, parts=[Part.from_text(text)], message_id=text)

    call = Part.from_function_call(FunctionCall(id="c1", name="read", args={}))
    answer = Part.from_function_response(FunctionResponse(call_id="c1", name="read", result=1))
    history = [
        said(Role.MODEL, "before any user"),
        said(Role.USER, "ask"),
        Message(role=Role.MODEL, parts=[call], message_id="call"),
        Message(role=Role.USER, parts=[answer], message_id="result as user"),
        Message(role=Role.TOOL, parts=[answer], message_id="result as tool"),
        said(Role.MODEL, "answer"),
        said(Role.USER, "ask again"),
        said(Role.MODEL, "answer again"),
    ]
    layout = turn_layout(history)
    assert layout.starts == [0, 1, 6]
    assert layout.indices == [0, 1, 2]

    session = session_at(40, 90, counter, tool_every=2, parallel_calls=2, seed=3)
    recorded = session.history
    assert all(m.turn_index is not None for m in recorded)
    bare = [m.model_copy(update={"turn_index": None}) for m in recorded]
    expected = turn_layout(recorded)
    assert expected.indices == list(range(len(expected))), "the generator numbers turns in order"
    assert turn_layout(bare) == expected


@pytest.mark.parametrize("carry_turns", [True, False])
def test_a_history_grown_at_its_end_is_laid_out_from_its_index_as_afresh(
    counter: TokenCounter, carry_turns: bool
) -> None:
    """A replay's window grows by a message or a few turns between collections: laid out from
    the index before (``extends``, nothing compared), it is what it is laid out as from its
    messages alone, whether the last turn before went on or new turns began, with recorded
    turns and without (JAATO's)."""
    from gcengine.session import index_conversation

    session = session_at(40, 90, counter, tool_every=2, parallel_calls=2, seed=5)
    history = session.history
    if not carry_turns:
        history = [m.model_copy(update={"turn_index": None}) for m in history]

    def laid_out(messages: list[gcengine.Message], **reuse: Any) -> tuple[object, ...]:
        index, _ = index_conversation(messages, counter, exchange_figures=False, **reuse)
        layout = index.layout
        return (
            layout.starts,
            layout.indices,
            index.tokens,
            index.policies,
            index.created_at,
            index.closing,
            index.exchange_groups,
        )

    for size in (1, 7, 30, len(history) // 2):
        before, _ = index_conversation(history[:size], counter, exchange_figures=False)
        for grown in (1, 2, 9, len(history) - size):
            after = history[: size + grown]
            assert laid_out(after, reuse=before, extends=True) == laid_out(after)
