"""What the tools take, written once for every server: the parameters a model fills in, with
the descriptions it reads, and the checks every tool makes of them.

A parameter is a type alias carrying its description and bounds, so a tool's signature is its
input schema and two tools asking for a session describe it in the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field

from gcengine.config import dump_gc_config, load_gc_config
from gcengine.errors import ToolRefusal
from gcengine.formats import load_session
from gcengine.session import Session
from gcengine.window import MIN_CONTEXT_LIMIT, with_context_limit

SessionId = Annotated[
    int | str | None,
    Field(
        description=(
            "A session this server stores: its id in the dashboard (a number), or, on a local "
            "server, the path of a session file under the server's folder. Give this or "
            "`messages`, not both."
        )
    ),
]
Messages = Annotated[
    list[dict[str, Any]] | dict[str, Any] | None,
    Field(
        description=(
            "Your current conversation, for an answer about it with nothing stored: a list of "
            "OpenAI Chat Completions or Anthropic Messages messages or a JAATO history "
            '(messages of `parts`), or an object such as {"model": ..., "messages": [...]} or '
            'a JAATO session file ({"version", "history"}). Give this or `session_id`, not both.'
        )
    ),
]
ContextLimit = Annotated[
    int | None,
    Field(
        ge=MIN_CONTEXT_LIMIT,
        description=(
            "Your model's context window in tokens, when the session does not say it (inline "
            "messages rarely do; otherwise the model's known window or a default is used)."
        ),
    ),
]
PolicyId = Annotated[
    int | None,
    Field(
        description=(
            "A stored policy's id, to read or change it instead of the one the session runs "
            "under (the project's default policy). Dashboard only."
        )
    ),
]
TurnIndices = Annotated[
    list[Annotated[int, Field(ge=0)]] | None,
    Field(
        description=(
            "Turns by stable index, counted from 0 (the turn shown as turn 1 is index 0); "
            "an index never changes when earlier turns are collected."
        )
    ),
]
MessageIds = Annotated[
    list[Annotated[str, Field(min_length=1)]] | None,
    Field(description="Messages by their id in the session (a pinned message keeps its turn)."),
]
Percent = Annotated[float | None, Field(gt=0, le=100)]


@dataclass(frozen=True)
class SessionRef:
    """Which session a call is about: a stored one, or the caller's messages."""

    session_id: int | str | None
    messages: list[dict[str, Any]] | dict[str, Any] | None = None
    context_limit: int | None = None

    def __post_init__(self) -> None:
        if self.session_id is None and self.messages is None:
            raise ToolRefusal(
                "give either session_id (a stored session) or messages (your conversation)"
            )
        if self.session_id is not None and self.messages is not None:
            raise ToolRefusal("give session_id or messages, not both")

    @property
    def inline(self) -> bool:
        return self.messages is not None

    def stored(self, what: str) -> int | str:
        """The stored session's id, for a tool that changes a stored object (``what``)."""
        if self.session_id is None:
            raise ToolRefusal(
                f"{what} changes a stored session or policy, and inline messages are not "
                "stored: upload the session and give its session_id"
            )
        return self.session_id


def inline_session(messages: list[dict[str, Any]] | dict[str, Any]) -> Session:
    """The caller's own conversation, read as an upload of it would be."""
    return load_session(messages)


def sized(session: Session, context_limit: int | None) -> Session:
    """``session`` against ``context_limit`` tokens, when the caller names its window."""
    return session if context_limit is None else with_context_limit(session, context_limit)


class PolicyChanges(BaseModel):
    """The settings ``context_gc_configure`` may change; None leaves a setting as it is."""

    threshold_percent: float | None = None
    target_percent: float | None = None
    pressure_percent: float | None = None
    preserve_recent_turns: int | None = None

    def given(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


def changed_config(current: Mapping[str, Any], changes: PolicyChanges) -> dict[str, Any]:
    """``current`` gc.json with ``changes`` applied, validated as any gc.json is (a target
    above the threshold, say, raises ``ConfigError`` naming the key)."""
    given = changes.given()
    if not given:
        raise ToolRefusal(
            "name at least one setting to change: threshold_percent, target_percent, "
            "pressure_percent or preserve_recent_turns"
        )
    data = dict(current)
    if "pressure_percent" in given:
        data.pop("continuous_mode", None)  # the pressure given decides the mode
    data.update(given)
    return dump_gc_config(load_gc_config(data, env={}))


class SettingChange(BaseModel):
    """One gc.json key a change moved."""

    key: str
    before: Any
    after: Any

    def described(self) -> str:
        """``threshold_percent 80 -> 85``, numbers as a person writes them."""
        return f"{self.key} {_shown(self.before)} -> {_shown(self.after)}"


def _shown(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def setting_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[SettingChange]:
    return [
        SettingChange(key=key, before=before.get(key), after=after.get(key))
        for key in dict.fromkeys([*before, *after])
        if before.get(key) != after.get(key)
    ]
