"""Compaction quality on the pages: anchor retention (a score, a row per class against the
project's gates, and sentences for invented anchors, compression and recency), the
prompt-cache cost of a replay beside the same replay without GC, and the ranking of policies
on the compare page.

A score is "anchor retention", never what the agent remembers: each sentence says what was
counted (anchors still in view), and the pages link to the limits in docs/engine.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gcengine
from jaato_web.dashboard import storage
from jaato_web.dashboard.presenters.words import MISSING_SHARE, counted, dollars, listed, share

CLASS_LABELS = {info.anchor_class: info.label for info in gcengine.ANCHOR_CLASSES}


@dataclass(frozen=True)
class RetentionRow:
    anchor_class: str
    label: str
    weight: int
    anchors: int
    retained: int
    recall: float | None
    minimum: float | None
    under_gate: bool
    lost: list[str]


@dataclass(frozen=True)
class RetentionView:
    """A score as a page shows it: one sentence for the score, a row per class with its gate,
    and sentences for invented anchors, compression and recency."""

    score: float | None
    sentence: str
    rows: list[RetentionRow]
    gate_failures: list[str]
    invented: str
    compression: str
    recency: str
    unscorable: bool

    @property
    def under_gate(self) -> bool:
        return bool(self.gate_failures)


def gates_in_words(gates: Mapping[gcengine.AnchorClass, float]) -> str:
    """``decisions and constraints at 95.0 % and open work at 95.0 %``; ``no class`` when
    there is no gate."""
    parts = [f"{CLASS_LABELS[cls]} at {share(minimum)}" for cls, minimum in gates.items()]
    return listed(parts) if parts else "no class"


def _gate_failure(failure: gcengine.GateFailure) -> str:
    return (
        f"{CLASS_LABELS[failure.anchor_class]} {share(failure.recall)}, "
        f"under the gate of {share(failure.minimum)}"
    )


def retention_view(
    retention: gcengine.AnchorRetention | None,
    gates: Mapping[gcengine.AnchorClass, float],
    *,
    what: str = "it",
) -> RetentionView | None:
    """``what`` names what took content out of view ("the run", "these collections")."""
    if retention is None:
        return None
    failures = gcengine.gate_failures(retention, gates)
    rows = [
        RetentionRow(
            anchor_class=part.anchor_class.value,
            label=CLASS_LABELS[part.anchor_class],
            weight=part.weight,
            anchors=part.anchors,
            retained=part.retained,
            recall=part.recall,
            minimum=gates.get(part.anchor_class),
            under_gate=any(f.anchor_class is part.anchor_class for f in failures),
            lost=part.lost,
        )
        for part in retention.classes
    ]
    if retention.unscorable is not None:
        sentence = f"No anchor retention for {what}: {retention.unscorable}."
    elif not retention.anchors:
        sentence = "The context before held no anchors, so there is nothing to score."
    else:
        kept = sum(part.retained for part in retention.classes)
        at_size = (
            f", its context cut to {counted(retention.size, 'token')} oldest first to compare "
            "at equal size"
            if retention.size is not None
            else ""
        )
        # Several compactions pooled (a replay's): each context's anchors and tokens are
        # counted once per compaction, so the figures are sums over those contexts.
        pooled = retention.compactions > 1
        contexts = (
            f"the contexts before {what} ({retention.compactions:,}, summed)"
            if pooled
            else f"the context before {what}"
        )
        sentence = (
            f"Anchor retention {share(retention.score)}: {kept:,} of the "
            f"{counted(retention.anchors, 'anchor')} in {contexts} are still "
            f"in view after {'them' if pooled else 'it'}, weighted by class, in "
            f"{counted(retention.tokens_after, 'token')} (of "
            f"{retention.tokens_before:,} before){at_size}."
        )
    return RetentionView(
        score=retention.score,
        sentence=sentence,
        rows=rows,
        gate_failures=[_gate_failure(f) for f in failures],
        invented=_invented_sentence(retention.invented),
        compression=_compression_sentence(retention),
        recency=_recency_sentence(retention.recency),
        unscorable=retention.unscorable is not None,
    )


def _invented_sentence(invented: gcengine.InventedAnchors) -> str:
    if not invented.checked:
        return "No summary came in with anchors to check against the session."
    verb = "appears" if invented.invented == 1 else "appear"
    return (
        f"{invented.invented:,} of the {counted(invented.checked, 'literal anchor')} in the "
        f"summaries that came in {verb} nowhere in the session ({share(invented.rate)})"
        + (f": {', '.join(invented.examples[:5])}." if invented.examples else ".")
    )


def _compression_sentence(retention: gcengine.AnchorRetention) -> str:
    """Messages only: beside a run's figures, which count what else it freed (tool schemas,
    plugin instructions), the sentence says what it is about."""
    if not retention.removed_tokens:
        return ""
    out = (
        f"the {counted(retention.removed_messages, 'message')} "
        f"({counted(retention.removed_tokens, 'token')}) that went"
    )
    if not retention.replacement_tokens:
        return f"Nothing came in for {out}."
    return (
        f"{counted(retention.replacement_tokens, 'token')} came in for {out} "
        f"(a ratio of {retention.compression_ratio:.3f})."
    )


def _recency_sentence(recency: gcengine.RecencyRetention) -> str:
    if recency.oldest is None and recency.newest is None:
        return ""
    return (
        f"Anchors last mentioned in the oldest third of the context before: "
        f"{share(recency.oldest)} "
        f"still in view; in the newest third: {share(recency.newest)}."
    )


def run_retention(run: Any, gates: Mapping[gcengine.AnchorClass, float]) -> RetentionView | None:
    """A finished run's score (None for a run stored before runs were scored)."""
    return retention_view(storage.retention_read(run.retention), gates, what="the run")


