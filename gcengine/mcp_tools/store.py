"""What a server must provide for the tools to act on: its sessions, policies, pins and stashes.

The tools are written once, over this protocol. The local server (``gcengine mcp``) keeps
sessions as files; the dashboard keeps them in its database behind its permission table. A
store raises ``ToolRefusal`` for what it will not do (no such session, a role without the
action) and lets engine errors through; the tools turn both into answers the agent reads.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, Field

from gcengine.config import GCConfig
from gcengine.mcp_tools.inputs import PolicyChanges, SettingChange
from gcengine.mcp_tools.stashes import (
    Pruned,
    PruneRequest,
    Retrieved,
    StashFound,
    StashQuery,
    StashRef,
)
from gcengine.session import Session


@dataclass(frozen=True)
class PolicyInUse:
    """The policy a session is read against, with the session's own pins added."""

    config: GCConfig
    label: str


@dataclass(frozen=True)
class PinRequest:
    """Turns and messages to pin (``pinned``) or unpin in one session."""

    turn_indices: tuple[int, ...]
    message_ids: tuple[str, ...]
    pinned: bool


class PinState(BaseModel):
    """A session's pins after a change: every later collection of it keeps these."""

    session_id: int | str
    pinned_turn_indices: list[int]
    pinned_message_ids: list[str]
    changed: list[str] = Field(description="what this call pinned or unpinned; empty if nothing")


class ConfiguredPolicy(BaseModel):
    """A policy after ``context_gc_configure``: the version saved and what it changed."""

    policy: str = Field(description="the policy's name, or its file on a local server")
    policy_id: int | None = None
    version: int | None = Field(default=None, description="the new version's number")
    author: str = ""
    review_status: str | None = Field(
        default=None, description="pending: a reviewer has yet to approve the new version"
    )
    review_url: str | None = None
    changes: list[SettingChange]
    config: dict[str, Any] = Field(description="the whole gc.json as saved")


class ToolStore(Protocol):
    """Sessions, policies, pins and stashes, as one server keeps them."""

    def calling(self) -> AbstractContextManager[None]:
        """Wraps every tool call: where a store sets up and tears down what a call needs
        (database connections) and turns its own refusals into ``ToolRefusal``."""
        ...

    def session(self, session_id: int | str) -> Session:
        """A stored session, read for the caller."""
        ...

    def policy(self, session_id: int | str | None, policy_id: int | None) -> PolicyInUse:
        """The policy named, else the one the session runs under, else JAATO's defaults."""
        ...

    def pin(self, session_id: int | str, request: PinRequest) -> PinState:
        """Pin or unpin turns and messages of one session, all or none."""
        ...

    def configure(
        self,
        session_id: int | str | None,
        policy_id: int | None,
        changes: PolicyChanges,
        message: str,
    ) -> ConfiguredPolicy:
        """Save the policy named (or the session's) with ``changes``, as a new version."""
        ...

    def prune(self, session_id: int | str, request: PruneRequest) -> Pruned:
        """Prune a stored session (``PruneRefused`` before anything is stored, for segments no
        collection may take), keeping the session after it and its stash beside it."""
        ...

    def stash_search(self, ref: StashRef, query: StashQuery) -> StashFound:
        """The stashed segments of one stash that match ``query``."""
        ...

    def stash_retrieve(
        self, ref: StashRef, segment_ids: list[str], into_session: bool
    ) -> Retrieved:
        """Stashed segments put back into a new session derived from the one the prune left
        (``into_session``), or their content, nothing changed."""
        ...
