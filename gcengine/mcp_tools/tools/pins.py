"""``context_gc_pin`` and ``context_gc_unpin``: what a session's collections must keep."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.types import CallToolResult, ToolAnnotations

from gcengine.analysis.dry_run import segment_pins
from gcengine.errors import ToolRefusal
from gcengine.mcp_tools.inputs import (
    MessageIds,
    Messages,
    SegmentIds,
    SessionId,
    SessionRef,
    TurnIndices,
)
from gcengine.mcp_tools.results import answer
from gcengine.mcp_tools.store import PinRequest, PinState, ToolStore

PIN = """\
Protect turns or messages of a stored session from garbage collection: every later run, \
preview and replay of this session keeps them, whatever the policy (other sessions are not \
affected). Pinning what is already pinned changes nothing.

Pin what the rest of the task depends on: the user's requirements, a decision and its reason, \
a file's contents you will edit again. Give `turn_indices` (from 0: turn 1 is index 0), \
`message_ids`, `segment_ids` as context_gc_analyze lists them (each pins its whole turn; a \
summary or notice, its messages), or several; all are pinned or, if one does not exist, none. \
Needs a stored `session_id`: inline messages are not stored, so there is nothing to pin in \
them. Returns the session's pins after the change."""

UNPIN = """\
Let garbage collection take turns or messages of a stored session again that were pinned in \
it (pins a policy holds for every session stay). Unpinning what is not pinned changes nothing.

Give `turn_indices` (from 0: turn 1 is index 0), `message_ids`, `segment_ids` as \
context_gc_analyze lists them (each unpins its turn; a summary or notice, its messages), or \
several, and a stored `session_id`. Returns the session's pins after the change."""


def _pin_work(
    store: ToolStore,
    ref: SessionRef,
    turn_indices: list[int] | None,
    message_ids: list[str] | None,
    segment_ids: list[str] | None,
    pinned: bool,
) -> tuple[PinState, str]:
    verb = "pinning" if pinned else "unpinning"
    stored = ref.stored(verb.capitalize())
    if not turn_indices and not message_ids and not segment_ids:
        raise ToolRefusal(f"name at least one turn index, message id or segment id for {verb}")
    turns, ids = list(turn_indices or ()), list(message_ids or ())
    if segment_ids:
        try:
            of_segments = segment_pins(store.session(stored), segment_ids)
        except KeyError as error:
            raise ToolRefusal(
                f"the session has no segment {error.args[0]!r}", status=404, code="not_found"
            ) from None
        turns += of_segments[0]
        ids += of_segments[1]
    request = PinRequest(tuple(dict.fromkeys(turns)), tuple(dict.fromkeys(ids)), pinned)
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
        segment_ids: SegmentIds = None,
        messages: Messages = None,
    ) -> Annotated[CallToolResult, PinState]:
        return answer(
            store,
            lambda: _pin_work(
                store,
                SessionRef(session_id, messages),
                turn_indices,
                message_ids,
                segment_ids,
                True,
            ),
        )

    def context_gc_unpin(
        session_id: SessionId = None,
        turn_indices: TurnIndices = None,
        message_ids: MessageIds = None,
        segment_ids: SegmentIds = None,
        messages: Messages = None,
    ) -> Annotated[CallToolResult, PinState]:
        return answer(
            store,
            lambda: _pin_work(
                store,
                SessionRef(session_id, messages),
                turn_indices,
                message_ids,
                segment_ids,
                False,
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
