"""``context_gc_analyze``: what a reachability collection would take, keep, and why."""

from __future__ import annotations

from typing import Annotated, get_args

from mcp.server import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from gcengine.analysis.dry_run import AnalyzedSegment, analyze
from gcengine.errors import ToolRefusal
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
from gcengine.mcp_tools.stashes import counted, percent
from gcengine.mcp_tools.store import ToolStore
from gcengine.reachability.explain import Keeper

ANALYZE = """\
The dry run of reachability garbage collection on a session: which segments it would take \
(stash or delete) and which it keeps, each with its score, whether anything still refers to \
it, and the reason in words. Read-only: nothing is changed or stored.

A segment is what a collection removes whole: a tool call with its results \
(`turn_12/<message id>`), what is left of a turn (`turn_12`: its request and the agent's \
words, taken only with the whole turn), a summary or a notice. Roots (the current task, the \
latest turns, pins, locked content, the files being worked on) and whatever they refer to are \
*reachable*. A run takes unreachable candidates lowest score first (score 0 to 1: recency, \
importance of its kind, references, age), reachable ones only when nothing unreachable is \
left, until usage is down to the policy's target.

Returns the figures before and after, the plan (how many segments and tokens would be \
stashed, deleted, or kept among the candidates), the first `limit` candidates in the order a \
run takes them, with `proposed` stash/delete/keep and `reason`, and, for `segment_ids` you \
name, the same for each (any segment, candidate or not: "kept: ..." says why a prune would \
refuse it). Call it before context_gc_prune; give it the segment ids it lists.

Give `session_id` for a stored session, or your own `messages` (with `context_limit`). \
`policy_id` reads it under another stored policy than the session's own; any policy is read as \
a reachability policy (its pins, target, roots and weights)."""


class AnalyzedItem(BaseModel):
    """One segment as the dry run sees it."""

    segment_id: str
    kind: str
    turn_index: int | None
    turn_number: int | None
    tokens: int
    reachable: bool
    root: bool
    candidate: bool = Field(description="whether a collection may take it at all")
    score: float
    refcount: int
    proposed: str = Field(description="what a run would do now: stash, delete or keep")
    reason: str
    anchors: list[str] = Field(description="files, names and error codes it holds")


class PlanPart(BaseModel):
    segments: int
    tokens: int


class GCAnalysis(BaseModel):
    """What ``context_gc_analyze`` found."""

    session_id: int | str | None
    policy: str
    strategy: str = Field(description="the policy's own strategy; it is read as reachability")
    action: str = Field(description="where what a run takes goes: stash, delete or auto")
    context_limit: int
    tokens_before: int
    target_tokens: int
    tokens_after: int
    percent_before: float
    percent_after: float
    segments: int
    reachable: int
    roots: int
    candidates_total: int = Field(
        description="segments a run may take (reachable ones only once no unreachable one is left)"
    )
    candidates_reachable: int = Field(description="of candidates_total, those reachable")
    kept: dict[str, int] = Field(
        description="the other segments, which no run takes, by what keeps them: root (a root, "
        "or in the turn of one), pinned (a pinned turn), recent (one of the latest "
        "preserve_recent_turns turns), locked (locked content); with candidates_total they "
        "add up to segments"
    )
    plan: dict[str, PlanPart] = Field(
        description="stash and delete: what a run would take; keep: the candidates it leaves"
    )
    candidates: list[AnalyzedItem] = Field(description="the first `limit`, in sweep order")
    asked: list[AnalyzedItem] = Field(description="the segments named in `segment_ids`")
    notification: str | None


KEPT_WORDS = {
    "root": "by roots",
    "pinned": "in pinned turns",
    "recent": "in the latest turns",
    "locked": "locked",
}


def _kept_words(kept: dict[str, int]) -> str:
    """``12 kept: 9 by roots, 3 in the latest turns``, what keeps none left out."""
    total = sum(kept.values())
    if not total:
        return "none kept"
    parts = ", ".join(f"{n:,} {KEPT_WORDS[keeper]}" for keeper, n in kept.items() if n)
    return f"{total:,} kept: {parts}"


