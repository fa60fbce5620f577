"""What the pruning and stash tools answer, and how an answer is read from engine values.

A prune's answer is the same whoever carried it out: the ledger (each segment taken, its
tokens, reachability, score, whether it was stashed or deleted, and why), the tokens before
and after, and where the pruned session and its stash now are. Servers that hold the engine's
values (the local server, inline messages) build it with ``pruned_of``; the dashboard from the
run it stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from gcengine.gc.stash import Stash, StashedSegment
from gcengine.messages import turn_number
from gcengine.running.run import GCOutcome
from gcengine.strategies.reachability import StashAction

PREVIEW_CHARS = 300


@dataclass(frozen=True)
class PruneRequest:
    """A prune of one session: the segments named (none: run the policy), where what it takes
    goes, and the policy it runs under (None: the session's own)."""

    policy_id: int | None
    segment_ids: tuple[str, ...]
    action: StashAction


@dataclass(frozen=True)
class StashRef:
    """Which stash a call reads: a run's (``run_id``), or the one a session was made from or
    last pruned into (``session_id``)."""

    run_id: int | str | None
    session_id: int | str | None


@dataclass(frozen=True)
class StashQuery:
    """What to find in a stash; empty parts match everything."""

    text: str = ""
    anchor: str = ""
    kind: str | None = None
    turn_index: int | None = None
    limit: int = 20


class LedgerItem(BaseModel):
    """One segment a prune took."""

    segment_id: str
    turn_index: int | None
    turn_number: int | None
    tokens_freed: int
    reason: str = Field(description="unreachable or reachable_low_score")
    action: str | None = Field(description="stashed (restorable) or deleted")
    reachable: bool | None
    score: float | None
    why: str = Field(description="why it was taken, in words")


class Pruned(BaseModel):
    """What ``context_gc_prune`` did."""

    session_id: int | str | None = Field(description="the session pruned; None for inline")
    new_session_id: int | str | None = Field(
        description="the session after the prune, stored beside the original (None when "
        "nothing was taken, or for inline messages)"
    )
    run_id: int | str | None = Field(
        description="the stored run (dashboard) or stash file (local server) whose stash holds "
        "what was stashed: give it to context_stash_search and context_stash_retrieve"
    )
    run_url: str | None = None
    policy: str
    action: StashAction
    segments_named: list[str]
    context_limit: int
    tokens_before: int
    tokens_after: int
    tokens_freed: int
    percent_before: float
    percent_after: float
    stashed: int
    deleted: int
    ledger: list[LedgerItem]
    notification: str | None = Field(description="the notice the run wrote into the session")
    message: str | None = Field(default=None, description="why nothing was taken, if so")
    session: dict[str, Any] | None = Field(
        default=None,
        description="inline only: the pruned conversation as a JAATO session file (give it "
        "back as `messages`)",
    )
    stash: dict[str, Any] | None = Field(
        default=None,
        description="inline only: what was stashed (give it back as `stash` to search or "
        "retrieve it; nothing is stored)",
    )


class StashHit(BaseModel):
    """One stashed segment a search found."""

    segment_id: str
    kind: str
    turn_index: int | None
    turn_number: int | None
    tokens: int
    score: float
    reachable: bool
    reason: str = Field(description="why the prune took it")
    anchors: list[str] = Field(description="files, names and error codes it holds")
    preview: str = Field(description=f"the first {PREVIEW_CHARS} characters of what it says")


class StashFound(BaseModel):
    """What ``context_stash_search`` found, in the order the prune took it."""

    run_id: int | str | None
    stashed: int = Field(description="segments in the stash in all")
    found: int = Field(description="segments matching, of which `segments` lists the first")
    segments: list[StashHit]


class RetrievedSegment(BaseModel):
    segment_id: str
    turn_number: int | None
    tokens: int
    text: str = Field(description="everything it says, tool calls and results included")


class Retrieved(BaseModel):
    """What ``context_stash_retrieve`` gave back."""

    run_id: int | str | None
    into: Literal["session", "content"]
    restored: list[str]
    new_session_id: int | str | None = Field(
        description="into=session: the session with the segments back where they stood"
    )
    segments: list[RetrievedSegment] = Field(
        description="into=content: each segment's text, to read or put back in your context"
    )
    session: dict[str, Any] | None = Field(
        default=None, description="inline only: the restored session as a JAATO session file"
    )


def counted(number: int) -> str:
    """``1 segment``, ``12 segments``."""
    return f"{number:,} segment" if number == 1 else f"{number:,} segments"


def percent(tokens: int, limit: int) -> float:
    return round(tokens / limit * 100, 2) if limit else 0.0


def pruned_of(
    outcome: GCOutcome,
    *,
    policy: str,
    request: PruneRequest,
    session_id: int | str | None = None,
    new_session_id: int | str | None = None,
    run_id: int | str | None = None,
) -> Pruned:
    """A prune's answer from the engine's outcome."""
    result = outcome.result
    limit = outcome.budget_before.context_limit
    ledger = [
        LedgerItem(
            segment_id=item.child_key or "",
            turn_index=item.turn_index,
            turn_number=turn_number(item.turn_index) if item.turn_index is not None else None,
            tokens_freed=item.tokens_freed,
            reason=str(item.reason),
            action=item.verdict.action if item.verdict else None,
            reachable=item.verdict.reachable if item.verdict else None,
            score=round(item.verdict.score, 4) if item.verdict else None,
            why=item.verdict.sentence if item.verdict else "",
        )
        for item in result.removal_list
    ]
    return Pruned(
        session_id=session_id,
        new_session_id=new_session_id,
        run_id=run_id,
        policy=policy,
        action=request.action,
        segments_named=list(request.segment_ids),
        context_limit=limit,
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
        tokens_freed=result.tokens_before - result.tokens_after,
        percent_before=percent(result.tokens_before, limit),
        percent_after=percent(result.tokens_after, limit),
        stashed=sum(1 for item in ledger if item.action == "stashed"),
        deleted=sum(1 for item in ledger if item.action == "deleted"),
        ledger=ledger,
        notification=result.notification,
        message=None if ledger else str(result.details.get("message") or "nothing to take"),
    )


def stash_hit(segment: StashedSegment) -> StashHit:
    return StashHit(
        segment_id=segment.segment_id,
        kind=segment.kind.value,
        turn_index=segment.turn_index,
        turn_number=segment.turn_number,
        tokens=segment.tokens,
        score=round(segment.score, 4),
        reachable=segment.reachable,
        reason=segment.reason,
        anchors=segment.shown_anchors,
        preview=segment.text[:PREVIEW_CHARS],
    )


def stash_found(stash: Stash, query: StashQuery, run_id: int | str | None) -> StashFound:
    """A search of a stash the caller holds as a value (a file's, or one passed inline)."""
    found = [
        segment
        for segment in stash.search(query.text, query.anchor)
        if (query.kind is None or segment.kind.value == query.kind)
        and (query.turn_index is None or segment.turn_index == query.turn_index)
    ]
    return StashFound(
        run_id=run_id,
        stashed=len(stash.segments),
        found=len(found),
        segments=[stash_hit(segment) for segment in found[: query.limit]],
    )


def retrieved_content(stash: Stash, segment_ids: list[str], run_id: int | str | None) -> Retrieved:
    """The chosen segments' text, nothing restored (``StashError`` for one it does not hold)."""
    chosen = [stash.segment(segment_id) for segment_id in dict.fromkeys(segment_ids)]
    return Retrieved(
        run_id=run_id,
        into="content",
        restored=[],
        new_session_id=None,
        segments=[
            RetrievedSegment(
                segment_id=s.segment_id, turn_number=s.turn_number, tokens=s.tokens, text=s.text
            )
            for s in chosen
        ],
    )
