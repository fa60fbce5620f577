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

from gcengine.config import (
    GC_JSON_FIELDS,
    GC_JSON_SUBFIELDS,
    dump_gc_config,
    load_gc_config,
)
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
SegmentIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=400)]] | None,
    Field(
        max_length=10_000,
        description=(
            "Segments by id, as context_gc_analyze lists them: `turn_12` (what is left of a "
            "turn: its request and the agent's words; taking it takes the whole turn), "
            "`turn_12/<message id>` (one tool call with its results, or a notice), "
            "`gc_summary_1` (a summary)."
        ),
    ),
]
RunId = Annotated[
    int | str | None,
    Field(
        description=(
            "The stash to use: the `run_id` context_gc_prune returned (a run's number in the "
            "dashboard; on a local server, the stash file it wrote). Or give `session_id`."
        )
    ),
]
StashSessionId = Annotated[
    int | str | None,
    Field(
        description=(
            "A session a prune made (its `new_session_id`) or one restored from it: its stash "
            "is used. In the dashboard, any session with a reachability run: its latest stash. "
            "Give this, `run_id`, or `stash` with `messages`."
        )
    ),
]
InlineStash = Annotated[
    dict[str, Any] | None,
    Field(
        description=(
            "The `stash` a prune of inline messages returned, given back as it came: nothing "
            "of an inline prune is stored."
        )
    ),
]


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


class RootsChange(BaseModel):
    """The reachability roots to change; None leaves a root as it is."""

    current_task: bool | None = Field(
        default=None, description="Whether the original request and latest user message are roots."
    )
    recent_turns: int | None = Field(
        default=None, ge=0, description="How many of the latest turns are roots, whole."
    )
    pinned: bool | None = Field(default=None, description="Whether pinned turns are roots.")
    locked: bool | None = Field(default=None, description="Whether locked content is a root.")
    active_file_turns: int | None = Field(
        default=None,
        ge=0,
        description="The latest work on each file these many latest turns read, edit or name "
        "is a root; 0 means none.",
    )


class PolicyChanges(BaseModel):
    """The settings ``context_gc_configure`` may change; None leaves a setting as it is."""

    threshold_percent: float | None = None
    target_percent: float | None = None
    pressure_percent: float | None = None
    preserve_recent_turns: int | None = None
    roots: RootsChange | None = None
    incremental: bool | None = None
    batch_size: int | None = None

    def given(self) -> dict[str, Any]:
        given = self.model_dump(exclude_none=True)
        if not given.get("roots", True):
            del given["roots"]  # roots named, none of them changed
        return given


CHANGEABLE = ", ".join(PolicyChanges.model_fields)


def changed_config(current: Mapping[str, Any], changes: PolicyChanges) -> dict[str, Any]:
    """``current`` gc.json with ``changes`` applied, validated as any gc.json is (a target
    above the threshold, say, raises ``ConfigError`` naming the key). Roots not named keep
    their values."""
    given = changes.given()
    if not given:
        raise ToolRefusal(f"name at least one setting to change: {CHANGEABLE}")
    data = dict(current)
    if "pressure_percent" in given:
        data.pop("continuous_mode", None)  # the pressure given decides the mode
    if "roots" in given:
        given["roots"] = {**dict(data.get("roots") or {}), **given["roots"]}
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
    """Each key that differs, a key left out holding its default; an object key (``roots``,
    ``weights``) as each of its options that differs (``roots.recent_turns``)."""
    changes: list[SettingChange] = []
    defaults = {
        field.key: field.default.model_dump()
        if isinstance(field.default, BaseModel)
        else field.default
        for field in GC_JSON_FIELDS
    }
    before = {**defaults, **before}
    after = {**defaults, **after}
    for key in dict.fromkeys([*before, *after]):
        if key in GC_JSON_SUBFIELDS:
            old, new = {**defaults[key], **before[key]}, {**defaults[key], **after[key]}
            changes.extend(
                SettingChange(key=f"{key}.{name}", before=old.get(name), after=new.get(name))
                for name in dict.fromkeys([*old, *new])
                if old.get(name) != new.get(name)
            )
        elif before.get(key) != after.get(key):
            changes.append(SettingChange(key=key, before=before.get(key), after=after.get(key)))
    return changes
