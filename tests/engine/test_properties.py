"""Properties of loading, turn splitting and budgets that hold for every session."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from gcengine import (
    ApproxCounter,
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    Message,
    MessageKind,
    Part,
    PartType,
    Role,
    Session,
    SourceEntry,
    TokenCounter,
    Turn,
    count_message,
    dump_session,
    load_session,
    rebuild_budget,
    split_into_turns,
)
from gcengine.conversation import budget_index
from gcengine.session import build_budget, iso_to_epoch
from tests.engine.strategies import (
    SUMMARY_TEXT,
    THOUGHT_MARKER,
    instruction_budgets,
    jaato_session_files,
    session_files_and_continuation,
)

PROPERTY_SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CONTEXT_SOURCES = [s for s in InstructionSource if s is not InstructionSource.THINKING]


def conversation_of(budget: InstructionBudget) -> SourceEntry:
    entry = budget.get_entry(InstructionSource.CONVERSATION)
    assert entry is not None
    return entry


def leaves(entry: SourceEntry) -> list[SourceEntry]:
    return [node for _, node in entry.walk() if not node.children]


def original_request(history: list[Message]) -> Message | None:
    for message in history:
        if (
            message.role is Role.USER
            and message.kind is MessageKind.CHAT
            and not message.is_function_response
        ):
            return message
    return None


def without_turns(session: Session, keep: list[bool]) -> tuple[list[Turn], list[Message]]:
    """The turns kept by ``keep`` (one flag per turn) and the history they make up."""
    kept = [turn for turn, flag in zip(session.turns(), keep, strict=True) if flag]
    return kept, [message for turn in kept for message in turn.messages]


def drop_thoughts(message: Message) -> Message:
    return message.model_copy(
        update={"parts": [p for p in message.parts if p.type is not PartType.THOUGHT]}
    )


# --- turn splitting ------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(file=jaato_session_files())
def test_a_tool_call_and_its_result_are_always_in_the_same_turn(
    file: dict[str, Any], counter: TokenCounter
) -> None:
    session = load_session(file, counter=counter)
    turns = split_into_turns(session.history)
    turn_of_call = {
        call.id: position
        for position, turn in enumerate(turns)
        for message in turn.messages
        for call in message.function_calls
    }
    for position, turn in enumerate(turns):
        for message in turn.messages:
            for response in message.function_responses:
                assert turn_of_call[response.call_id] == position, response.call_id


@PROPERTY_SETTINGS
@given(file=jaato_session_files())
def test_turns_start_at_a_request_and_cover_the_history_in_order(
    file: dict[str, Any], counter: TokenCounter
) -> None:
    session = load_session(file, counter=counter)
    turns = split_into_turns(session.history)

    assert [m for turn in turns for m in turn.messages] == session.history
    for position, turn in enumerate(turns):
        first = turn.messages[0]
        if position == 0 and all(m.role is Role.MODEL for m in turn.messages):
            continue  # the model spoke before the user's first request
        if first.kind is MessageKind.CHAT:
            assert first.role is Role.USER
            assert not first.is_function_response
        else:
            assert turn.messages == [first], "a summary or notice stands alone"
    indices = [turn.index for turn in turns if turn.index is not None]
    assert len(indices) == len(set(indices))


@PROPERTY_SETTINGS
@given(file=jaato_session_files(), data=st.data())
def test_turns_keep_their_index_and_messages_when_other_turns_are_removed(
    file: dict[str, Any], data: st.DataObject, counter: TokenCounter
) -> None:
    session = load_session(file, counter=counter)
    turns = session.turns()
    keep = data.draw(st.lists(st.booleans(), min_size=len(turns), max_size=len(turns)))
    kept, history = without_turns(session, keep)

    resplit = split_into_turns(history)

    assert [(t.index, t.message_ids) for t in resplit] == [(t.index, t.message_ids) for t in kept]


# --- budgets built from a history ----------------------------------------------------------


def assert_budget_adds_up(session: Session, counter: TokenCounter) -> None:
    budget = session.budget
    conversation = conversation_of(budget)

    counted = sum(count_message(m, counter) for m in session.history)
    assert conversation.total_tokens() == counted
    assert conversation.tokens == counted
    for turn_entry in conversation.children.values():
        assert turn_entry.tokens == turn_entry.total_tokens()
        assert turn_entry.total_tokens() == sum(
            c.total_tokens() for c in turn_entry.children.values()
        )
        assert turn_entry.message_ids == [
            mid for c in turn_entry.children.values() for mid in c.message_ids
        ]

    leaf_ids = [mid for leaf in leaves(conversation) for mid in leaf.message_ids]
    assert leaf_ids == [m.message_id for m in session.history]
    assert all(len(leaf.message_ids) == 1 for leaf in leaves(conversation))

    total = budget.total_tokens()
    assert total == sum(
        budget.entries[s].total_tokens() for s in CONTEXT_SOURCES if s in budget.entries
    )
    thinking = budget.entries[InstructionSource.THINKING].total_tokens()
    assert budget.total_tokens_all() == total + thinking
    recorded_thinking = [t.thinking for t in session.turn_accounting if t.thinking is not None]
    assert thinking == sum(recorded_thinking)
    assert (
        budget.locked_tokens() + budget.preservable_tokens() + budget.gc_eligible_tokens() == total
    )
    walked = budget.model_copy(deep=True)  # a copy has no index: its tree is walked
    assert budget_index(walked) is None
    assert (walked.locked_tokens(), walked.preservable_tokens(), walked.gc_eligible_tokens()) == (
        budget.locked_tokens(),
        budget.preservable_tokens(),
        budget.gc_eligible_tokens(),
    )
    # Each message's figure and what made it, read from the index as from the tree.
    figures = [(leaf.tokens, leaf.metadata.get("counted_by")) for leaf in leaves(conversation)]
    assert list(conversation_of(walked).leaf_figures()) == figures
    assert list(conversation.leaf_figures()) == (figures if session.history else [])


@PROPERTY_SETTINGS
@given(file=jaato_session_files())
def test_a_built_budget_adds_up_with_the_tiktoken_counter(
    file: dict[str, Any], counter: TokenCounter
) -> None:
    session = load_session(file, counter=counter)
    assert session.token_counter == counter.name
    assert_budget_adds_up(session, counter)


@PROPERTY_SETTINGS
@given(file=jaato_session_files())
def test_a_built_budget_adds_up_with_the_approximate_counter(file: dict[str, Any]) -> None:
    counter = ApproxCounter()
    session = load_session(file, counter=counter)
    assert session.token_counter == counter.name
    assert_budget_adds_up(session, counter)


@PROPERTY_SETTINGS
@given(file=jaato_session_files(), data=st.data())
def test_a_budget_extended_from_one_built_for_fewer_messages_is_the_rebuilt_budget(
    file: dict[str, Any], data: st.DataObject, counter: TokenCounter
) -> None:
    """A replay lays out each window from the one before; wherever it cuts the history, the
    result is the budget built from scratch."""
    session = load_session(file, counter=counter)
    covered = data.draw(st.integers(0, len(session.history)))
    prefix = session.model_copy(update={"history": session.history[:covered]})
    built = rebuild_budget(prefix, counter)
    assert rebuild_budget(session, counter, reuse=built) == rebuild_budget(session, counter)


@PROPERTY_SETTINGS
@given(file=jaato_session_files(), data=st.data())
def test_a_budget_rebuilt_from_one_for_more_messages_is_the_rebuilt_budget(
    file: dict[str, Any], data: st.DataObject, counter: TokenCounter
) -> None:
    """After a collection the budget is built from the one before, copying the turns left
    whole; whatever was removed (and the order kept), it is the budget built from scratch."""
    session = load_session(file, counter=counter)
    before = rebuild_budget(session, counter)
    kept = data.draw(st.lists(st.booleans(), min_size=len(session.history)))
    history = [m for m, keep in zip(session.history, kept, strict=False) if keep]
    after = session.model_copy(update={"history": history})
    assert rebuild_budget(after, counter, reuse=before) == rebuild_budget(after, counter)


@PROPERTY_SETTINGS
@given(file=jaato_session_files(), data=st.data())
def test_a_budget_updated_after_removals_and_insertions_is_the_rebuilt_budget(
    file: dict[str, Any], data: st.DataObject, counter: TokenCounter
) -> None:
    """A collection removes messages and turns and inserts summaries and notices anywhere;
    the budget updated from the one before is the one built from scratch, and the turns left
    whole keep their entries (while the original request, which decides a policy, stays)."""
    session = load_session(file, counter=counter)
    before = rebuild_budget(session, counter)
    kept = data.draw(
        st.lists(st.booleans(), min_size=len(session.history), max_size=len(session.history))
    )
    history = [m for m, keep in zip(session.history, kept, strict=True) if keep]
    for number in range(data.draw(st.integers(0, 3))):
        kind = data.draw(st.sampled_from([MessageKind.SUMMARY, MessageKind.NOTICE]))
        text = SUMMARY_TEXT if kind is MessageKind.SUMMARY else "[System: 3 turns removed.]"
        inserted = Message(
            role=Role.USER,
            parts=[Part.from_text(text)],
            message_id=f"gc-inserted-{number}",
            kind=kind,
        )
        history.insert(data.draw(st.integers(0, len(history))), inserted)
    after = session.model_copy(update={"history": history})

    updated = rebuild_budget(after, counter, reuse=before)

    assert updated == rebuild_budget(after, counter)
    counted = after.model_copy(update={"budget": updated})
    turns = counted.turns()
    assert counted.turn_count() == len(turns)
    assert counted.message_turns() == {
        message.message_id: position
        for position, turn in enumerate(turns)
        for message in turn.messages
    }
    if original_request(history) is not original_request(session.history):
        return
    old_turns = conversation_of(before).children
    for key, entry in conversation_of(updated).children.items():
        old = old_turns.get(key)
        if old is not None and old == entry and key.startswith("turn_"):
            assert entry is old, f"{key} is unchanged but was built again"


@PROPERTY_SETTINGS
@given(file=jaato_session_files(), data=st.data())
def test_a_budget_updated_after_messages_were_edited_under_their_ids_is_the_rebuilt_budget(
    file: dict[str, Any], data: st.DataObject, counter: TokenCounter
) -> None:
    """A message given other content under the same id (a tool result cut short, say) is not
    the message it replaced: its turn is read again, not copied from the budget before."""
    session = load_session(file, counter=counter)
    assume(session.history)
    before = rebuild_budget(session, counter)
    history = list(session.history)
    edited = data.draw(
        st.lists(st.integers(0, len(history) - 1), min_size=1, max_size=3, unique=True)
    )
    for position in edited:
        text = data.draw(st.sampled_from(["cut short", "a longer text " * 40, ""]))
        history[position] = history[position].model_copy(
            update={"parts": [Part.from_text(text)] if text else []}
        )
    after = session.model_copy(update={"history": history})

    assert rebuild_budget(after, counter, reuse=before) == rebuild_budget(after, counter)


@PROPERTY_SETTINGS
@given(file=jaato_session_files(), limit=st.integers(0, 3_000))
def test_utilization_and_available_tokens_follow_the_limit(
    file: dict[str, Any], limit: int, counter: TokenCounter
) -> None:
    budget = load_session(file, counter=counter).budget.model_copy(update={"context_limit": limit})
    total = budget.total_tokens()

    assert budget.available_tokens() == max(0, limit - total)
    expected = total / limit * 100 if limit else 0.0
    assert budget.utilization_percent() == expected
    assert budget.snapshot()["utilization_percent"] == round(expected, 2)


@PROPERTY_SETTINGS
@given(file=jaato_session_files())
def test_only_the_original_request_is_locked_and_summaries_are_preservable(
    file: dict[str, Any], counter: TokenCounter
) -> None:
    session = load_session(file, counter=counter)
    policy = {
        leaf.message_ids[0]: leaf.gc_policy for leaf in leaves(conversation_of(session.budget))
    }

    assert set(policy.values()) <= {GCPolicy.LOCKED, GCPolicy.PRESERVABLE, GCPolicy.EPHEMERAL}
    request = original_request(session.history)
    locked = {mid for mid, p in policy.items() if p is GCPolicy.LOCKED}
    assert locked == ({request.message_id} if request is not None else set())
    for message in session.history:
        if message.kind is MessageKind.SUMMARY:
            assert policy[message.message_id] is GCPolicy.PRESERVABLE
        if message.kind is MessageKind.NOTICE:
            assert policy[message.message_id] is not GCPolicy.LOCKED


@PROPERTY_SETTINGS
@given(file=jaato_session_files())
def test_summaries_and_notices_in_a_file_are_recognised(
    file: dict[str, Any], counter: TokenCounter
) -> None:
    session = load_session(file, counter=counter)
    for raw, message in zip(file["history"], session.history, strict=True):
        text = raw["parts"][0].get("text") or ""
        if len(raw["parts"]) == 1 and text.startswith("[Context Summary"):
            assert message.kind is MessageKind.SUMMARY
        elif len(raw["parts"]) == 1 and text.startswith("[System: Context cleaned"):
            assert message.kind is MessageKind.NOTICE


@PROPERTY_SETTINGS
@given(file=jaato_session_files())
def test_rebuilding_the_budget_reproduces_the_loaded_one(
    file: dict[str, Any], counter: TokenCounter
) -> None:
    session = load_session(file, counter=counter)
    assert rebuild_budget(session, counter) == session.budget


@PROPERTY_SETTINGS
@given(file=jaato_session_files(), data=st.data())
def test_rebuilding_after_removing_turns_matches_a_fresh_build(
    file: dict[str, Any], data: st.DataObject, counter: TokenCounter
) -> None:
    session = load_session(file, counter=counter)
    turns = session.turns()
    keep = data.draw(st.lists(st.booleans(), min_size=len(turns), max_size=len(turns)))
    kept, history = without_turns(session, keep)
    shorter = session.model_copy(update={"history": history})

    rebuilt = rebuild_budget(shorter, counter)

    thinking = [t.thinking for t in session.turn_accounting if t.thinking is not None]
    fresh = build_budget(
        history,
        counter,
        session_id=session.session_id,
        context_limit=session.context_limit,
        system_instructions=session.system_instructions,
        thinking_tokens=sum(thinking) if thinking else None,
        created_base=iso_to_epoch(session.created_at) or 0.0,
    )
    assert rebuilt == fresh
    reloaded = load_session(
        dump_session(shorter.model_copy(update={"budget": rebuilt})), counter=counter
    )
    assert reloaded.budget == rebuilt

    before = conversation_of(session.budget).children
    after = conversation_of(rebuilt).children
    assert list(after) == [key for key, flag in zip(before, keep, strict=True) if flag]
    assert [t.index for t in kept] == [after[key].metadata["turn_index"] for key in after]
    request_ids = {
        m.message_id for h in (session.history, history) if (m := original_request(h)) is not None
    }
    for key, turn_entry in after.items():
        assert turn_entry.message_ids == before[key].message_ids
        for mid, leaf in turn_entry.children.items():
            old = before[key].children[mid]
            assert leaf.tokens == old.tokens
            if mid not in request_ids:
                assert leaf.gc_policy is old.gc_policy
    request = original_request(history)
    if request is not None:
        leaf_policy = {
            leaf.message_ids[0]: leaf.gc_policy for leaf in leaves(conversation_of(rebuilt))
        }
        assert leaf_policy[request.message_id] is GCPolicy.LOCKED


# --- loading and writing -------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(file=jaato_session_files())
def test_a_dumped_session_loads_back_equal(file: dict[str, Any], counter: TokenCounter) -> None:
    session = load_session(file, counter=counter)
    assert load_session(dump_session(session), counter=counter) == session


@PROPERTY_SETTINGS
@given(file=jaato_session_files())
def test_message_ids_are_unique_and_the_same_on_every_load(
    file: dict[str, Any], counter: TokenCounter
) -> None:
    first = [m.message_id for m in load_session(file, counter=counter).history]
    second = [m.message_id for m in load_session(file, counter=ApproxCounter()).history]
    assert first == second
    assert len(set(first)) == len(first)


@PROPERTY_SETTINGS
@given(files=session_files_and_continuation())
def test_a_later_turn_does_not_change_earlier_ids_or_turns(
    files: tuple[dict[str, Any], dict[str, Any]], counter: TokenCounter
) -> None:
    before_file, after_file = files
    before = load_session(before_file, counter=counter).history
    after = load_session(after_file, counter=counter).history

    assert len(after) > len(before)
    assert [(m.message_id, m.turn_index) for m in after[: len(before)]] == [
        (m.message_id, m.turn_index) for m in before
    ]


@PROPERTY_SETTINGS
@given(file=jaato_session_files(min_turns=2), data=st.data())
def test_a_collected_session_survives_saving_and_loading(
    file: dict[str, Any], data: st.DataObject, counter: TokenCounter
) -> None:
    """Turns removed and a summary put in their place, as a collector leaves a session."""
    session = load_session(file, counter=counter)
    turns = session.turns()
    keep = data.draw(st.lists(st.booleans(), min_size=len(turns), max_size=len(turns)))
    kept = [turn for turn, flag in zip(turns, keep, strict=True) if flag]
    at = data.draw(st.integers(0, len(kept)))
    summary = Message(
        role=Role.USER,
        parts=[Part.from_text(SUMMARY_TEXT)],
        message_id="gc-summary-1",
        kind=MessageKind.SUMMARY,
    )
    history = [
        *(m for turn in kept[:at] for m in turn.messages),
        summary,
        *(m for turn in kept[at:] for m in turn.messages),
    ]
    collected = session.model_copy(update={"history": history})
    collected.budget = rebuild_budget(collected, counter)

    reloaded = load_session(dump_session(collected), counter=counter)

    assert [m.message_id for m in reloaded.history] == [m.message_id for m in history]
    reloaded_turns = reloaded.turns()
    assert [t.message_ids for t in reloaded_turns] == [t.message_ids for t in collected.turns()]
    indices = [t.index for t in reloaded_turns if t.index is not None]
    assert len(indices) == len(set(indices)), "two turns share an index"
    assert [t.index for t in reloaded_turns if t.kind is MessageKind.CHAT] == [
        t.index for t in kept if t.kind is MessageKind.CHAT
    ]
    conversation = conversation_of(reloaded.budget)
    assert len(conversation.children) == len(reloaded_turns)
    assert [mid for leaf in leaves(conversation) for mid in leaf.message_ids] == [
        m.message_id for m in history
    ]
    assert conversation.total_tokens() == sum(count_message(m, counter) for m in history)


# --- thoughts ------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(file=jaato_session_files())
def test_thoughts_are_never_visible_text_and_cost_nothing(
    file: dict[str, Any], counter: TokenCounter
) -> None:
    session = load_session(file, counter=counter)
    for raw, message in zip(file["history"], session.history, strict=True):
        thoughts = [p["text"] for p in raw["parts"] if p.get("kind") == "thought"]
        assert [p.text for p in message.parts if p.type is PartType.THOUGHT] == thoughts
        assert THOUGHT_MARKER not in message.text
        visible = [p["text"] for p in raw["parts"] if p["type"] == "text" and p["text"]]
        assert message.text == "\n".join(visible)
        assert count_message(message, counter) == count_message(drop_thoughts(message), counter)


# --- bare budget trees ---------------------------------------------------------------------

TREE_SETTINGS = settings(max_examples=200, deadline=None)


def _turn_with_inherited_policy() -> InstructionBudget:
    """A turn added as EPHEMERAL whose message inherits that policy (``add_child``'s default)."""
    budget = InstructionBudget.create_default(session_id="s")
    turn = budget.add_child(InstructionSource.CONVERSATION, "turn_0", 0, GCPolicy.EPHEMERAL)
    assert turn is not None
    turn.add_child("m", 10)
    return budget


@TREE_SETTINGS
@example(budget=_turn_with_inherited_policy())
@given(budget=instruction_budgets())
def test_a_snapshot_reads_back_to_the_same_snapshot(budget: InstructionBudget) -> None:
    snapshot = budget.snapshot()
    assert InstructionBudget.from_snapshot(snapshot).snapshot() == snapshot


@TREE_SETTINGS
@given(budget=instruction_budgets())
def test_a_container_shows_its_childrens_policy_when_they_agree(budget: InstructionBudget) -> None:
    for entry in budget.entries.values():
        for _, node in entry.walk():
            if not node.children:
                assert node.effective_gc_policy() is node.gc_policy
                continue
            child_policies = {c.effective_gc_policy() for c in node.children.values()}
            expected = child_policies.pop() if len(child_policies) == 1 else GCPolicy.PARTIAL
            assert node.effective_gc_policy() is expected
            assert node.to_dict()["gc_policy"] == expected.value
            assert node.indicator() == expected.indicator


@TREE_SETTINGS
@given(
    locked=st.integers(0, 5_000),
    added=st.integers(0, 5_000),
    stored=st.sampled_from(list(GCPolicy)),
    jaato_written=st.booleans(),
)
def test_a_restored_conversation_holding_only_a_locked_request_still_collects_new_turns(
    locked: int, added: int, stored: GCPolicy, jaato_written: bool
) -> None:
    budget = InstructionBudget.create_default(session_id="s")
    conversation = budget.set_entry(InstructionSource.CONVERSATION, 0, stored)
    conversation.add_child("turn_0", locked, GCPolicy.LOCKED)
    snapshot = budget.snapshot()
    if jaato_written:  # JAATO's snapshots carry only the effective policy
        snapshot["entries"]["conversation"].pop("stored_gc_policy", None)

    restored = InstructionBudget.from_snapshot(snapshot)
    eligible_before = restored.gc_eligible_tokens()
    restored.add_child(InstructionSource.CONVERSATION, "turn_1", added, GCPolicy.EPHEMERAL)

    if jaato_written:
        # JAATO wrote only the effective policy (locked): the container must not become locked.
        assert conversation_of(restored).gc_policy is not GCPolicy.LOCKED
        assert restored.gc_eligible_tokens() == eligible_before + added
    else:
        # Our own snapshot says what was stored, so it comes back exactly.
        assert conversation_of(restored).gc_policy is stored
