"""How full a session's context is, read against a policy: what an agent asks before it acts.

The report names the policy's own thresholds, so "85 %" comes with what it means under that
policy (GC would collect now, down to 60 %), and a health level an agent can branch on
without knowing how the thresholds relate.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from gcengine.budget import InstructionBudget
from gcengine.config import GCConfig
from gcengine.running.run import would_collect
from gcengine.session import Session


class HealthLevel(StrEnum):
    """How close the context is to needing a collection, from calm to urgent."""

    OK = "ok"
    """Below the policy's target: nothing to do."""
    ELEVATED = "elevated"
    """Above the target but below the threshold (threshold mode): GC will start later."""
    COLLECT = "collect"
    """GC starts now: at or above the threshold, or above the target in continuous mode."""
    PRESSURE = "pressure"
    """At or above the pressure threshold: a collection may take preservable content too."""
    OVER_LIMIT = "over_limit"
    """More tokens than the window holds: the next request does not fit."""


HEALTH_ORDER: tuple[HealthLevel, ...] = tuple(HealthLevel)
"""The levels from calm to urgent, so callers can compare them."""


class TierUsage(BaseModel):
    """Tokens by how willing the collector is to drop them."""

    locked: int = Field(description="never collected")
    preservable: int = Field(description="collected only under pressure")
    eligible: int = Field(description="what a collection may take")


class SourceUsage(BaseModel):
    """One source of the prompt (system, plugin, enrichment, conversation)."""

    source: str
    tokens: int
    percent: float = Field(description="share of the context window")
    policy: str = Field(description="the source's GC policy: locked, preservable, ephemeral...")
    tiers: TierUsage


class PolicyThresholds(BaseModel):
    """The settings of the policy the report was read against."""

    strategy: str
    threshold_percent: float
    target_percent: float
    pressure_percent: float | None = Field(description="None in continuous mode")
    continuous_mode: bool
    preserve_recent_turns: int
    max_turns: int | None
    auto_trigger: bool


class UsageReport(BaseModel):
    """Usage against the window, by source and tier, with the policy's reading of it."""

    session: str = Field(description="the session's own id, as its file names it")
    model: str | None
    context_limit: int
    context_limit_origin: str = Field(
        description="where the window came from: the file, the model's known limit, inferred "
        "from what the file shows, an override, a default"
    )
    context_limit_source: str | None = Field(
        default=None, description="why the window is what it is, in words"
    )
    total_tokens: int
    percent_used: float
    tokens_remaining: int
    turns: int
    messages: int
    tiers: TierUsage
    sources: list[SourceUsage]
    policy: PolicyThresholds
    health: HealthLevel
    gc_would_start: bool = Field(description="whether the policy's GC would start by itself now")
    trigger: str | None = Field(description="why it would start: threshold, continuous, turn_limit")
    tokens_over_target: int = Field(description="tokens to free to get down to the target")
    warnings: list[str]

    def summary(self) -> str:
        """One or two sentences for the agent reading the tool's text answer."""
        head = (
            f"{self.percent_used:.1f}% of the {self.context_limit:,}-token window used "
            f"({self.total_tokens:,} tokens, {self.tokens_remaining:,} left): {self.health.value}."
        )
        return " ".join([head, *self.warnings[:1]])


def _tiers(locked: int, preservable: int, eligible: int) -> TierUsage:
    return TierUsage(locked=locked, preservable=preservable, eligible=eligible)


def health_level(percent: float, total: int, context_limit: int, config: GCConfig) -> HealthLevel:
    """The level of ``percent`` of the window under ``config``'s thresholds."""
    if total > context_limit:
        return HealthLevel.OVER_LIMIT
    if config.pressure_percent is not None and percent >= config.pressure_percent:
        return HealthLevel.PRESSURE
    if config.continuous_mode:
        return HealthLevel.COLLECT if percent > config.target_percent else HealthLevel.OK
    if percent >= config.threshold_percent:
        return HealthLevel.COLLECT
    return HealthLevel.ELEVATED if percent > config.target_percent else HealthLevel.OK


def _percent(value: float) -> str:
    return f"{value:g}%"


