"""A run's pages: its figures before and after, the removal ledger (a stored run's, or a
preview's list: the rows a table shows, the records the API and the exports give), the
summary chain, the diff of its turns, and what it did in sentences true for its figures: a
run that removed nothing never reads as one that removed content.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gcengine
from jaato_web.dashboard.presenters.policies import Left, OverLimit, kept_reason, over_limit
from jaato_web.dashboard.presenters.sessions import TurnView, message_views
from jaato_web.dashboard.presenters.words import (
    counted,
    percent_text,
    setting_text,
    turn_number_of,
    turn_ranges,
)


@dataclass(frozen=True)
class FigureRow:
    label: str
    before: str
    after: str


def _number(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _percent(value: float | None) -> str:
    return "–" if value is None else percent_text(value)


def run_figures(run: Any, session: Any) -> list[FigureRow]:
    """A stored run next to its session: tokens, share of the limit, turns, before and after."""
    return [
        FigureRow("Tokens", _number(run.tokens_before), _number(run.tokens_after)),
        FigureRow(
            "Share of the context limit",
            _percent(run.percent(run.tokens_before)),
            _percent(run.percent(run.tokens_after)),
        ),
        FigureRow("Turns", _number(session.turn_count), _number(run.turns_after)),
    ]


LEDGER_COLUMNS = [
    "seq",
    "reason",
    "source",
    "child_key",
    # The turn as the session page numbers it (from 1), then its stable index (from 0).
    "turn_number",
    "turn_index",
    "tokens_freed",
    "message_ids",
    # A reachability run's: whether anything kept refers to the item, its score, why it went,
    # and whether it was stashed or deleted (empty for other strategies).
    "reachable",
    "score",
    "explanation",
    "action",
]


def ledger_records(removals: Iterable[Any]) -> list[dict[str, Any]]:
    """The removal ledger as plain records (stored ``Removal`` rows in, JSON-ready dicts out)."""
    return [
        {
            "seq": r.seq,
            "reason": r.reason,
            "source": r.source,
            "child_key": r.child_key,
            "turn_number": turn_number_of(r.turn_index),
            "turn_index": r.turn_index,
            "tokens_freed": r.tokens_freed,
            "message_ids": list(r.message_ids),
            "reachable": r.reachable,
            "score": r.score,
            "explanation": r.explanation,
            "action": r.action,
        }
        for r in removals
    ]


def ledger_csv(records: list[dict[str, Any]]) -> str:
    """CSV for spreadsheets: message ids joined with spaces in one column."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(LEDGER_COLUMNS)
    for record in records:
        writer.writerow(
            [" ".join(record[c]) if c == "message_ids" else record[c] for c in LEDGER_COLUMNS]
        )
    return buffer.getvalue()


# Message ids are long; a row shows the first few and says how many more there are.
IDS_SHOWN = 3


@dataclass(frozen=True)
class LedgerRow:
    seq: int
    reason: str
    source: str
    child_key: str
    turn_index: int | None
    tokens_freed: int
    message_ids: list[str]
    more_ids: int
    verdict: gcengine.RemovalVerdict | None = None


def ledger_rows(items: Sequence[gcengine.GCRemovalItem], limit: int) -> list[LedgerRow]:
    """The first ``limit`` items of a removal list, ready for a table."""
    return [
        LedgerRow(
            seq=seq,
            reason=str(item.reason),
            source=item.source.value,
            child_key=item.child_key or "",
            turn_index=item.turn_index,
            tokens_freed=item.tokens_freed,
            message_ids=list(item.message_ids[:IDS_SHOWN]),
            more_ids=max(len(item.message_ids) - IDS_SHOWN, 0),
            verdict=item.verdict,
        )
        for seq, item in enumerate(items[:limit])
    ]


def ledger_record(item: gcengine.GCRemovalItem) -> dict[str, Any]:
    """One removal item as the API answers it."""
    return {
        "reason": str(item.reason),
        "source": item.source.value,
        "child_key": item.child_key,
        "turn_number": item.turn_number,
        "turn_index": item.turn_index,
        "tokens_freed": item.tokens_freed,
        "message_ids": list(item.message_ids),
        "reachable": item.verdict.reachable if item.verdict else None,
        "score": item.verdict.score if item.verdict else None,
        "explanation": item.verdict.sentence if item.verdict else "",
        "action": item.verdict.action if item.verdict else "",
    }


@dataclass(frozen=True)
class SummaryView:
    number: int | None
    message_id: str
    covers: str
    covers_count: int
    covers_summary: str
    summarizer: str
    tokens: int
    text: str
    written_by_run: bool


def summary_views(summaries: Iterable[Any]) -> list[SummaryView]:
    """Stored ``Summary`` rows: which turns and which earlier summary each one stands for."""
    views = []
    for s in summaries:
        earlier = s.covers_summary
        if isinstance(earlier, int):
            earlier_text = f"summary {earlier}"
        elif earlier:
            earlier_text = f"summary message {earlier}"
        else:
            earlier_text = ""
        views.append(
            SummaryView(
                number=s.number,
                message_id=s.message_id,
                # Stable turn indices, named in JAATO's numbering as every page names turns.
                covers=turn_ranges(
                    gcengine.turn_number(i) for i in s.covers_turns if i is not None
                ),
                covers_count=len(s.covers_turns),
                covers_summary=earlier_text,
                summarizer=s.summarizer,
                tokens=s.tokens,
                text=s.text,
                written_by_run=s.written_by_run,
            )
        )
    return views


