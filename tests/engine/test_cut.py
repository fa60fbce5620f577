"""A history a collection cut is laid out from the index before by position
(``gcengine.session.cut``): the same layout, turns copied and figures as comparing the two
histories finds; where the index cannot tell (two turns of one index brought together,
another index, a history not laid out by its recorded turns) nothing is read off it."""

from __future__ import annotations

from gcengine import Message, MessageKind, Session, TokenCounter
from gcengine.conversation import ConversationIndex, budget_index
from gcengine.gc import GCTriggerReason, context_usage
from gcengine.gc.strategy import Strategy
from gcengine.messages import relaid_out, turn_layout
from gcengine.running import load_gc_plugin
from gcengine.session.cut import Cut, cut_plan
from gcengine.session.index import _copied_runs, index_conversation
from tests.engine.strategies import model, policy, session_at, user

INDEX_FIELDS = ("tokens", "counted_by", "policies", "created_at", "closing", "exchanges")


def _collect(session: Session, counter: TokenCounter) -> tuple[list[Message], Cut | None]:
    """A budget collection of ``session`` to 50 %: the history after, and the cut it said
    it made."""
    config = policy(type="budget", target_percent=50, preserve_recent_turns=3)
    usage = context_usage(session.budget, turns=len(turn_layout(session.history)))
    strategy = load_gc_plugin("gc_budget", {})
    assert isinstance(strategy, Strategy)
    after, _, cut = strategy.collect_cut(
        session.history,
        usage,
        config,
        GCTriggerReason.THRESHOLD,
        session.budget,
        counter=counter,
    )
    return after, cut


def _tools_session(counter: TokenCounter) -> Session:
    return session_at(40, 90, counter, tool_every=1, seed=7)


def test_a_collection_that_only_takes_messages_says_how_it_cut_the_history(
    counter: TokenCounter,
) -> None:
    session = _tools_session(counter)
    before = session.history
    after, cut = _collect(session, counter)
    assert cut is not None
    assert cut.index is budget_index(session.budget)
    kept = [before[cut.start + offset] for offset, flag in enumerate(cut.keep) if flag]
    size = len(kept)
    assert after[: cut.start] == before[: cut.start]
    assert after[cut.start + size :] == before[cut.end :]
    assert len(after) == cut.start + size + len(before) - cut.end
    # Each message kept is the very one, or a copy of it marked as a closing answer.
    copies = 0
    for message, was in zip(after[cut.start : cut.start + size], kept, strict=True):
        if message is not was:
            copies += 1
            assert message.message_id == was.message_id
            assert message.parts is was.parts
    assert copies  # the collection kept closing answers while taking the tools before them


def test_the_plan_read_off_the_index_is_what_comparing_the_histories_finds(
    counter: TokenCounter,
) -> None:
    session = _tools_session(counter)
    index = budget_index(session.budget)
    assert index is not None
    after, cut = _collect(session, counter)
    assert cut is not None
    plan = cut_plan(index, len(after), cut)
    assert plan is not None
    assert plan.layout == turn_layout(after)
    assert plan.layout.by_turn_index
    compared_runs, _ = _copied_runs(index, after, relaid_out(after, index.messages, index.layout))
    assert plan.copied == compared_runs
    assert [index.messages[p].message_id for p in plan.origins(0, len(after))] == [
        m.message_id for m in after
    ]
    # The index made with the cut is the one made by comparing the two histories.
    with_cut, _ = index_conversation(after, counter, reuse=index, cut=cut)
    compared, _ = index_conversation(after, counter, reuse=index)
    assert with_cut.layout == compared.layout
    for field in INDEX_FIELDS:
        assert getattr(with_cut, field) == getattr(compared, field), field


def _turns(*indices: int) -> list[Message]:
    """A request and an answer for each of ``indices``, carrying it as their turn."""
    return [
        message.model_copy(update={"turn_index": index})
        for position, index in enumerate(indices)
        for message in (user(f"ask {position}", f"u{position}"), model("ok", f"m{position}"))
    ]


def _index(history: list[Message], counter: TokenCounter) -> ConversationIndex:
    return index_conversation(history, counter)[0]


def test_two_turns_of_one_index_brought_together_are_laid_out_from_the_messages(
    counter: TokenCounter,
) -> None:
    history = _turns(0, 1, 0)  # turns 0 and 2 share an index: taking turn 1 joins them
    index = _index(history, counter)
    assert len(index.layout) == 3
    assert cut_plan(index, 4, Cut(index, 2, 4, b"\x00\x00", frozenset({1}))) is None
    assert len(turn_layout([*history[:2], *history[4:]])) == 1
    # Taking a part of the middle turn keeps three turns: read off the index.
    plan = cut_plan(index, 5, Cut(index, 2, 4, b"\x01\x00", frozenset({1})))
    assert plan is not None
    assert plan.layout == turn_layout([*history[:3], *history[4:]])
    assert plan.copied == [(0, 1, 0), (2, 3, 2)]
    assert plan.origins(0, 5) == [0, 1, 2, 4, 5]
    assert plan.origins(1, 4) == [1, 2, 4]
    assert plan.origins(3, 5) == [4, 5]


def test_a_cut_is_read_only_off_the_index_the_collection_read(counter: TokenCounter) -> None:
    history = _turns(0, 1, 2)
    index, other = _index(history, counter), _index(history, counter)
    cut = Cut(other, 2, 4, b"\x00\x00", frozenset({1}))
    assert cut_plan(other, 4, cut) is not None
    assert cut_plan(index, 4, cut) is None


def test_a_history_not_laid_out_by_its_recorded_turns_is_not_read_off_the_index(
    counter: TokenCounter,
) -> None:
    summary = user("[Context Summary] earlier", "s").model_copy(
        update={"kind": MessageKind.SUMMARY}
    )
    history = [summary, *_turns(0, 1, 2)]
    index = _index(history, counter)
    assert not index.layout.by_turn_index
    assert cut_plan(index, 5, Cut(index, 3, 5, b"\x00\x00", frozenset({2}))) is None
    assert _index(_turns(0, 1, 2), counter).layout.by_turn_index