def _warnings(
    budget: InstructionBudget, config: GCConfig, level: HealthLevel, turns: int
) -> list[str]:
    """The sentences an agent should read, most urgent first."""
    limit = budget.context_limit
    total = budget.total_tokens()
    percent = budget.percent_of(total)
    target_tokens = int(limit * config.target_percent / 100)
    found: list[str] = []
    if level is HealthLevel.OVER_LIMIT:
        found.append(
            f"The context holds {total:,} tokens, {total - limit:,} more than the "
            f"{limit:,}-token window: the next request does not fit."
        )
    if level is HealthLevel.PRESSURE or (
        level is HealthLevel.OVER_LIMIT and config.pressure_percent is not None
    ):
        found.append(
            f"Usage is {percent:.1f}%, at or above the policy's "
            f"{_percent(config.pressure_percent or 0)} pressure threshold: a collection may "
            "take preservable content too."
        )
    if level is HealthLevel.COLLECT and config.continuous_mode:
        found.append(
            f"Usage is {percent:.1f}%, above the policy's {_percent(config.target_percent)} "
            "target: in continuous mode GC collects after every turn until usage is under it."
        )
    elif level in (HealthLevel.COLLECT, HealthLevel.PRESSURE):
        found.append(
            f"Usage is {percent:.1f}%, at or above the policy's "
            f"{_percent(config.threshold_percent)} threshold: GC would collect now, down to "
            f"its {_percent(config.target_percent)} target (about "
            f"{max(0, total - target_tokens):,} tokens)."
        )
    elif level is HealthLevel.ELEVATED:
        threshold_tokens = int(limit * config.threshold_percent / 100)
        found.append(
            f"Usage is {percent:.1f}%, above the policy's {_percent(config.target_percent)} "
            f"target; GC starts at {_percent(config.threshold_percent)}, "
            f"{max(0, threshold_tokens - total):,} tokens from now."
        )
    if config.max_turns is not None and turns >= config.max_turns:
        found.append(
            f"The session has {turns:,} turns, at or above the policy's max_turns of "
            f"{config.max_turns:,}: GC would collect whatever the usage."
        )
    locked = budget.locked_tokens()
    if locked > target_tokens:
        found.append(
            f"Locked content alone is {budget.percent_of(locked):.1f}% of the window, above "
            f"the {_percent(config.target_percent)} target: no collection can reach it."
        )
    if not config.auto_trigger and level is not HealthLevel.OK:
        found.append("The policy's auto_trigger is off: GC runs only when asked to.")
    return found


def usage_report(session: Session, config: GCConfig) -> UsageReport:
    """Read ``session``'s usage against ``config``: never changes either."""
    budget = session.budget
    total = budget.total_tokens()
    percent = budget.percent_of(total)
    turns = len(session.turns())
    level = health_level(percent, total, budget.context_limit, config)
    starts, reason = would_collect(session, config)
    return UsageReport(
        session=session.session_id,
        model=session.model,
        context_limit=budget.context_limit,
        context_limit_origin=session.context_limit_origin.value,
        context_limit_source=session.context_limit_source,
        total_tokens=total,
        percent_used=round(percent, 2),
        tokens_remaining=budget.available_tokens(),
        turns=turns,
        messages=len(session.history),
        tiers=_tiers(
            budget.locked_tokens(), budget.preservable_tokens(), budget.gc_eligible_tokens()
        ),
        sources=[
            SourceUsage(
                source=source.value,
                tokens=entry.total_tokens(),
                percent=round(budget.percent_of(entry.total_tokens()), 2),
                policy=entry.effective_gc_policy().value,
                tiers=_tiers(
                    entry.locked_tokens(), entry.preservable_tokens(), entry.gc_eligible_tokens()
                ),
            )
            for source, entry in budget.context_entries()
        ],
        policy=PolicyThresholds(
            strategy=config.plugin,
            threshold_percent=config.threshold_percent,
            target_percent=config.target_percent,
            pressure_percent=config.pressure_percent,
            continuous_mode=config.continuous_mode,
            preserve_recent_turns=config.preserve_recent_turns,
            max_turns=config.max_turns,
            auto_trigger=config.auto_trigger,
        ),
        health=level,
        gc_would_start=starts,
        trigger=reason.value if reason is not None else None,
        tokens_over_target=max(0, total - int(budget.context_limit * config.target_percent / 100)),
        warnings=_warnings(budget, config, level, turns),
    )
