"""What tests of stored anchors watch and change in the engine: which messages' anchors are
read, and which extractor reads them (shared with the web tests, which reach the engine only
through its front door)."""

from __future__ import annotations

from typing import Any

import pytest

import gcengine
from gcengine.messages import Message
from gcengine.quality import reading, stored_anchors


def anchors_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the messages whose anchors are read from now on (a list that grows)."""
    read: list[str] = []
    extract = reading.message_anchors

    def counted(message: Message, *args: Any) -> Any:
        read.append(message.message_id)
        return extract(message, *args)

    monkeypatch.setattr(reading, "message_anchors", counted)
    return read


def extractor_changed(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """From now on, anchors are read by the extractor ``version`` (as after an upgrade)."""
    monkeypatch.setattr(stored_anchors, "extractor_version", lambda: version)
    monkeypatch.setattr(gcengine, "extractor_version", lambda: version)
