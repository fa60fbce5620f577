"""The context planner: what goes into the next request, within the model's window, and why
for every item (``docs/planner.md``).

Where GC decides what to forget after the fact, the planner decides what to send:
``plan_items`` turns a session into items, ``plan_context`` plans them against the model's
caps, and ``commit_plan`` moves TTLs on once the request has completed.
"""

from gcengine.planner.commit import commit_plan
from gcengine.planner.model import (
    TTL,
    BudgetSources,
    ContextPlan,
    Detail,
    ExcludedItem,
    ItemRole,
    ModelCaps,
    PlannedItem,
    PlannerConfig,
    PlannerItem,
    PlanTelemetry,
    Priority,
    PromptBudget,
    Reason,
    Section,
    Sections,
    SectionShares,
    SectionUsage,
    Source,
    StateTransition,
    TTLPolicy,
    TTLState,
    ttl_label,
)
from gcengine.planner.report import plan_report
from gcengine.planner.select import plan_context, prompt_budget
from gcengine.planner.session_items import Pin, model_caps, plan_items, session_caps

__all__ = [
    "TTL",
    "BudgetSources",
    "ContextPlan",
    "Detail",
    "ExcludedItem",
    "ItemRole",
    "ModelCaps",
    "Pin",
    "PlanTelemetry",
    "PlannedItem",
    "PlannerConfig",
    "PlannerItem",
    "Priority",
    "PromptBudget",
    "Reason",
    "Section",
    "SectionShares",
    "SectionUsage",
    "Sections",
    "Source",
    "StateTransition",
    "TTLPolicy",
    "TTLState",
    "commit_plan",
    "model_caps",
    "plan_context",
    "plan_items",
    "plan_report",
    "prompt_budget",
    "session_caps",
    "ttl_label",
]