def replay_retention(series: Mapping[str, Any]) -> gcengine.AnchorRetention | None:
    """Every collection of a replay pooled, each anchor counted once; None for a series
    stored before collections were scored, or scored only on what went (no tokens before)."""
    scored = [e["retention"] for e in series["events"] if e.get("retention")]
    if not any("retention" in e for e in series["events"]):
        return None
    if any("tokens_before" not in record for record in scored):
        return None
    return gcengine.pooled_retention(
        gcengine.AnchorRetention.model_validate(record) for record in scored
    )


def replay_gate_failures(
    series: Mapping[str, Any], gates: Mapping[gcengine.AnchorClass, float]
) -> int:
    """How many of a replay's collections leave some class under the project's gate."""
    scores = (storage.retention_read(e.get("retention")) for e in series["events"])
    return sum(1 for score in scores if score is not None and gcengine.gate_failures(score, gates))


@dataclass(frozen=True)
class CostRow:
    label: str
    policy: str
    without_gc: str


@dataclass(frozen=True)
class CostView:
    """A replay's prompt-cache figures beside the same replay without GC, priced when the
    project's table has the session's model."""

    model: str
    price: gcengine.ModelPrice | None
    terms: str
    policy: gcengine.PromptCacheUsage
    without_gc: gcengine.PromptCacheUsage
    dollars: float | None
    dollars_without_gc: float | None
    rows: list[CostRow]
    sentences: list[str]


def _against(value: float, baseline: float, more: str, less: str) -> str:
    """How ``value`` compares with what it would be without GC: ``42.2 % more than``,
    ``59.1 % fewer than``, ``the same as``."""
    if value == baseline or not baseline:
        return "the same as" if value == baseline else f"{more} than"
    difference = abs(value - baseline) / baseline * 100
    return f"{difference:.1f} % {more if value > baseline else less} than"


def per_million(value: float) -> str:
    """A price per million tokens as a price list writes it: ``$3``, ``$3.75``, ``$0.125``."""
    return f"${value:,.4f}".rstrip("0").rstrip(".")


def price_terms(price: gcengine.ModelPrice) -> str:
    """``$3 a million input tokens, $3.75 to write to the cache and $0.3 to read from it``."""
    terms = (
        f"{per_million(price.input_per_mtok)} a million input tokens, "
        f"{per_million(price.cache_write_per_mtok)} to write to the cache and "
        f"{per_million(price.cache_read_per_mtok)} to read from it"
    )
    if price.min_cacheable_tokens:
        terms += f", nothing cached under {counted(price.min_cacheable_tokens, 'token')}"
    return terms


CALLERS = (
    ("agent", "The agent"),
    ("compaction", "Its compaction call"),
    ("sub-agent", "Its sub-agents"),
)


def session_cost_rows(
    groups: Sequence[Sequence[Any]], prices: Sequence[gcengine.ModelPrice]
) -> list[dict[str, Any]]:
    """What the session cost as recorded (``storage.cost_groups``: tokens per caller and
    model), priced with ``prices``: a row per caller that made calls, then the total; dollars
    None where a model has no price."""
    rows: list[dict[str, Any]] = []
    total: dict[str, Any] = {"label": "Total", "calls": 0, "tokens": 0, "output": 0, "dollars": 0.0}
    for caller, label in CALLERS:
        chosen = [g for g in groups if g[0] == caller]
        if not chosen:
            continue
        row: dict[str, Any] = {"label": label, "calls": 0, "tokens": 0, "output": 0, "dollars": 0.0}
        for _, model, calls, uncached, read, written, output in chosen:
            price = gcengine.price_for_model(model, prices)
            dollars = (
                gcengine.call_dollars(uncached, read, written, output, price) if price else None
            )
            for target in (row, total):
                target["calls"] += calls
                target["tokens"] += uncached + read + written
                target["output"] += output
                if dollars is None or target["dollars"] is None:
                    target["dollars"] = None
                else:
                    target["dollars"] += dollars
        rows.append(row)
    return [*rows, total] if rows else []