def _item(segment: AnalyzedSegment) -> AnalyzedItem:
    return AnalyzedItem(
        segment_id=segment.segment_id,
        kind=segment.kind.value,
        turn_index=segment.turn_index,
        turn_number=segment.turn_number,
        tokens=segment.tokens,
        reachable=segment.reachable,
        root=segment.root,
        candidate=segment.candidate,
        score=round(segment.score, 4),
        refcount=segment.refcount,
        proposed=segment.proposed,
        reason=segment.reason,
        anchors=segment.anchors,
    )


def register(server: MCPServer, store: ToolStore) -> None:
    def context_gc_analyze(
        session_id: SessionId = None,
        messages: Messages = None,
        context_limit: ContextLimit = None,
        policy_id: PolicyId = None,
        segment_ids: SegmentIds = None,
        limit: Annotated[
            int, Field(ge=1, le=500, description="How many candidates to list, in sweep order.")
        ] = 20,
    ) -> Annotated[CallToolResult, GCAnalysis]:
        def work() -> tuple[GCAnalysis, str]:
            ref = SessionRef(session_id, messages, context_limit)
            if ref.messages is not None:
                session = inline_session(ref.messages)
            else:
                assert ref.session_id is not None  # a SessionRef holds one or the other
                session = store.session(ref.session_id)
            policy = store.policy(ref.session_id, policy_id)
            analysis = analyze(sized(session, context_limit), policy.config)
            by_id = {segment.segment_id: segment for segment in analysis.segments}
            unknown = [i for i in segment_ids or () if i not in by_id]
            if unknown:
                raise ToolRefusal(
                    f"the session has no segment {unknown[0]!r}", status=404, code="not_found"
                )
            plan = {
                action: PlanPart(
                    segments=sum(1 for s in analysis.segments if s.proposed == action),
                    tokens=sum(s.tokens for s in analysis.segments if s.proposed == action),
                )
                for action in ("stash", "delete")
            }
            kept = [s for s in analysis.candidates if s.proposed == "keep"]
            plan["keep"] = PlanPart(segments=len(kept), tokens=sum(s.tokens for s in kept))
            limit_tokens = analysis.context_limit
            kept_by = {
                keeper: sum(1 for s in analysis.segments if s.kept_by == keeper)
                for keeper in get_args(Keeper)
            }
            result = GCAnalysis(
                session_id=ref.session_id,
                policy=policy.label,
                strategy=policy.config.plugin,
                action=policy.config.action,
                context_limit=limit_tokens,
                tokens_before=analysis.tokens_before,
                target_tokens=analysis.target_tokens,
                tokens_after=analysis.tokens_after,
                percent_before=percent(analysis.tokens_before, limit_tokens),
                percent_after=percent(analysis.tokens_after, limit_tokens),
                segments=len(analysis.segments),
                reachable=sum(1 for s in analysis.segments if s.reachable),
                roots=sum(1 for s in analysis.segments if s.root),
                candidates_total=len(analysis.order),
                candidates_reachable=sum(1 for s in analysis.candidates if s.reachable),
                kept=kept_by,
                plan=plan,
                candidates=[_item(s) for s in analysis.candidates[:limit]],
                asked=[_item(by_id[i]) for i in dict.fromkeys(segment_ids or ())],
                notification=analysis.notification,
            )
            taken = plan["stash"].segments + plan["delete"].segments
            summary = (
                f"{result.percent_before:g}% used ({result.tokens_before:,} tokens); a run of "
                f"{policy.label} would take {counted(taken)} "
                f"({plan['stash'].segments:,} stashed, {plan['delete'].segments:,} deleted), "
                f"leaving {result.percent_after:g}% ({result.tokens_after:,} tokens). "
                f"{result.segments:,} segments: {result.candidates_total:,} may be taken "
                f"({result.candidates_reachable:,} of them reachable), {_kept_words(kept_by)}."
            )
            return result, summary

        return answer(store, work)

    server.add_tool(
        context_gc_analyze,
        title="Analyze what GC would take",
        description=ANALYZE,
        annotations=ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
