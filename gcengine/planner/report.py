"""A plan as text for a terminal: the budget, the sections, what is sent and what is left out
with the reason, a turn's members on one line."""

from __future__ import annotations

from collections.abc import Sequence

from gcengine.planner.model import ContextPlan, ExcludedItem, Section


def plan_report(plan: ContextPlan, *, rows: int = 20) -> list[str]:
    """The plan in lines; at most ``rows`` lines of left-out units (turns, pins, parts)."""
    sources = plan.budget_sources
    capped = sources.prompt_budget == "max_prompt_tokens"
    lines = [
        plan.status_line,
        f"budget    window {plan.model_context_len:,} ({sources.context_length}) "
        f"- completion {plan.max_completion_tokens:,} ({sources.max_completion_tokens}) "
        f"- safety {plan.safety_buffer:,} = prompt budget {plan.prompt_budget:,}"
        + (" (the endpoint's prompt limit)" if capped else ""),
        f"required  {plan.required_tokens:,} tokens"
        + (f"; over budget by {plan.overflow_tokens:,}" if plan.over_budget else ""),
    ]
    for section in Section:
        usage = getattr(plan.sections, section.value)
        lines.append(
            f"{section.value:<14} share {usage.share:>3}%  allocated {usage.allocated:>10,}  "
            f"used {usage.used:>10,}  (from other sections {usage.spill_in:,})"
        )
    lines.append(
        f"included  {len(plan.included):,} items, {plan.estimated_tokens_total:,} tokens: "
        + _tally(plan.telemetry.included_by_reason)
    )
    lines.append(
        f"excluded  {len(plan.excluded):,} items, {plan.telemetry.excluded_tokens:,} tokens"
        + (f": {_tally(plan.telemetry.excluded_by_reason)}" if plan.excluded else "")
    )
    if plan.review_requests:
        lines.append(f"review    {', '.join(plan.review_requests)} (TTL ran out; re-pin or drop)")
    units = _units(plan.excluded)
    for unit in units[:rows]:
        first = unit[0]
        tokens = sum(item.tokens for item in unit)
        what = first.atom_id if len(unit) > 1 else (first.label or first.id)
        count = f"{len(unit)} items" if len(unit) > 1 else "1 item"
        lines.append(f"  - {what:<24} {count:>9} {tokens:>9,}  {first.code}: {first.explanation}")
    if len(units) > rows:
        lines.append(f"  … {len(units) - rows:,} more left out")
    lines.append(f"plan id   {plan.plan_id}")
    return lines


def _tally(counts: dict[str, int]) -> str:
    return ", ".join(f"{code} {count:,}" for code, count in counts.items())


def _units(excluded: Sequence[ExcludedItem]) -> list[list[ExcludedItem]]:
    """Excluded items grouped by what they were decided with, newest first."""
    groups: dict[tuple[str, str], list[ExcludedItem]] = {}
    for item in excluded:
        groups.setdefault((item.atom_id, item.code), []).append(item)
    return sorted(groups.values(), key=lambda unit: -unit[-1].seq)
