"""The one base class of input errors the services raise, for every door to answer alike.

A service refuses input a user can fix (a name already taken, a file over a limit, a stale
save) with a subclass of ``InputError``: its ``reason`` is a sentence for the user, ``key``
names the field at fault, ``status`` is the HTTP answer. The API turns every one into JSON in
a single handler; pages put the reason next to the field ``key`` names. The engine's own
refusals (``gcengine.GCEngineError``) are answered the same way, beside these.
"""

from __future__ import annotations

from typing import Any


class InputError(Exception):
    """Input the user can fix; nothing was stored."""

    status = 400

    def __init__(self, reason: str, key: str | None = None) -> None:
        self.reason = reason
        self.key = key
        super().__init__(f"{key}: {reason}" if key else reason)

    def details(self) -> dict[str, Any]:
        """What the API adds beside ``detail``, ``reason`` and ``key``."""
        return {}

    def payload(self) -> dict[str, Any]:
        return {"detail": str(self), "reason": self.reason, "key": self.key, **self.details()}


def without_nul(text: str, key: str, refusal: type[InputError] = InputError) -> str:
    """``text`` for a field people write (a name, a message, a comment), refused naming the
    field when it holds a NUL character.

    Text read from sessions keeps its NUL (tool output holds it; ``dashboard.storage.text``
    stores it losslessly); a person's words never need one, and Django's forms refuse it too
    ("Null characters are not allowed"), so the API and the agent tools refuse it alike.
    ``refusal`` is the service's own subclass, which its pages catch.
    """
    if "\x00" in text:
        raise refusal("holds a NUL character (\\u0000); remove it", key)
    return text
