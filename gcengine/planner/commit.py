"""The commit step: what a plan changes in the items once its request has completed.

Planning is pure and may run any number of times (a preview, a retry); only a request that
completed moves TTLs on. So the caller commits a plan after a successful completion and never
after a failed or cancelled one. One committed plan is one TTL unit: plan once per user turn,
not once per step of a tool loop.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from gcengine._fast import construct
from gcengine.errors import PlannerError
from gcengine.planner.model import ContextPlan, PlannerItem, Source, TTLState


def commit_plan(
    items: Sequence[PlannerItem], plan: ContextPlan, *, repin: Collection[str] = ()
) -> tuple[PlannerItem, ...]:
    """The items after ``plan``'s request completed, in the order given.

    Each included item with ``Limited(n)`` goes to ``n - 1`` (``none_remaining`` at 0); sticky
    items, items that never expire and expired items kept for a turn do not change, nor do
    excluded items. Under the Ask policy, the expired pins the plan kept become
    ``review_pending``. Then each pin whose id is in ``repin`` gets a fresh lease:
    ``default_pin_ttl`` turns and no pending review.
    """
    included = {(item.seq, item.id) for item in plan.included}
    pending = {(change.seq, change.item_id) for change in plan.state_transitions}
    known = {(item.seq, item.id) for item in items}
    missing = (included | pending) - known
    if missing:
        seq, item_id = min(missing)
        raise PlannerError(f"item {item_id!r} (seq {seq}) is in the plan but not in the items")
    unknown = set(repin) - {item.id for item in items if item.source is Source.PINNED}
    if unknown:
        raise PlannerError(f"cannot re-pin {min(unknown)!r}: no pinned item has that id")
    lease = plan.config.default_pin_ttl
    committed = []
    for item in items:
        key = (item.seq, item.id)
        ttl = item.ttl
        if key in included and isinstance(ttl, int):
            ttl = ttl - 1 or TTLState.NONE_REMAINING
        review_pending = item.review_pending or key in pending
        if item.id in repin and item.source is Source.PINNED:
            ttl, review_pending = lease, False
        if ttl == item.ttl and review_pending == item.review_pending:
            committed.append(item)
        else:
            committed.append(
                construct(
                    PlannerItem, **{**item.__dict__, "ttl": ttl, "review_pending": review_pending}
                )
            )
    return tuple(committed)
