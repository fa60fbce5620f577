"""``context_stash_search`` and ``context_stash_retrieve``: find what a prune stashed, and get it
back."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field, ValidationError

from gcengine.errors import ToolRefusal
from gcengine.formats import dump_session
from gcengine.gc.segments import SegmentKind
from gcengine.gc.stash import Stash, restore
from gcengine.mcp_tools.inputs import (
    InlineStash,
    Messages,
    RunId,
    SegmentIds,
    StashSessionId,
    inline_session,
)
from gcengine.mcp_tools.results import answer
from gcengine.mcp_tools.stashes import (
    Retrieved,
    StashFound,
    StashQuery,
    StashRef,
    counted,
    retrieved_content,
    stash_found,
)
from gcengine.mcp_tools.store import ToolStore

SEARCH = """\
Search what a prune stashed: by words in what a segment says (tool calls and results \
included), by a file, name or error code it holds (`anchor`), by `kind` or by turn. Read-only. \
All the filters you give must match; none lists the whole stash, in the order the prune took \
it.

Name the stash by `run_id` (what context_gc_prune returned), by `session_id` (the session a \
prune made, or one restored from it; in the dashboard, any session with a reachability run: its \
latest stash), or, after a prune of inline messages, by the `stash` it returned. Returns each \
match's segment id, kind, turn, tokens, score, why it was taken, anchors and the start of its \
text; give the ids to context_stash_retrieve."""

RETRIEVE = """\
Get stashed segments back. `into: "session"` (the default) puts them back where they stood, \
whole, in a new session derived from the one the prune left (the prune's session and its \
stash stay as they are), and returns its `new_session_id`; restoring the same segments again \
gives the same session, nothing written again. `into: "content"` changes nothing and returns each \
segment's text, for you to read or put back into your own context.

Name the stash as context_stash_search does (`run_id`, `session_id`, or inline `stash` with \
the pruned conversation as `messages`: `into: "session"` then returns the restored \
conversation as `session`, nothing stored) and the segments by `segment_ids`. A segment the \
stash does not hold, or one already back, is refused and nothing is restored."""

Kind = Annotated[SegmentKind | None, Field(description="Only segments of this kind.")]


def _inline_stash(stash: dict[str, Any]) -> Stash:
    try:
        return Stash.model_validate(stash)
    except ValidationError:
        raise ToolRefusal(
            "stash is not a stash a prune returned: give it back as context_gc_prune sent it"
        ) from None


def _ref(run_id: int | str | None, session_id: int | str | None, inline: bool) -> StashRef:
    given = sum(1 for part in (run_id, session_id) if part is not None) + inline
    if given != 1:
        raise ToolRefusal(
            "name one stash: run_id, session_id, or stash (with messages for into=session)"
        )
    return StashRef(run_id, session_id)


def register(server: MCPServer, store: ToolStore) -> None:
    def context_stash_search(
        run_id: RunId = None,
        session_id: StashSessionId = None,
        text: Annotated[
            str, Field(max_length=500, description="Words the segment says (any case).")
        ] = "",
        anchor: Annotated[
            str,
            Field(max_length=500, description="A file, name or error code the segment holds."),
        ] = "",
        kind: Kind = None,
        turn_index: Annotated[
            int | None, Field(ge=0, description="Only segments of this turn (index from 0).")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="How many to list.")] = 20,
        stash: InlineStash = None,
    ) -> Annotated[CallToolResult, StashFound]:
        def work() -> tuple[StashFound, str]:
            ref = _ref(run_id, session_id, stash is not None)
            query = StashQuery(
                text.strip(), anchor.strip(), kind.value if kind else None, turn_index, limit
            )
            if stash is not None:
                found = stash_found(_inline_stash(stash), query, None)
            else:
                found = store.stash_search(ref, query)
            named = [hit.segment_id for hit in found.segments[:5]]
            rest = found.found - len(named)
            shown = ", ".join(named)
            more = f" and {rest:,} more" if rest > 0 else ""
            summary = f"{found.found:,} of {found.stashed:,} stashed segments match" + (
                f": {shown}{more}." if found.found else "."
            )
            return found, summary

        return answer(store, work)

    def context_stash_retrieve(
        segment_ids: SegmentIds = None,
        run_id: RunId = None,
        session_id: StashSessionId = None,
        into: Annotated[
            Literal["session", "content"],
            Field(
                description="session: restore into a new session derived from the pruned one; "
                "content: return the segments' text, nothing changed."
            ),
        ] = "session",
        stash: InlineStash = None,
        messages: Messages = None,
    ) -> Annotated[CallToolResult, Retrieved]:
        def work() -> tuple[Retrieved, str]:
            ref = _ref(run_id, session_id, stash is not None)
            if not segment_ids:
                raise ToolRefusal("name at least one stashed segment in segment_ids")
            if stash is not None:
                retrieved = _inline_retrieve(_inline_stash(stash), segment_ids, into, messages)
            else:
                if messages is not None:
                    raise ToolRefusal("messages go with an inline stash only")
                retrieved = store.stash_retrieve(ref, segment_ids, into == "session")
            if retrieved.into == "content":
                tokens = sum(s.tokens for s in retrieved.segments)
                return retrieved, (
                    f"The text of {counted(len(retrieved.segments))} "
                    f"({tokens:,} tokens); nothing restored."
                )
            done = f"Restored {counted(len(retrieved.restored))}"
            if retrieved.new_session_id is None:
                return retrieved, f"{done}: the conversation is in `session` (nothing stored)."
            return retrieved, f"{done} into new session {retrieved.new_session_id}."

        return answer(store, work)

    server.add_tool(
        context_stash_search,
        title="Search the stash",
        description=SEARCH,
        annotations=ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    server.add_tool(
        context_stash_retrieve,
        title="Retrieve stashed segments",
        description=RETRIEVE,
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )


def _inline_retrieve(
    stash: Stash,
    segment_ids: list[str],
    into: Literal["session", "content"],
    messages: list[dict[str, Any]] | dict[str, Any] | None,
) -> Retrieved:
    """Retrieval from a stash the caller holds: its content, or the restored conversation."""
    if into == "content":
        return retrieved_content(stash, segment_ids, None)
    if messages is None:
        raise ToolRefusal(
            "into=session with an inline stash needs messages: the pruned conversation (the "
            "`session` context_gc_prune returned)"
        )
    restored = restore(inline_session(messages), stash, segment_ids)
    return Retrieved(
        run_id=None,
        into="session",
        restored=list(dict.fromkeys(segment_ids)),
        new_session_id=None,
        segments=[],
        session=json.loads(dump_session(restored, indent=None)),
    )
