"""The engine's only exceptions.

Callers (the web app, the CLI) translate these into HTTP answers or exit codes, so every
message must make sense to the person who uploaded the file: what is wrong, and where.
"""

from __future__ import annotations

from collections.abc import Sequence

JsonPath = Sequence[str | int]


def format_json_path(path: JsonPath) -> str:
    """Render ``("history", 12, "parts", 0, "type")`` as ``history[12].parts[0].type``.

    The same notation is used in every message so that users can search their file for it.
    """
    rendered = ""
    for step in path:
        if isinstance(step, int):
            rendered += f"[{step}]"
        else:
            rendered += f".{step}" if rendered else step
    return rendered or "$"


class GCEngineError(Exception):
    """Base class: anything the engine rejects on purpose."""


class SessionFormatError(GCEngineError):
    """A session or budget file could not be read; ``path`` points at the offending value."""

    def __init__(self, message: str, path: JsonPath = ()) -> None:
        self.path: tuple[str | int, ...] = tuple(path)
        self.reason = message
        location = format_json_path(self.path)
        super().__init__(f"{location}: {message}" if self.path else message)

    @property
    def json_path(self) -> str:
        return format_json_path(self.path)


class ConfigError(GCEngineError):
    """A ``gc.json`` (or an environment override) is invalid; ``key`` names the field."""

    def __init__(self, message: str, key: str | None = None) -> None:
        self.key = key
        self.reason = message
        super().__init__(f"{key}: {message}" if key else message)


class PluginError(GCEngineError):
    """A strategy could not be found or loaded."""


class SummarizerError(GCEngineError):
    """The summarizer could not produce a summary; nothing was changed."""


class CompactionNotFoundError(GCEngineError):
    """A compaction was asked for by an id the session does not hold."""


class PlannerError(GCEngineError):
    """Planner input that cannot be planned (an invalid item, pin, cap or setting)."""


class ToolRefusal(GCEngineError):
    """An agent tool's call that cannot be carried out as asked.

    ``status`` is the HTTP status the same refusal has in the dashboard's API (400 bad input,
    403 a role without the action, 404 nothing by that id in the caller's reach), and ``code``
    a short name an agent can branch on; both reach the agent with the message.
    """

    def __init__(self, message: str, *, status: int = 400, code: str = "bad_input") -> None:
        self.status = status
        self.code = code
        self.reason = message
        super().__init__(message)


class TurnNotFoundError(GCEngineError):
    """A turn was asked for by a stable index the session does not hold."""


class RetentionGateError(GCEngineError):
    """A project's retention gates are invalid; ``key`` names the anchor class."""

    def __init__(self, message: str, key: str | None = None) -> None:
        self.key = key
        self.reason = message
        super().__init__(f"{key}: {message}" if key else message)


class PriceTableError(GCEngineError):
    """A price table is invalid; ``key`` names the entry and field (``prices[2].model``)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        self.key = key
        self.reason = message
        super().__init__(f"{key}: {message}" if key else message)
