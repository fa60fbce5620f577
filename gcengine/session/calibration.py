"""The provider's own counting, measured from the model calls a file recorded.

A transcript holds the conversation but not all of what each call sent, and the engine counts
Claude's messages with another model's vocabulary (cl100k). Each call's recorded prompt says
what the provider counted, so two figures follow:

* the **factor**: between two consecutive calls of one context the prompt grows by what the
  first call produced and what came back before the next (its output, the tool results, the
  user's words). The recorded growth over the counted text of those messages, summed over
  every such pair, is how many provider tokens a counted token is. A pair across a compaction
  (or any pair whose prompt shrank) says nothing about growth and is left out. Each
  message's fixed cost (``MESSAGE_OVERHEAD_TOKENS``) is taken out of both sides, since the
  budget adds it unscaled.
* the **unseen overhead**: a context's first call's prompt less the (scaled) messages before
  it is what the file does not hold (system prompt, tool definitions, injected context);
  every later call of that context sends it again, so the budget holds it as one locked
  entry. It is measured per context: after a compaction Claude Code sends more of it (it
  attaches the files read last again), 29-36 k against 26 k at the start in the real
  transcripts.

Thinking: Anthropic strips thinking blocks of earlier assistant turns from the context but
keeps those of the current tool loop, and a Claude Code session is mostly one long tool loop.
What the provider keeps cannot be counted from the file: Claude 4 models return a summary of
their thinking, not the thinking they were billed for, and Claude Code's ``output_tokens`` is
often the value at the start of the stream. So thinking parts still count zero, and whatever
thinking the provider kept is inside the measured growth: the factor carries it (the visible
thinking text is about 1 % of the growth in the real transcripts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from gcengine.messages import Message
from gcengine.session.model import RecordedUsage, Session
from gcengine.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    TokenCounter,
    count_messages,
    counter_by_name,
    scaled_parts,
)

MIN_PAIRS = 3
"""Fewer pairs of consecutive calls than this measure nothing worth scaling by."""
_PLAUSIBLE = (0.5, 4.0)
"""A factor outside this range means the calls and the messages were not matched right."""


@dataclass(frozen=True)
class ProviderCounting:
    """What the recorded calls say about the provider's counting (see the module)."""

    factor: float
    overhead: int
    """The overhead of the last context measured (the history's, when it has a call)."""
    overheads: tuple[int | None, ...] = ()
    """Each context's overhead, in the order given; None where no call was placed."""
    pairs: int = 0
    counted: int = 0
    grown: int = 0


def measure_provider_counting(
    contexts: Sequence[Sequence[Message]],
    usage: Sequence[RecordedUsage],
    counter: TokenCounter,
) -> ProviderCounting | None:
    """The factor and unseen overhead of the calls ``usage`` records over ``contexts`` (each
    context the agent held, in order: those its compactions replaced, then the history), or
    None when too few calls can be placed (a call is placed by the first message it
    produced)."""
    grown = counted = pairs = 0
    firsts: list[tuple[int, int, int] | None] = []  # per context: prompt, text, messages before
    for context in contexts:
        position = {message.message_id: i for i, message in enumerate(context)}
        calls = [
            (position[u.message_id], u.prompt_tokens)
            for u in usage
            if u.message_id is not None and u.message_id in position
        ]
        if not calls:
            firsts.append(None)
            continue
        texts = [n - MESSAGE_OVERHEAD_TOKENS for n in count_messages(context, counter)]
        firsts.append((calls[0][1], sum(texts[: calls[0][0]]), calls[0][0]))
        for (start, before), (end, after) in pairwise(calls):
            if end <= start or after < before:
                continue
            grown += after - before - (end - start) * MESSAGE_OVERHEAD_TOKENS
            counted += sum(texts[start:end])
            pairs += 1
    if pairs < MIN_PAIRS or counted <= 0:
        return None
    factor = round(grown / counted, 4)
    if not _PLAUSIBLE[0] <= factor <= _PLAUSIBLE[1]:
        return None
    overheads = tuple(
        None
        if first is None
        else max(0, first[0] - round(first[1] * factor) - first[2] * MESSAGE_OVERHEAD_TOKENS)
        for first in firsts
    )
    return ProviderCounting(
        factor=factor,
        overhead=next(o for o in reversed(overheads) if o is not None),
        overheads=overheads,
        pairs=pairs,
        counted=counted,
        grown=grown,
    )


@dataclass(frozen=True)
class LocalEstimate:
    """A scaled session's figures beside what the local counter alone says (the page shows
    both, so the scaling is never hidden)."""

    scale: float
    local_counter: str
    local_tokens: int
    """The history counted with the local counter, unscaled."""
    scaled_tokens: int
    """The same history as the budget counts it (scaled)."""
    unseen_overhead: int


def local_estimate(session: Session) -> LocalEstimate | None:
    """The history counted with the local counter next to its scaled figure, for a session
    whose counter is a ``ScaledCounter``; None for any other."""
    scaled = scaled_parts(session.token_counter)
    if scaled is None:
        return None
    local = counter_by_name(scaled[1])
    return LocalEstimate(
        scale=scaled[0],
        local_counter=local.name,
        local_tokens=sum(count_messages(session.history, local)),
        scaled_tokens=sum(count_messages(session.history, counter_by_name(session.token_counter))),
        unseen_overhead=session.unseen_overhead or 0,
    )
