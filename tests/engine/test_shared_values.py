"""A loaded session holds each repeated value once, and still writes every value as its file had it.

JAATO files keep every prompt twice (in the history and in ``user_inputs``) and give each turn's
accounting the same handful of fields; a long session held them twice, and a set of field
names per turn. Sharing must change nothing a reader or a writer sees.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pydantic
import pytest

import gcengine
from gcengine.synthetic import SessionShape, generate_session_file
from tests.engine.conftest import example

V21 = example("jaato_session_v2.1.json")


def user_texts(session: gcengine.Session) -> list[str]:
    return [
        part.text
        for message in session.history
        if message.role is gcengine.Role.USER
        for part in message.parts
        if part.text
    ]


def reopened(session: gcengine.Session) -> gcengine.Session:
    """The session as the dashboard reads it back: its record, history and figures."""
    return gcengine.session_from_record(
        json.loads(json.dumps(gcengine.session_record(session))),
        session.history,
        gcengine.budget_figures(session),
    )


def test_each_prompt_the_history_holds_is_held_once() -> None:
    document = generate_session_file(SessionShape(turns=12, seed=3))
    document["user_inputs"].append("typed but never sent")
    session = gcengine.load_session(json.dumps(document).encode())

    for read in (session, reopened(session)):
        said = {id(text) for text in user_texts(read)}
        assert read.user_inputs == document["user_inputs"]
        assert all(id(text) in said for text in read.user_inputs[:-1])
        assert id(read.user_inputs[-1]) not in said


def test_a_record_holds_each_prompt_the_history_holds_as_its_place_there() -> None:
    document = generate_session_file(SessionShape(turns=12, seed=4))
    document["user_inputs"].append("typed but never sent")
    session = gcengine.load_session(json.dumps(document).encode())

    recorded = gcengine.session_record(session)["user_inputs"]

    assert recorded[-1] == "typed but never sent"
    for (position, part), text in zip(recorded[:-1], session.user_inputs, strict=False):
        assert session.history[position].parts[part].text == text
    assert len(json.dumps(recorded)) < len(json.dumps(session.user_inputs)) / 10


def test_a_record_holding_the_prompts_as_text_reads_back_alike() -> None:
    """As stores wrote records before prompts were recorded by their place."""
    document = generate_session_file(SessionShape(turns=12, seed=5))
    session = gcengine.load_session(json.dumps(document).encode())
    record = {**gcengine.session_record(session), "user_inputs": document["user_inputs"]}

    again = gcengine.session_from_record(
        json.loads(json.dumps(record)), session.history, gcengine.budget_figures(session)
    )

    assert again == session
    said = {id(text) for text in user_texts(again)}
    assert all(id(text) in said for text in again.user_inputs)


def test_turn_accounting_is_read_only_and_written_back_with_each_turns_own_fields() -> None:
    document: dict[str, Any] = copy.deepcopy(V21)
    first = {"prompt": 10, "output": 2, "total": 12}
    document["turn_accounting"] = [
        first,
        {**first, "start_time": "2026-03-01T10:15:00", "thinking": 4},
        dict(first),
        {"prompt": 1, "vendor_field": "kept"},
    ]
    session = gcengine.load_session(json.dumps(document).encode())

    for read in (session, reopened(session)):
        written = json.loads(gcengine.dump_session(read))["turn_accounting"]
        assert written == document["turn_accounting"]
        for turn, recorded in zip(read.turn_accounting, document["turn_accounting"], strict=True):
            assert turn.model_dump() | recorded == turn.model_dump()
        with pytest.raises(pydantic.ValidationError, match="frozen"):
            read.turn_accounting[0].prompt = 99
    assert session.turn_accounting[0].model_copy(update={"prompt": 5}).model_dump(
        exclude_unset=True
    ) == {**first, "prompt": 5}
    assert session.turn_accounting[2].model_fields_set == set(first)
