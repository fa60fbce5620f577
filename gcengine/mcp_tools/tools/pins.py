"""``context_gc_pin`` and ``context_gc_unpin``: what a session's collections must keep."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.types import CallToolResult, ToolAnnotations

from gcengine.errors import ToolRefusal
from gcengine.mcp_tools.inputs import MessageIds, Messages, SessionId, SessionRef, TurnIndices
from gcengine.mcp_tools.results import answer
from gcengine.mcp_tools.store import PinRequest, PinState, ToolStore

PIN = """\
Protect turns or messages of a stored session from garbage collection: every later run, \
preview and replay of this session keeps them, whatever the policy (other sessions are not \
affected). Pinning what is already pinned changes nothing.

Pin what the rest of the task depends on: the user's requirements, a decision and its reason, \
a file's contents you will edit again. Give `turn_indices` (from 0: turn 1 is index 0), \
`message_ids`, or both; all are pinned or, if one does not exist, none. Needs a stored \
`session_id`: inline messages are not stored, so there is nothing to pin in them. Returns the \
session's pins after the change."""

UNPIN = """\
Let garbage collection take turns or messages of a stored session again that were pinned in \
it (pins a policy holds for every session stay). Unpinning what is not pinned changes nothing.

Give `turn_indices` (from 0: turn 1 is index 0), `message_ids`, or both, and a stored \
`session_id`. Returns the session's pins after the change."""


def _pin_work(
    store: ToolStore,
    ref: SessionRef,
    turn_indices: list[int] | None,
    message_ids: list[str] | None,
    pinned: bool,
) -> tuple[PinState, str]:
    verb = "pinning" if pinned else "unpinning"
    stored = ref.stored(verb.capitalize())
    if not turn_indices and not message_ids:
        raise ToolRefusal(f"name at least one turn index or message id for {verb}")
    request = PinRequest(tuple(turn_indices or ()), tuple(message_ids or ()), pinned)
    state = store.pin(stored, request)
    done = "; ".join(state.changed) or "nothing changed"
    summary = (
        f"Session {state.session_id}: {done}. It now pins turn indices "
        f"{state.pinned_turn_indices or 'none'} and messages "
        f"{state.pinned_message_ids or 'none'}."
    )
    return state, summary


def register(server: MCPServer, store: ToolStore) -> None:
    def context_gc_pin(
        session_id: SessionId = None,
        turn_indices: TurnIndices = None,
        message_ids: MessageIds = None,
        messages: Messages = None,
    ) -> Annotated[CallToolResult, PinState]:
        return answer(
            store,
            lambda: _pin_work(
                store, SessionRef(session_id, messages), turn_indices, message_ids, True
            ),
        )

    def context_gc_unpin(
        session_id: SessionId = None,
        turn_indices: TurnIndices = None,
        message_ids: MessageIds = None,
        messages: Messages = None,
    ) -> Annotated[CallToolResult, PinState]:
        return answer(
            store,
            lambda: _pin_work(
                store, SessionRef(session_id, messages), turn_indices, message_ids, False
            ),
        )

    changes_pins = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    server.add_tool(
        context_gc_pin, title="Pin turns or messages", description=PIN, annotations=changes_pins
    )
    server.add_tool(
        context_gc_unpin,
        title="Unpin turns or messages",
        description=UNPIN,
        annotations=changes_pins,
    )
