"""``context_gc_configure``: change when and how far a policy collects."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from gcengine.mcp_tools.inputs import (
    Messages,
    Percent,
    PolicyChanges,
    PolicyId,
    RootsChange,
    SessionId,
    SessionRef,
)
from gcengine.mcp_tools.results import answer
from gcengine.mcp_tools.store import ConfiguredPolicy, ToolStore
from gcengine.strategies.reachability import BATCH_SIZE_RANGE

CONFIGURE = """\
Change a GC policy's settings, saved as a new version of it with you as its author. In the \
dashboard the new version waits for a reviewer like any other (review_status "pending") and \
applies to every session that runs under the policy, so change it when the task's needs \
changed, not for one turn.

Give the policy by `policy_id`, or give `session_id` to change the policy that session runs \
under (its project's default policy). Inline messages name no stored policy and are refused. \
Settings you leave out stay as they are:
- threshold_percent: usage at which GC starts (threshold mode).
- target_percent: usage a collection brings the context down to; below the threshold.
- pressure_percent: usage above which preservable content may go too; 0 switches to \
continuous mode (collect after every turn above the target, never touch preservable content).
- preserve_recent_turns: how many of the latest turns are never collected.
For reachability collection (what context_gc_prune and context_gc_analyze run):
- roots: what is always kept and followed for references, each optional: current_task, \
recent_turns, pinned, locked, active_file_turns (roots you leave out stay as they are). \
Lower recent_turns or active_file_turns to let context_gc_prune take older reads it refuses \
as roots.
- incremental and batch_size: also collect a batch of at most batch_size segments (5 to 20) \
after each turn once usage passes the target.
Returns the settings changed, before and after, and the whole gc.json saved."""

Message = Annotated[
    str,
    Field(
        max_length=500,
        description="Why you changed it, saved with the version (reviewers read it).",
    ),
]


def register(server: MCPServer, store: ToolStore) -> None:
    def context_gc_configure(
        session_id: SessionId = None,
        policy_id: PolicyId = None,
        threshold_percent: Annotated[
            Percent, Field(description="Usage (% of the window) at which GC starts.")
        ] = None,
        target_percent: Annotated[
            Percent, Field(description="Usage a collection brings the context down to.")
        ] = None,
        pressure_percent: Annotated[
            float | None,
            Field(ge=0, le=100, description="Pressure threshold; 0 means continuous mode."),
        ] = None,
        preserve_recent_turns: Annotated[
            int | None, Field(ge=0, description="Latest turns never collected.")
        ] = None,
        roots: Annotated[
            RootsChange | None,
            Field(description="Reachability roots to change; those left out stay as they are."),
        ] = None,
        incremental: Annotated[
            bool | None,
            Field(description="Also collect a batch after each turn above the target."),
        ] = None,
        batch_size: Annotated[
            int | None,
            Field(
                ge=BATCH_SIZE_RANGE[0],
                le=BATCH_SIZE_RANGE[1],
                description="The most segments an incremental batch takes.",
            ),
        ] = None,
        message: Message = "",
        messages: Messages = None,
    ) -> Annotated[CallToolResult, ConfiguredPolicy]:
        def work() -> tuple[ConfiguredPolicy, str]:
            if messages is not None:
                SessionRef(None, messages).stored("Configuring a policy")
            changes = PolicyChanges(
                threshold_percent=threshold_percent,
                target_percent=target_percent,
                pressure_percent=pressure_percent,
                preserve_recent_turns=preserve_recent_turns,
                roots=roots,
                incremental=incremental,
                batch_size=batch_size,
            )
            saved = store.configure(session_id, policy_id, changes, message.strip())
            moved = ", ".join(change.described() for change in saved.changes)
            where = f"version {saved.version}" if saved.version is not None else "saved"
            review = f"; review {saved.review_status}" if saved.review_status is not None else ""
            if not saved.changes:
                return saved, f"{saved.policy}: already set so, nothing saved."
            return saved, f"{saved.policy} {where}: {moved}{review}."

        return answer(store, work)

    server.add_tool(
        context_gc_configure,
        title="Configure a GC policy",
        description=CONFIGURE,
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
