"""A collection keeping a turn's closing answer while taking tool work before it marks that
answer (``CLOSING_ANSWER_KEY``), and only in the turns it took from: whether it finds them
by the budget builder's flags or by reading the turns' messages."""

from __future__ import annotations

import dataclasses

from gcengine import Session
from gcengine.gc.plan import Decision, Planned, apply
from gcengine.gc.types import GCTriggerReason, RemovalReason
from gcengine.messages import Message
from gcengine.session import CLOSING_ANSWER_KEY, closing_answer_ids
from gcengine.tokens import TokenCounter
from tests.engine.test_plan_planned import decided, session  # noqa: F401  (the fixture)


def marked_ids(history: list[Message]) -> set[str]:
    return {m.message_id for m in history if m.metadata.get(CLOSING_ANSWER_KEY) is True}


def test_only_the_touched_turns_closing_answers_are_marked(
    session: Session,  # noqa: F811
    counter: TokenCounter,
) -> None:
    collection, full = decided(session, counter)
    exchanges = [u for u, _ in full.taken if isinstance(u, Planned) and not u.whole_turn]
    # Every other turn with an exchange taken: turns left alone lie between those touched.
    turns = sorted({u.turn_position for u in exchanges})[::2]
    assert len(turns) >= 3
    decision = Decision()
    decision.take([u for u in exchanges if u.turn_position in turns], RemovalReason.EPHEMERAL, None)
    before = marked_ids(list(session.history))
    expected: set[str] = set()
    for turn in turns:
        start, end = collection.layout.span(turn)
        kept = {
            m.message_id
            for p, m in enumerate(session.history[start:end], start)
            if p not in decision.removed_positions
        }
        expected |= closing_answer_ids(session.history[start:end]) & kept
    expected -= before
    assert expected, "the turns taken from keep closing answers"

    def newly_marked(flags: bytearray | None) -> set[str]:
        figures = dataclasses.replace(collection.figures, closing=flags)
        run = dataclasses.replace(collection, figures=figures)
        history, _ = apply(
            run,
            decision,
            plugin_name="gc_budget",
            reason=GCTriggerReason.THRESHOLD,
            counter=counter,
        )
        return marked_ids(history) - before

    assert collection.figures.closing is not None
    assert newly_marked(collection.figures.closing) == expected
    assert newly_marked(None) == expected
