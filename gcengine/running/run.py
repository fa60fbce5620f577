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
    budget = budget.model_copy(deep=True)  # a new value, changed before anyone holds it
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
    budget: InstructionBudget | None, items: list[GCRemovalItem], history: list[Message]
) -> InstructionBudget | None:
    """What the file recorded, as far as it still describes the collected session: without
    the entries the run removed outside the conversation, and with the recorded conversation
    cut to the messages still in the history (a recording of thousands of messages no longer
    there would outweigh the session itself)."""
    budget = without_entries(budget, items)
    conversation = budget.get_entry(InstructionSource.CONVERSATION) if budget else None
    if budget is None or conversation is None:
        return budget
    kept = {message.message_id for message in history}
    pruned = _kept_part(conversation, kept, root=True)
    if pruned is conversation or pruned is None:
        return budget
    entries = {**budget.entries, InstructionSource.CONVERSATION: pruned}
    return budget.model_copy(update={"entries": entries})


def _kept_part(entry: SourceEntry, kept: set[str], *, root: bool = False) -> SourceEntry | None:
    """``entry`` without the leaves naming only messages not in ``kept`` (itself when nothing
    goes, None when nothing stays but the root); a container's own figure becomes what it
    still holds."""
    if not entry.children:
        if entry.message_ids and not any(i in kept for i in entry.message_ids):
            return None
        return entry
    children: dict[str, SourceEntry] = {}
    changed = False
    for key, child in entry.children.items():
        part = _kept_part(child, kept)
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
    if isinstance(plugin, Strategy):
        new_history, result = plugin.collect(
            session.history, usage, config, reason, session.budget, counter=counter
        )
    else:
        new_history, result = plugin.collect(session.history, usage, config, reason, session.budget)
    if not result.success:
        return GCOutcome(
            session=session,
            result=result,
            budget_before=session.budget,
            budget_after=session.budget,
        )
    # The new session describes itself: what the file recorded about what is gone, the
    # provider's last prompt size and the file's load warnings describe the original.
    new_session = session.model_copy(
        update={
            "history": new_history,
            "recorded_budget": recorded_after(
                session.recorded_budget, result.removal_list, new_history
            ),
            "recorded_prompt_tokens": None,
            "warnings": [],
        }
    )
    # The messages kept have their figures in the budget before: they are not counted again.
    new_session.budget = rebuild_budget(new_session, counter, reuse=session.budget)
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
        result=result,
        budget_before=session.budget,
        budget_after=new_session.budget,
    )
