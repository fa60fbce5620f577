"""Replacing turns with a summary: what the summarize and hybrid strategies share.

A summary never costs what it replaces or more, nor more than ``max_summary_tokens`` allows;
an earlier summary among the turns is folded into the new one, so the chain loses nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from gcengine._fast import construct
from gcengine.gc.plan import Collection, Decision, Unit, marked_message
from gcengine.gc.provider_summaries import summarizer_for
from gcengine.gc.summarizers import (
    DEFAULT_MAX_SUMMARY_TOKENS,
    SummaryRequest,
    summary_text,
)
from gcengine.gc.types import RemovalReason
from gcengine.messages import MessageKind, Turn
from gcengine.tokens import TokenCounter, count_message

NO_SUMMARIZER = (
    "No summarizer function configured. Provide a 'summarizer' callable in plugin config."
)
"""JAATO's error when summarizing without a summarizer (JAATO's rules)."""


def summarizer_given(options: Mapping[str, Any]) -> bool:
    """Whether the plugin's options name a summarizer (JAATO's rules have no default one)."""
    return options.get("summarizer") is not None


# Tokens a summary's text can gain from being joined with JAATO's markers (a line break the
# empty wrapper merges, say): part of the most a summary message may cost.
_SUMMARY_JOIN_SLACK = 2


def summary_limits(
    collection: Collection, options: Mapping[str, Any], counter: TokenCounter
) -> tuple[int, int]:
    """The cap on a summary's text (``max_summary_tokens``) and the most its message may cost:
    what a run reserves for it in the stopping rule."""
    cap = int(
        options.get("max_summary_tokens")
        or collection.config.max_summary_tokens
        or DEFAULT_MAX_SUMMARY_TOKENS
    )
    wrapper = count_message(marked_message(MessageKind.SUMMARY, summary_text(""), ()), counter)
    return cap, cap + wrapper + _SUMMARY_JOIN_SLACK


def summarize_units(
    collection: Collection,
    units: list[Unit],
    counter: TokenCounter,
    options: Mapping[str, Any],
    decision: Decision,
) -> None:
    """Replace ``units`` (whole turns, then pieces of turns, oldest first) with one summary
    in the chain; nothing when they hold nothing but summaries.

    An earlier summary among them is folded into the new one, which records the turns and the
    summary it covers, so nothing the chain held is lost. A summary never costs what it
    replaces or more, nor more than ``max_summary_tokens`` allows: the summarizer is asked to
    stay within that, and a summary that does not (or turns too small to leave it room) are
    truncated instead, the details saying why (``summary_skipped``). Under JAATO's rules the
    summary is used whatever it costs, as JAATO's plugins use it.
    """
    turns = _turns_of(collection, units)
    if all(t.kind is MessageKind.SUMMARY for t in turns):
        # Nothing but summaries: a summary of them would cover no turn and keep less than
        # they hold (an agent's compaction summary is the only record of what it compacted).
        return
    for unit in units:
        decision.remove(unit, RemovalReason.SUMMARIZED)
    summarize_taken(collection, units, counter, options, decision)


def summarize_taken(
    collection: Collection,
    units: list[Unit],
    counter: TokenCounter,
    options: Mapping[str, Any],
    decision: Decision,
) -> None:
    """Write the summary of ``units``, which ``decision`` takes already (whatever the reason:
    the reachability strategy stashes what it summarizes), as ``summarize_units`` does."""
    jaato = collection.jaato_rules
    turns = _turns_of(collection, units)
    earlier = [t for t in turns if t.kind is MessageKind.SUMMARY]
    covered = [t for t in turns if t.kind is not MessageKind.SUMMARY]
    if not covered:
        return
    previous = earlier[-1].messages[0] if earlier else None
    cap, most = summary_limits(collection, options, counter)
    replaced = sum(unit.tokens for unit in units)
    room = min(most, replaced - 1)  # the most the summary message may cost
    decision.details["turns_summarized"] = len(units) if jaato else len(covered)
    text_room = cap if jaato else min(cap, room - (most - cap))
    if text_room <= 0:
        decision.truncate_instead(
            f"the turns to summarize cost {replaced:,} tokens, too few for a summary smaller "
            "than them"
        )
        return
    summarizer = summarizer_for(options)
    body = summarizer.summarize(
        SummaryRequest(
            turns=covered,
            previous_summary=_summary_body(previous.text) if previous else None,
            max_tokens=text_room,
            counter=counter,
        )
    )
    # A summary always stands alone as a turn, so the summaries are those turns' first messages.
    layout = collection.layout
    summaries = [
        collection.history[layout.starts[p]]
        for p, kind in enumerate(layout.kinds)
        if kind is MessageKind.SUMMARY
    ]
    existing = [
        int(m.metadata["summary_number"])
        for m in summaries
        if isinstance(m.metadata.get("summary_number"), int)
    ]
    number = max(existing, default=0) + 1
    decision.inserted = marked_message(
        MessageKind.SUMMARY,
        summary_text(body),
        [i for unit in units for i in unit.message_ids],
        summary_number=number,
        covers_turns=[t.index for t in covered],
        covers_summary=previous.metadata.get("summary_number", previous.message_id)
        if previous
        else None,
        summarizer=summarizer.name,
    )
    tokens = count_message(decision.inserted, counter)
    decision.details.update(
        {"summary_number": number, "summarizer": summarizer.name, "summary_tokens": tokens}
    )
    # A summarizer that calls a provider says what the call cost and who wrote the summary.
    call = getattr(summarizer, "last_call", None)
    if isinstance(call, BaseModel):
        decision.details["summary_call"] = call.model_dump(mode="json")
    if jaato:
        decision.details["summary_length"] = len(body)
        return
    if tokens >= replaced:
        decision.truncate_instead(
            f"the {summarizer.name} summary ({tokens:,} tokens) was not smaller than the "
            f"{replaced:,} tokens it would replace"
        )
    elif tokens > most:
        decision.truncate_instead(
            f"the {summarizer.name} summary ({tokens:,} tokens) was longer than "
            f"max_summary_tokens ({cap:,}) allows"
        )


def _turns_of(collection: Collection, units: list[Unit]) -> list[Turn]:
    """The turns ``units`` take, oldest first: each whole, or only the messages its pieces
    take (a long turn's older exchanges), so the summary covers what goes and nothing else."""
    taken: dict[int, list[int]] = {}
    whole: set[int] = set()
    for unit in units:
        if unit.turn_position is None:
            continue
        taken.setdefault(unit.turn_position, []).extend(unit.positions)
        if unit.whole_turn:
            whole.add(unit.turn_position)
    history, layout = collection.history, collection.layout
    return [
        collection.turn(p)
        if p in whole
        else construct(
            Turn, index=layout.indices[p], messages=[history[q] for q in sorted(taken[p])]
        )
        for p in sorted(taken)
    ]


def _summary_body(text: str) -> str:
    lines = text.splitlines()
    if lines and lines[0].startswith("[Context Summary"):
        lines = lines[1:]
    if lines and lines[-1].startswith("[End Context Summary"):
        lines = lines[:-1]
    return "\n".join(lines)


def units_for_summary(
    collection: Collection, candidates: Iterable[Unit], summary_cost: int
) -> list[Unit]:
    """The shortest run of oldest candidates whose replacement by a summary costing at most
    ``summary_cost`` (with the notice, if any) meets the target."""
    chosen: list[Unit] = []
    freed = 0
    inserted = summary_cost + collection.notice_reserve
    for unit in candidates:
        if collection.tokens_before - freed + inserted <= collection.target_tokens and chosen:
            break
        chosen.append(unit)
        freed += unit.tokens
    return chosen