def cost_view(
    series: Mapping[str, Any], prices: Sequence[gcengine.ModelPrice], model: str
) -> CostView | None:
    """None for a series stored before replays recorded their requests."""
    if "requests" not in series:
        return None
    price = gcengine.price_for_model(model, prices)
    minimum = price.min_cacheable_tokens if price is not None else 0
    requests = storage.requests_read(series["requests"])
    baseline = storage.requests_read(series["requests_without_gc"])
    policy = gcengine.prompt_cache_usage(requests, minimum)
    without = gcengine.prompt_cache_usage(baseline, minimum)
    cost = gcengine.cache_cost(requests, price).dollars if price else None
    base_cost = gcengine.cache_cost(baseline, price).dollars if price else None
    sent = _against(policy.tokens_sent, without.tokens_sent, "more", "fewer")
    sentences = [
        f"Over the replay the agent sends {counted(policy.requests, 'request')} of "
        f"{counted(policy.tokens_sent, 'token')} in all, {sent} without GC "
        f"({without.tokens_sent:,})."
    ]
    if price is None or cost is None or base_cost is None:
        sentences.append(
            f"No entry of the project's price table matches the model "
            f"{model or '(unknown)'}, so the cost is not worked out."
        )
    else:
        sentences.append(
            f"Priced as {price.label or price.model}, with prompt caching it costs "
            f"{dollars(cost)}, {_against(cost, base_cost, 'more', 'less')} without GC "
            f"({dollars(base_cost)})."
        )
        if policy.cache_write_tokens > without.cache_write_tokens:
            sentences.append(
                f"Its collections rewrite the prompt, so {policy.cache_write_tokens:,} tokens "
                f"are written to the cache again, against {without.cache_write_tokens:,} "
                "without GC."
            )
    rows = [
        CostRow("Requests", f"{policy.requests:,}", f"{without.requests:,}"),
        CostRow("Tokens sent", f"{policy.tokens_sent:,}", f"{without.tokens_sent:,}"),
        CostRow(
            "Read from the cache", f"{policy.cache_read_tokens:,}", f"{without.cache_read_tokens:,}"
        ),
        CostRow(
            "Written to the cache",
            f"{policy.cache_write_tokens:,}",
            f"{without.cache_write_tokens:,}",
        ),
        CostRow("Uncached", f"{policy.uncached_tokens:,}", f"{without.uncached_tokens:,}"),
    ]
    if cost is not None and base_cost is not None:
        rows.append(CostRow("Input cost", dollars(cost), dollars(base_cost)))
    return CostView(
        model=model,
        price=price,
        terms=price_terms(price) if price is not None else "",
        policy=policy,
        without_gc=without,
        dollars=cost,
        dollars_without_gc=base_cost,
        rows=rows,
        sentences=sentences,
    )


@dataclass(frozen=True)
class RankRow:
    """One ranked policy as the compare page shows it."""

    rank: int
    version: Any
    over_window: str
    collections: str
    under_gate: int
    retention: str
    size: str
    recalls: list[str]
    tokens_sent: str
    cost: str


def ranking_rows(ranking: Any) -> tuple[list[str], list[RankRow]]:
    """The ranking's table: the anchor classes the sessions' histories hold (their labels, for
    the header), and a row per policy in rank order, its retention at equal size."""
    pooled = [r.at_equal_size for r in ranking.ranks]
    classes = [c.anchor_class for c in gcengine.pooled_retention(pooled).classes if c.anchors]
    rows = []
    for rank, retention in zip(ranking.ranks, pooled, strict=True):
        fewer = _against(rank.tokens_sent, rank.tokens_without_gc, "more", "fewer")
        sent = f"{rank.tokens_sent:,} ({fewer} without GC)"
        cost = MISSING_SHARE
        if rank.cost is not None and rank.cost_without_gc is not None:
            versus = _against(rank.cost, rank.cost_without_gc, "more", "less")
            cost = f"{dollars(rank.cost)} ({versus} without GC)"
        rows.append(
            RankRow(
                rank=rank.rank,
                version=rank.version,
                over_window=(
                    f"at {counted(rank.over_window_checks, 'check')}"
                    if rank.over_window_checks
                    else "never"
                ),
                collections=f"{rank.collections:,}",
                under_gate=rank.collections_under_gate,
                retention=share(retention.score),
                size=counted(retention.tokens_after, "token"),
                recalls=[share(retention.of_class(c).recall) for c in classes],
                tokens_sent=sent,
                cost=cost,
            )
        )
    return [CLASS_LABELS[c] for c in classes], rows
