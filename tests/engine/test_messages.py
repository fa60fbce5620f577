"""Turns: JAATO's splitting rule, with indices that survive collections."""

from __future__ import annotations

import pytest

from gcengine import (
    Message,
    MessageKind,
    Part,
    PartType,
    Role,
    split_into_turns,
)
from tests.engine.strategies import model, result, user


def test_tool_results_stay_in_the_turn_that_asked_for_them() -> None:
    history = [
        user("q1", "u1"),
        model("", "m1", "a"),
        result(Role.TOOL, "t1", "a"),
        model("", "m2", "b"),
        result(Role.USER, "t2", "b"),  # Google-style: a user message carrying the result
        model("done", "m3"),
        user("q2", "u2"),
        model("ok", "m4"),
    ]
    turns = split_into_turns(history)
    assert [t.message_ids for t in turns] == [["u1", "m1", "t1", "m2", "t2", "m3"], ["u2", "m4"]]
    assert [t.index for t in turns] == [0, 1]


def test_leading_model_messages_form_turn_zero() -> None:
    turns = split_into_turns([model("hello", "m0"), user("q", "u1"), model("a", "m1")])
    assert [(t.index, t.message_ids) for t in turns] == [(0, ["m0"]), (1, ["u1", "m1"])]


def test_turn_indices_survive_removal_of_earlier_turns() -> None:
    history = [user(f"q{i}", f"u{i}") for i in range(4)]
    for turn in split_into_turns(history):
        for message in turn.messages:
            message.turn_index = turn.index
    survivors = [history[0], history[3]]
    assert [t.index for t in split_into_turns(survivors)] == [0, 3]


def test_a_turn_whose_request_was_collected_keeps_its_own_index() -> None:
    history = [user("q0", "u0"), model("a0", "m0"), user("q1", "u1"), model("a1", "m1")]
    for turn in split_into_turns(history):
        for message in turn.messages:
            message.turn_index = turn.index
    without_request = [history[0], history[1], history[3]]
    assert [(t.index, t.message_ids) for t in split_into_turns(without_request)] == [
        (0, ["u0", "m0"]),
        (1, ["m1"]),
    ]


def test_summaries_and_notices_stand_alone_and_inserted_ones_have_no_index() -> None:
    summary = Message(
        role=Role.USER, parts=[Part.from_text("s")], message_id="s", kind=MessageKind.SUMMARY
    )
    history = [summary, model("continues", "m0"), user("q", "u1")]
    turns = split_into_turns(history)
    assert [(t.index, t.message_ids) for t in turns] == [(None, ["s"]), (1, ["m0"]), (2, ["u1"])]
    assert turns[0].kind is MessageKind.SUMMARY


def test_a_part_needs_the_payload_its_type_names() -> None:
    with pytest.raises(ValueError, match="needs its payload"):
        Part(type=PartType.FUNCTION_CALL, text="not a call")
    assert Part(type=PartType.TEXT, text="fine").text == "fine"


@pytest.mark.parametrize("kind", list(PartType))
def test_a_part_of_any_type_without_its_payload_is_refused(kind: PartType) -> None:
    with pytest.raises(ValueError, match=f"a {kind.value} part needs its payload"):
        Part(type=kind)


def test_message_helpers() -> None:
    message = model("look", "m", "a", "b")
    assert [c.id for c in message.function_calls] == ["a", "b"]
    assert message.text == "look"
    assert not message.is_text_only
    assert not message.is_function_response
    assert result(Role.USER, "r", "a").is_function_response
