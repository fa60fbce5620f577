"""Running a strategy on a session: the new session, the result, the budgets around it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from gcengine._fast import set_fresh
from gcengine.budget import InstructionBudget, InstructionSource, SourceEntry
from gcengine.config import PLUGIN_OPTION_KEYS, GCConfig
from gcengine.conversation import history_layout
from gcengine.gc.stash import with_recorded_leaves
from gcengine.gc.strategy import Strategy
from gcengine.gc.types import GCPlugin, GCRemovalItem, GCResult, GCTriggerReason, context_usage
from gcengine.messages import Message
from gcengine.running.plugins import load_gc_plugin
from gcengine.session import Session, rebuild_budget
from gcengine.session.cut import Cut
from gcengine.strategies.reachability import SEGMENT_IDS
from gcengine.tokens import counter_by_name


class GCOutcome(BaseModel):
    """What a run did. ``session`` is new; the session it started from is untouched."""

    session: Session
    result: GCResult
    budget_before: InstructionBudget
    budget_after: InstructionBudget


def plugin_options(config: GCConfig) -> dict[str, Any]:
    """What a plugin is initialised with: the policy's knobs that hold a value (the keys
    declared as plugin options), then ``plugin_config`` over them."""
    options: dict[str, Any] = {}
    for key in PLUGIN_OPTION_KEYS:
        value = getattr(config, key)
        if value is not None:
            options[key] = value
    return {**options, **config.plugin_config}


def plugin_for(config: GCConfig, plugin: GCPlugin | str | None = None) -> GCPlugin:
    """``plugin`` itself, or the one it names (by default the policy's), initialised with the
    policy's options."""
    if plugin is None or isinstance(plugin, str):
        return load_gc_plugin(plugin or config.plugin, plugin_options(config))
    return plugin


def would_collect(session: Session, config: GCConfig) -> tuple[bool, GCTriggerReason | None]:
    """Whether the policy's GC would start by itself on ``session`` as it stands now, and why.

    This is the check an agent makes after a turn: the strategy's ``should_collect`` on the
    session's usage and number of turns (threshold mode at or above ``threshold_percent``,
    continuous mode above ``target_percent``, ``max_turns`` in both; never without
    ``auto_trigger``). A manual ``run_gc`` collects whether or not this says so.
    """
    usage = context_usage(
        session.budget, turns=len(history_layout(session.history, session.budget))
    )
    return plugin_for(config).should_collect(usage, config)


def without_entries(
    budget: InstructionBudget | None, items: list[GCRemovalItem]
) -> InstructionBudget | None:
    """Budget entries outside the conversation that a run removed, gone from the recording."""
    outside = [i for i in items if i.source is not InstructionSource.CONVERSATION]
    if budget is None or not outside:
        return budget
    # A new value, changed before anyone holds it: only the entries it changes are copied
    # (the recorded conversation, thousands of entries, is shared, as every value is).
    touched = {item.source for item in outside}
    entries = {
        source: entry.model_copy(deep=True) if source in touched else entry
        for source, entry in budget.entries.items()
    }
    budget = budget.model_copy(update={"entries": entries})
    for item in outside:
        entry = budget.get_entry(item.source)
        if entry is None:
            continue
        if item.child_key is None:
            set_fresh(entry, "tokens", 0)
            entry.children.clear()
        else:
            entry.children.pop(item.child_key, None)
    return budget


def recorded_after(
    budget: InstructionBudget | None,
    items: list[GCRemovalItem],
    history: list[Message],
    before: list[Message],
) -> InstructionBudget | None:
    """What the file recorded, as far as it still describes the collected session: without
    the entries the run removed outside the conversation, and with the recorded conversation
    cut by the messages the run took out of the history (``before`` it, not in ``history``):
    a recording of thousands of messages no longer there would outweigh the session itself.
    What the recording names that the history never held (a bare budget snapshot's
    conversation) is not the run's to drop."""
    budget = without_entries(budget, items)
    conversation = budget.get_entry(InstructionSource.CONVERSATION) if budget else None
    if budget is None or conversation is None:
        return budget
    kept = {message.message_id for message in history}
    gone = {message.message_id for message in before} - kept
    if not gone:
        return budget
    pruned = _kept_part(conversation, gone, root=True)
    if pruned is conversation or pruned is None:
        return budget
    entries = {**budget.entries, InstructionSource.CONVERSATION: pruned}
    return budget.model_copy(update={"entries": entries})


def _kept_part(entry: SourceEntry, gone: set[str], *, root: bool = False) -> SourceEntry | None:
    """``entry`` without the leaves naming only messages in ``gone`` (itself when nothing
    goes, None when nothing stays but the root); a container's own figure becomes what it
    still holds."""
    if not entry.children:
        if entry.message_ids and all(i in gone for i in entry.message_ids):
            return None
        return entry
    children: dict[str, SourceEntry] = {}
    changed = False
    for key, child in entry.children.items():
        part = _kept_part(child, gone)
        changed |= part is not child
        if part is not None:
            children[key] = part
    if not changed:
        return entry
    if not children and not root:
        return None
    tokens = sum(child.total_tokens() for child in children.values())
    return entry.model_copy(update={"children": children, "tokens": tokens})


def run_gc(
    session: Session,
    config: GCConfig,
    reason: GCTriggerReason | str = GCTriggerReason.MANUAL,
    plugin: GCPlugin | str | None = None,
) -> GCOutcome:
    """Collect ``session`` under ``config`` with its strategy (or ``plugin``).

    The budget after is rebuilt from the new history with the session's own counter, so it is
    always the budget that history really has; the result's figures are taken from the two
    budgets. A failed collection (a summarizer error, say) returns the session unchanged.
    """
    reason = GCTriggerReason(reason)
    counter = counter_by_name(session.token_counter)
    plugin = plugin_for(config, plugin)
    usage = context_usage(
        session.budget, turns=len(history_layout(session.history, session.budget))
    )
    cut: Cut | None = None  # how the strategy cut the history, if it only took messages
    if isinstance(plugin, Strategy):
        new_history, result, cut = plugin.collect_cut(
            session.history, usage, config, reason, session.budget, counter=counter
        )
    else:
        new_history, result = plugin.collect(session.history, usage, config, reason, session.budget)
    if not result.success or _unchanged(session.history, new_history, result):
        # A failed run, or one that took nothing and wrote nothing: the session as it was, so
        # every figure after it is the one before (nothing is rebuilt that could differ).
        result = result.model_copy(
            update={"tokens_before": usage["total_tokens"], "tokens_after": usage["total_tokens"]}
        )
        return GCOutcome(
            session=session,
            result=_with_target_note(result, session.budget, config),
            budget_before=session.budget,
            budget_after=session.budget,
        )
    # The new session describes itself: what the file recorded about what is gone, the
    # provider's last prompt size and the file's load warnings describe the original.
    new_session = session.model_copy(
        update={
            "history": new_history,
            "recorded_budget": recorded_after(
                session.recorded_budget, result.removal_list, new_history, session.history
            ),
            "recorded_prompt_tokens": None,
            "warnings": [],
        }
    )
    # The messages kept have their figures in the budget before: they are not counted again,
    # and where the strategy says how it cut the history, they are found there by position.
    new_session.budget = rebuild_budget(new_session, counter, reuse=session.budget, cut=cut)
    # The figures the file recorded for stashed messages, and the provider's last prompt
    # size, leave the session's recording; they travel with the stash, so a restore puts them
    # back.
    stash = result.stash and with_recorded_leaves(result.stash, session.recorded_budget).model_copy(
        update={"recorded_prompt_tokens": session.recorded_prompt_tokens}
    )
    result = result.model_copy(
        update={
            "tokens_before": usage["total_tokens"],
            "tokens_after": new_session.budget.total_tokens(),
            "stash": stash,
        }
    )
    return GCOutcome(
        session=new_session,
        result=_with_target_note(result, new_session.budget, config),
        budget_before=session.budget,
        budget_after=new_session.budget,
    )


def _unchanged(before: list[Message], after: list[Message], result: GCResult) -> bool:
    """Whether a run took nothing and wrote nothing: no removal, the same messages."""
    return (
        not result.removal_list
        and len(before) == len(after)
        and all(old is new for old, new in zip(before, after, strict=True))
    )


def _with_target_note(result: GCResult, budget: InstructionBudget, config: GCConfig) -> GCResult:
    """The result saying whether usage after the run is at or below the policy's target, and
    if not, by how much it stopped short: a run that could not reach its target (what is left
    is what the policy keeps) is told apart from one that did."""
    if not result.success:
        return result
    target = int(budget.context_limit * config.target_percent / 100)
    reached = result.tokens_after <= target
    details = {**result.details, "target_reached": reached}
    if not reached:
        batch = result.details.get("batch_size")
        why = (
            "a prune takes only the segments it names"
            if config.plugin_config.get(SEGMENT_IDS)
            else f"an incremental collection takes at most {batch} segments"
            if batch
            else "what is left is what this policy may not take"
        )
        details["short_of_target"] = (
            f"stopped at {result.tokens_after:,} tokens "
            f"({budget.percent_of(result.tokens_after):.1f}% of the window), "
            f"{result.tokens_after - target:,} above the {config.target_percent:g}% target "
            f"({target:,}): {why}"
        )
    return result.model_copy(update={"details": details})
