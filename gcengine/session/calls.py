"""A session's model calls as a timeline: what each call sent and received, where it stood.

Agents work in a few user turns of hundreds of model calls, so a turn is too coarse to see
usage climb and fall: the file's recorded usage (one ``RecordedUsage`` per call, a response a
file splits over several records counted once) is the real curve. Each call is placed by the
first message its response produced: the context that message belongs to (the contexts the
agent held one after another, each ended by one of its compactions) and the messages before it
there, which are what the call saw. A compaction falls between the last call of the context it
ended and the first call of the next; where the file records no size after it, the first call
after it does (the context the agent carried on with, as the provider counted it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from gcengine.session.model import ObservedCompaction, RecordedUsage, Session

SizeSource = Literal["file", "first call after"]


class ModelCall(BaseModel):
    """One model call of the session, in the order the agent made them."""

    number: int = Field(ge=1, description="its place among the session's calls, from 1")
    prompt_tokens: int = Field(ge=0, description="all its input: the context size at that call")
    uncached_tokens: int | None = Field(
        default=None, description="input neither read from nor written to the prompt cache"
    )
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    output_tokens: int | None = None
    message_id: str | None = Field(
        default=None, description="the first message its response produced"
    )
    context: int = Field(ge=0, description="how many of the agent's compactions came before it")
    messages_seen: int | None = Field(
        default=None,
        description="messages before its response in its context (what it saw); None when "
        "the response is in no context the session holds",
    )
    turn_index: int | None = Field(default=None, description="the stable index of its turn")
    at: str | None = None


class CompactionOnTimeline(BaseModel):
    """Where one of the agent's compactions falls among the calls, with its sizes."""

    compaction_id: str
    trigger: str | None = None
    after_calls: int = Field(ge=0, description="how many calls came before it")
    tokens_before: int | None = None
    tokens_after: int | None = None
    tokens_after_source: SizeSource | None = Field(
        default=None,
        description="the compaction's own record, or the input of the first call after it",
    )


class CallTimeline(BaseModel):
    """Every recorded model call of a session, in order, with the compactions between them."""

    calls: list[ModelCall] = Field(default_factory=list)
    compactions: list[CompactionOnTimeline] = Field(default_factory=list)


def _uncached(usage: RecordedUsage) -> int | None:
    if usage.cache_read_tokens is None and usage.cache_creation_tokens is None:
        return None
    cached = (usage.cache_read_tokens or 0) + (usage.cache_creation_tokens or 0)
    return max(usage.prompt_tokens - cached, 0)


def _contexts(session: Session) -> list[list[str]]:
    """The message ids of each context the agent held, in order: the one each compaction
    ended (``context_before``, or what it replaced when the file names no more), then the
    history."""
    before = [c.context_before or [m.message_id for m in c.replaced] for c in session.compactions]
    return [*before, [m.message_id for m in session.history]]


def _turns(session: Session) -> dict[str, int | None]:
    turn_of = {m.message_id: m.turn_index for m in session.history}
    for compaction in session.compactions:
        turn_of.update((m.message_id, m.turn_index) for m in compaction.replaced)
    return turn_of


def _size_after(
    compaction: ObservedCompaction, first_after: ModelCall | None
) -> tuple[int | None, SizeSource | None]:
    if compaction.tokens_after is not None:
        return compaction.tokens_after, "file"
    if first_after is not None:
        return first_after.prompt_tokens, "first call after"
    return None, None


def call_timeline(session: Session) -> CallTimeline:
    """``session``'s recorded model calls in order, each placed in the context and turn its
    response belongs to, and its compactions placed between them.

    A call is looked up from the context the call before it was in onwards (contexts only
    follow one another), so a message a partial compaction kept is found where the call made
    it. A call whose response no context holds stays in the context of the call before it.
    """
    contexts = _contexts(session)
    positions = [{mid: i for i, mid in enumerate(ids)} for ids in contexts]
    turn_of = _turns(session)
    calls: list[ModelCall] = []
    current = 0
    for number, usage in enumerate(session.recorded_usage, start=1):
        mid = usage.message_id
        seen = None
        if mid is not None:
            found = next((k for k in range(current, len(positions)) if mid in positions[k]), None)
            if found is not None:
                current, seen = found, positions[found][mid]
        calls.append(
            ModelCall(
                number=number,
                prompt_tokens=usage.prompt_tokens,
                uncached_tokens=_uncached(usage),
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_creation_tokens,
                output_tokens=usage.output_tokens,
                message_id=mid,
                context=current,
                messages_seen=seen,
                turn_index=turn_of.get(mid) if mid is not None else None,
                at=usage.at,
            )
        )
    placed = []
    for k, compaction in enumerate(session.compactions):
        after_calls = sum(1 for call in calls if call.context <= k)
        first_after = calls[after_calls] if after_calls < len(calls) else None
        tokens_after, source = _size_after(compaction, first_after)
        placed.append(
            CompactionOnTimeline(
                compaction_id=compaction.compaction_id,
                trigger=compaction.trigger,
                after_calls=after_calls,
                tokens_before=compaction.tokens_before,
                tokens_after=tokens_after,
                tokens_after_source=source,
            )
        )
    return CallTimeline(calls=calls, compactions=placed)
