"""``context_gc_prune``: take named segments, or run a policy, stashing what goes."""

from __future__ import annotations

import json
from typing import Annotated

from mcp.server import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from gcengine.analysis.prune import pruning_config
from gcengine.errors import ToolRefusal
from gcengine.formats import dump_session
from gcengine.mcp_tools.inputs import (
    ContextLimit,
    Messages,
    PolicyId,
    SegmentIds,
    SessionId,
    SessionRef,
    inline_session,
    sized,
)
from gcengine.mcp_tools.results import answer
from gcengine.mcp_tools.stashes import Pruned, PruneRequest, counted, pruned_of
from gcengine.mcp_tools.store import ToolStore
from gcengine.running.run import run_gc
from gcengine.strategies.reachability import StashAction

PRUNE = """\
Prune a session: take the segments you name (`segment_ids`, from context_gc_analyze), or, \
with none named, run the policy's reachability collection down to its target. The session \
you give is never changed: the pruned session is stored beside it as a new session \
(`new_session_id`), and what was taken is kept in a stash (`run_id`) you can search and \
restore from with context_stash_search and context_stash_retrieve.

`action` says where what is taken goes: `stash` (the default: restorable), `delete` (gone \
for good) or `auto` (deleted only when unreachable and scoring below 0.2, stashed otherwise). \
`delete` and `auto` need `confirm: true`.

Named segments are taken whatever the usage, whole (naming `turn_12` takes the whole turn). \
Pinned turns and messages, locked content, the latest preserve_recent_turns turns and roots \
are never taken: naming one refuses the whole call, nothing taken, with the reason for each.

Returns the ledger (each segment taken: tokens, reachable, score, stashed or deleted, why), \
tokens before and after. Give `session_id` for a stored session, or your own `messages` for an \
answer with nothing stored: it returns the pruned conversation (`session`, a JAATO session \
file) and the `stash`; this cannot remove anything from your actual context, so drop those \
messages yourself."""

Action = Annotated[
    StashAction,
    Field(
        description="stash (restorable, the default), delete (gone for good) or auto "
        "(delete only unreachable segments scoring below 0.2)."
    ),
]
Confirm = Annotated[
    bool,
    Field(description="Must be true for action delete or auto, which delete for good."),
]


def _inline_prune(
    store: ToolStore, ref: SessionRef, request: PruneRequest, context_limit: int | None
) -> Pruned:
    """A prune of the caller's own messages: the engine's answer, nothing stored."""
    assert ref.messages is not None
    session = sized(inline_session(ref.messages), context_limit)
    policy = store.policy(None, request.policy_id)
    config = pruning_config(policy.config, request.action, request.segment_ids)
    outcome = run_gc(session, config)
    pruned = pruned_of(outcome, policy=policy.label, request=request)
    stash = outcome.result.stash
    return pruned.model_copy(
        update={
            "session": json.loads(dump_session(outcome.session, indent=None)),
            "stash": stash.model_dump(mode="json") if stash is not None else None,
        }
    )


def _summary(pruned: Pruned) -> str:
    if not pruned.ledger:
        return f"Nothing taken: {pruned.message}."
    where = (
        f" New session {pruned.new_session_id}; stash {pruned.run_id}."
        if pruned.new_session_id is not None
        else " Nothing stored: the pruned conversation and its stash are in the answer."
    )
    return (
        f"Took {counted(len(pruned.ledger))} ({pruned.stashed:,} stashed, "
        f"{pruned.deleted:,} deleted): {pruned.tokens_before:,} -> {pruned.tokens_after:,} "
        f"tokens ({pruned.percent_before:g}% -> {pruned.percent_after:g}%).{where}"
    )


def register(server: MCPServer, store: ToolStore) -> None:
    def context_gc_prune(
        session_id: SessionId = None,
        messages: Messages = None,
        segment_ids: SegmentIds = None,
        action: Action = "stash",
        confirm: Confirm = False,
        policy_id: PolicyId = None,
        context_limit: ContextLimit = None,
    ) -> Annotated[CallToolResult, Pruned]:
        def work() -> tuple[Pruned, str]:
            ref = SessionRef(session_id, messages, context_limit)
            if action != "stash" and not confirm:
                raise ToolRefusal(
                    f"action {action} deletes segments for good: call again with confirm: "
                    "true, or use action stash to keep them restorable",
                    code="confirm_needed",
                )
            request = PruneRequest(policy_id, tuple(dict.fromkeys(segment_ids or ())), action)
            if ref.inline:
                pruned = _inline_prune(store, ref, request, context_limit)
            else:
                assert ref.session_id is not None
                pruned = store.prune(ref.session_id, request)
            return pruned, _summary(pruned)

        return answer(store, work)

    server.add_tool(
        context_gc_prune,
        title="Prune segments (stash or delete)",
        description=PRUNE,
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
