"""What a whole session cost, from every model call it recorded, and the same session replayed
under a policy.

A session the agent compacted holds several contexts one after another; its history is only
the last. Its cost is every recorded call of every context, each priced as the model that
answered it (a session can switch model), with the agent's own compaction call (Claude Code
writes it as the ``acompact`` sub-agent) and its other sub-agents' calls counted apart, so a
reader sees what compacting itself cost.

A policy is weighed against it over the same messages: ``uncompacted`` puts the contexts back
together (every message the agent ever held, in order, without its compaction summaries) and
the policy is replayed on that call by call, priced with the prompt-cache model of
``gcengine.quality.prompt_cache``. The policy's replay sends the same answers, so its output is
taken to cost what the agent's did.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field, computed_field

from gcengine.quality.prompt_cache import ModelPrice, price_for_model
from gcengine.session import RecordedUsage, Session, rebuild_budget
from gcengine.tokens import counter_by_name

Caller = str  # "agent", "compaction" (the agent's own compaction call) or "sub-agent"


class CallCost(BaseModel):
    """One recorded model call and what it cost (None when its model has no price)."""

    number: int = Field(ge=1, description="its place among the calls of its caller, from 1")
    caller: Caller
    agent_id: str | None = Field(default=None, description="the sub-agent that made it")
    model: str | None = None
    uncached_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    dollars: float | None = None


class CostTotals(BaseModel):
    """Calls and tokens of some calls, and their dollars (None when any was unpriced)."""

    calls: int = 0
    uncached_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    dollars: float | None = 0.0


class SessionCost(BaseModel):
    """Every recorded call of a session priced, and the totals per caller."""

    contexts: int = Field(description="the contexts the agent held (its compactions plus one)")
    calls: list[CallCost] = Field(default_factory=list)
    unpriced_models: list[str] = Field(default_factory=list)

    def totals(self, *callers: Caller) -> CostTotals:
        """The totals of the calls made by ``callers`` (every call when none is named)."""
        chosen = [c for c in self.calls if not callers or c.caller in callers]
        totals = CostTotals(calls=len(chosen))
        for call in chosen:
            totals.uncached_tokens += call.uncached_tokens
            totals.cache_read_tokens += call.cache_read_tokens
            totals.cache_write_tokens += call.cache_write_tokens
            totals.output_tokens += call.output_tokens
            if call.dollars is None or totals.dollars is None:
                totals.dollars = None
            else:
                totals.dollars += call.dollars
        return totals

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> CostTotals:
        return self.totals()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def agent(self) -> CostTotals:
        return self.totals("agent")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def compaction(self) -> CostTotals:
        return self.totals("compaction")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def subagents(self) -> CostTotals:
        return self.totals("sub-agent")


def call_dollars(
    uncached: int, read: int, written: int, output: int, price: ModelPrice
) -> float | None:
    """A call's cost under ``price``; None when it produced output the table has no price for."""
    if output and price.output_per_mtok is None:
        return None
    return (
        uncached * price.input_per_mtok
        + read * price.cache_read_per_mtok
        + written * price.cache_write_per_mtok
        + output * (price.output_per_mtok or 0.0)
    ) / 1_000_000


def _call_cost(
    number: int,
    usage: RecordedUsage,
    caller: Caller,
    agent_id: str | None,
    model: str | None,
    table: Sequence[ModelPrice],
) -> CallCost:
    read = usage.cache_read_tokens or 0
    written = usage.cache_creation_tokens or 0
    uncached = max(usage.prompt_tokens - read - written, 0)
    output = usage.output_tokens or 0
    price = price_for_model(model, table)
    return CallCost(
        number=number,
        caller=caller,
        agent_id=agent_id,
        model=model,
        uncached_tokens=uncached,
        cache_read_tokens=read,
        cache_write_tokens=written,
        output_tokens=output,
        dollars=call_dollars(uncached, read, written, output, price) if price else None,
    )


def recorded_cost(
    session: Session, table: Sequence[ModelPrice], model: str | None = None
) -> SessionCost:
    """Every call ``session`` recorded (all its contexts and sub-agents) priced from ``table``:
    each as the model the file names for it, else ``model``, else the session's model."""
    fallback = model or session.model
    calls = [
        _call_cost(n, usage, "agent", None, model or usage.model or fallback, table)
        for n, usage in enumerate(session.recorded_usage, start=1)
    ]
    for subagent in session.subagents:
        caller = "compaction" if subagent.is_compaction else "sub-agent"
        calls.extend(
            _call_cost(n, usage, caller, subagent.agent_id, model or usage.model or fallback, table)
            for n, usage in enumerate(subagent.recorded_usage, start=1)
        )
    unpriced = sorted({c.model or "(unnamed)" for c in calls if c.dollars is None})
    return SessionCost(contexts=len(session.compactions) + 1, calls=calls, unpriced_models=unpriced)


def uncompacted(session: Session) -> Session:
    """``session`` as if the agent had never compacted: every message any of its contexts held,
    in order, without the compaction summaries, with every call it recorded; the budget counted
    with the session's counter. A policy replayed on it runs over the whole session."""
    if not session.compactions:
        return session
    summaries = {c.summary_message_id for c in session.compactions if c.summary_message_id}
    seen: set[str] = set()
    history = []
    for message in [m for c in session.compactions for m in c.replaced] + session.history:
        if message.message_id in summaries or message.message_id in seen:
            continue
        seen.add(message.message_id)
        history.append(message)
    overheads = [o for o in session.context_overheads if o is not None]
    whole = session.model_copy(
        update={
            "history": history,
            "compactions": [],
            "unseen_overhead": overheads[0] if overheads else session.unseen_overhead,
            "context_overheads": overheads[:1],
            "interrupted_turn": None,
        }
    )
    whole.budget = rebuild_budget(whole, counter_by_name(session.token_counter))
    return whole
