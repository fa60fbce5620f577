"""What a JAATO plugin takes over from its last collection: a history it is handed again is
taken as the one it read only while every message is the very object, with the same id, role
and part objects (``Seen.holds``); any change JAATO makes between collections reads it again."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from gcengine.running.jaato_seen import Seen


def history() -> list[Any]:
    return [
        SimpleNamespace(message_id=f"m{n}", role=role, parts=[SimpleNamespace(text=f"t{n}")])
        for n, role in enumerate(["user", "model", "tool", "model"])
    ]


def test_the_same_history_holds() -> None:
    messages = history()
    seen = Seen.of(messages)
    assert seen is not None
    assert seen.holds(messages)
    assert seen.holds(list(messages))  # another list of the same messages


def replace_message(messages: list[Any]) -> None:
    messages[1] = SimpleNamespace(**vars(messages[1]))


def new_id(messages: list[Any]) -> None:
    messages[2].message_id = "other"


def new_role(messages: list[Any]) -> None:
    messages[0].role = "model"


def replace_part(messages: list[Any]) -> None:
    messages[3].parts[0] = SimpleNamespace(text="t3")


def add_part(messages: list[Any]) -> None:
    messages[0].parts.append(SimpleNamespace(text="more"))


def move_part(messages: list[Any]) -> None:
    # The same part objects in all, one moved to the message before: not the same messages.
    messages[0].parts.append(messages[1].parts.pop())


def drop_parts(messages: list[Any]) -> None:
    messages[1].parts = None


def append_message(messages: list[Any]) -> None:
    messages.append(SimpleNamespace(message_id="m4", role="user", parts=[]))


def drop_message(messages: list[Any]) -> None:
    messages.pop()


@pytest.mark.parametrize(
    "change",
    [
        replace_message,
        new_id,
        new_role,
        replace_part,
        add_part,
        move_part,
        drop_parts,
        append_message,
        drop_message,
    ],
)
def test_a_changed_history_does_not_hold(change: Callable[[list[Any]], None]) -> None:
    messages = history()
    seen = Seen.of(messages)
    assert seen is not None
    change(messages)
    assert not seen.holds(messages)
