"""The ``gc.json`` keys every strategy shares, declared once.

``CommonKeys`` are what runs when and what a collection keeps and says; ``TrailingKeys`` are
the two a policy lists last, handed through rather than read by a collection's rules.
``EVERY_STRATEGY_READS`` names the keys every strategy honours; a strategy's spec lists them
with the others it reads. A strategy's own keys are declared in its module.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from gcengine.strategies.keys import KeySpec

DEFAULT_RECENT_EXCHANGES = 10
"""The recent tool exchanges a policy keeps when it does not say: coding agents work in a few
turns of hundreds of calls, where keeping recent turns whole would keep everything."""

NOOP_TEMPLATE = "noop_notification_template"
"""The key of the no-op notice's wording, read by the strategies that write one."""

RULES = "rules"
"""The key saying whose rules a collection follows, read by the strategies JAATO also has."""


class CommonKeys(BaseModel):
    """When a collection runs, what it keeps, and what it says, for every strategy."""

    rules: Annotated[
        Literal["engine", "jaato"],
        KeySpec(
            "Rules",
            "Whose rules a collection follows: engine (stop at the target, keep the original "
            "request, summary and notice where the removed turns were, an offline summarizer "
            "by default) or jaato (JAATO's own plugins': every turn not recent or pinned goes, "
            "whatever the target; summary and notice at the top; no summarizer is a failure; "
            "budget without a budget truncates). Tool calls stay with their results, and "
            "locked content stays, under both.",
            "choice",
            choices=("engine", "jaato"),
            written_when_default=False,
        ),
    ] = "engine"
    threshold_percent: Annotated[
        float,
        KeySpec(
            "Threshold %",
            "Usage of the context window, in percent, at which a collection starts.",
            "percent",
            minimum=0,
            maximum=100,
            env="JAATO_GC_THRESHOLD",
        ),
    ] = 80.0
    target_percent: Annotated[
        float,
        KeySpec(
            "Target %",
            "Usage, in percent, a collection brings the context down to; below the threshold. "
            "In continuous mode, any usage above it starts a collection.",
            "percent",
            minimum=0,
            maximum=100,
            env="JAATO_GC_TARGET",
        ),
    ] = 60.0
    pressure_percent: Annotated[
        float | None,
        KeySpec(
            "Pressure %",
            "Usage, in percent, at or above which preservable content may go too (budget "
            "only); 0 means continuous mode: collect whenever usage passes the target, never "
            "taking preservable content.",
            "percent",
            minimum=0,
            maximum=100,
            env="JAATO_GC_PRESSURE",
        ),
    ] = Field(
        default=90.0,
        description="None means continuous mode: collect above target, never touch preservable",
    )
    preserve_recent_turns: Annotated[
        int,
        KeySpec(
            "Preserve recent turns",
            "How many of the latest conversation turns a collection never touches.",
            "whole_number",
            minimum=0,
            plugin_option=True,
        ),
    ] = 5
    preserve_recent_exchanges: Annotated[
        int | None,
        KeySpec(
            "Preserve recent exchanges",
            "Within the preserved recent turns, how many of the latest tool exchanges a "
            "collection never touches: the older exchanges of a long turn (and the model's "
            "text between them) may go, the current request always stays; empty keeps the "
            "recent turns whole, as JAATO does.",
            "whole_number",
            minimum=0,
            written_when_default=False,
        ),
    ] = DEFAULT_RECENT_EXCHANGES
    max_turns: Annotated[
        int | None,
        KeySpec(
            "Max turns",
            "A collection also starts once the session has this many turns; empty means no limit.",
            "whole_number",
            minimum=1,
        ),
    ] = None
    auto_trigger: Annotated[
        bool,
        KeySpec(
            "Auto trigger",
            "Whether usage and the turn limit start collections by themselves; "
            "off, GC runs only when asked.",
            "flag",
        ),
    ] = True
    check_before_send: Annotated[
        bool,
        KeySpec(
            "Check before send",
            "Whether usage is also checked before each message is sent, not only after each turn.",
            "flag",
        ),
    ] = True
    pinned_turn_indices: Annotated[
        list[int],
        KeySpec(
            "Pinned turns",
            "Turns a collection never touches, by position in the session as uploaded, counted "
            "from 0 as JAATO counts them: 0 is the turn JAATO labels turn_1.",
            "turn_list",
        ),
    ] = Field(
        default_factory=list,
        description="stable turn indices of the session as uploaded, from 0 (turn 1 is 0)",
    )
    pinned_message_ids: Annotated[
        list[str],
        KeySpec(
            "Pinned messages",
            "Messages whose turns a collection never touches, by message id.",
            "id_list",
            written_when_default=False,
        ),
    ] = Field(default_factory=list)
    notify_on_gc: Annotated[
        bool,
        KeySpec(
            "Notify on GC",
            "Whether a collection leaves a notice in the conversation saying what it removed.",
            "flag",
            plugin_option=True,
        ),
    ] = False
    notification_template: Annotated[
        str | None,
        KeySpec(
            "Notification template",
            "The notice's text, with the placeholders the strategy provides in braces; "
            "empty means the strategy's own wording.",
            "text",
            written_when_default=False,
        ),
    ] = None
    noop_notification_template: Annotated[
        str | None,
        KeySpec(
            "No-op notification template",
            "The notice's text when a collection was needed but every turn left is protected, "
            "with {total} and {preserve}; empty means JAATO's wording.",
            "text",
            written_when_default=False,
        ),
    ] = None

    @field_validator("pressure_percent")
    @classmethod
    def _zero_pressure_is_continuous(cls, value: float | None) -> float | None:
        return value or None


class TrailingKeys(BaseModel):
    """The keys a policy lists last: who it is for, and options handed to the strategy."""

    agent_name: Annotated[
        str | None,
        KeySpec(
            "Agent name",
            "The agent this policy is for, as JAATO names it; kept for JAATO, it changes "
            "nothing a strategy here collects.",
            "text",
            written_when_default=False,
            plugin_option=True,
        ),
    ] = None
    plugin_config: Annotated[
        dict[str, Any],
        KeySpec(
            "Plugin options",
            "Further options handed to the strategy as they are, over the ones above "
            "(such as the summarizer).",
            "object",
        ),
    ] = Field(default_factory=dict)


EVERY_STRATEGY_READS: tuple[str, ...] = (
    "type",
    "threshold_percent",
    "target_percent",
    "pressure_percent",
    "preserve_recent_turns",
    "preserve_recent_exchanges",
    "max_turns",
    "auto_trigger",
    "check_before_send",
    "pinned_turn_indices",
    "pinned_message_ids",
    "notify_on_gc",
    "notification_template",
    "plugin_config",
)
"""The keys every strategy honours (the strategy named by ``type`` is the one that runs)."""