def diff_views(rows: Iterable[Any]) -> list[TurnView]:
    """``selectors.DiffRow``s: each turn before the run, with what went and what came in."""
    views = []
    for row in rows:
        turn = row.turn
        views.append(
            TurnView(
                position=turn.position,
                turn_index=turn.turn_index,
                kind=turn.kind,
                tokens=turn.tokens,
                policy=turn.policy,
                pinned=False,
                tool_calls=turn.tool_calls,
                preview=turn.preview,
                messages=message_views(turn.messages, removed_ids=row.removed_ids),
                state=row.state,
                summaries_before=summary_views(row.summaries_before),
            )
        )
    return views


def run_left(run: Any) -> Left | None:
    """A stored run's ``Left``; None for runs stored before these figures were kept."""
    if run.locked_after is None:
        return None
    return Left(run.locked_after, run.preservable_after or 0, run.eligible_after or 0)


@dataclass(frozen=True)
class RunStory:
    """What a finished run did, in sentences for its page."""

    outcome: str
    nothing: str
    summaries_none: str
    over_limit: OverLimit | None


def summary_call_text(call: Mapping[str, Any]) -> str:
    """What the provider summarizer's call did (``gcengine.SummaryCall``): who wrote the
    summary, what the call cost, or why the extractive summarizer wrote it instead."""
    reason = call.get("fallback_reason")
    if reason:
        return (
            f"The provider did not write the summary ({str(reason).rstrip('.')}), so the "
            f"{call.get('written_by')} summarizer did."
        )
    tokens_in, tokens_out = call.get("input_tokens"), call.get("output_tokens")
    used = (
        f"{tokens_in:,} tokens in and {tokens_out or 0:,} out"
        if isinstance(tokens_in, int)
        else "tokens not reported"
    )
    dollars = call.get("dollars")
    cost = f"${dollars:,.4f}" if isinstance(dollars, int | float) else "no price for the model"
    return (
        f"{call.get('model')} wrote the summary through the {call.get('protocol')} API: "
        f"{used}, {cost}."
    )


def run_story(run: Any, summaries: Sequence[SummaryView]) -> RunStory:
    """``summaries``: the run's summary chain (the one it wrote, if any, is told)."""
    limit = run.context_limit or 0
    tokens_before, tokens_after = run.tokens_before or 0, run.tokens_after or 0
    items = run.items_collected or 0

    def percent(tokens: int) -> float:
        return tokens / limit * 100 if limit else 0.0

    target = float(run.config.get("target_percent") or 0)
    before, after = percent(tokens_before), percent(tokens_after)
    details = (run.result or {}).get("details") or {}
    reason = kept_reason(run.plugin, run.config, details, run_left(run))
    over = over_limit(tokens_after=tokens_after, limit=limit, reason=reason)
    told = "" if over is not None else f" {reason}"
    if items == 0:
        if before <= target:
            nothing = (
                "This run removed nothing: usage was already at or below the policy's "
                f"{setting_text(target)} target ({percent_text(before)} of the window)."
            )
        else:
            nothing = (
                f"This run removed nothing: usage was {percent_text(before)} of the window, "
                f"above the {setting_text(target)} target, and all of it is what this policy "
                f"may not remove.{told}"
            )
        engine_said = str(details.get("message") or "")
        if engine_said:
            nothing += f" The strategy said: {engine_said.rstrip('.')}."
        return RunStory(
            outcome=nothing,
            nothing=nothing,
            summaries_none="No summaries: this run removed nothing, and the session held none.",
            over_limit=over,
        )
    freed = tokens_before - tokens_after
    change = (
        f"freed {counted(freed, 'token')}" if freed >= 0 else f"added {counted(-freed, 'token')}"
    )
    outcome = (
        f"This run removed {counted(items, 'item')} and {change}: usage went from "
        f"{percent_text(before)} to {percent_text(after)} of the window, "
    )
    if after <= target:
        outcome += f"at or below the policy's {setting_text(target)} target."
    else:
        outcome += f"still above the policy's {setting_text(target)} target.{told}"
    written = next((s for s in summaries if s.written_by_run), None)
    if written is not None:
        outcome += (
            f" It summarized {counted(written.covers_count, 'turn')} into summary "
            f"{written.number} ({counted(written.tokens, 'token')})."
        )
    call = details.get("summary_call")
    if isinstance(call, dict):
        outcome += f" {summary_call_text(call)}"
    skipped = str(details.get("summary_skipped") or "")
    if skipped:
        # The engine writes no summary that would not be smaller than what it replaces.
        outcome += f" It wrote no summary ({skipped.rstrip('.')}), so those turns were dropped."
    middle_kept = str(details.get("middle_kept") or "")
    if middle_kept:
        outcome += f" It wrote no summary: {middle_kept.rstrip('.')}."
    return RunStory(
        outcome=outcome,
        nothing="",
        summaries_none=(
            "No summaries: this run removed content without summarizing it, "
            "and the session held none."
        ),
        over_limit=over,
    )
