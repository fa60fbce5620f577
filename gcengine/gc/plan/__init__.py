"""What every strategy shares: removal units, protection, and applying a decision.

A strategy only *chooses* units, oldest first, until the target is met. This package reads what
it needs about the whole history once, as flat per-position lists (where each turn starts, each
message's tokens, policy and creation time, what is protected), and builds units only for the
turns a strategy actually looks at: a collection stops at the target, usually long before the
recent end of a session, and the turns it never reaches cost nothing more.

Removal units:

* a whole turn;
* inside an older turn, a tool exchange: the model message(s) making calls together with every
  message answering them (merged when answers span several calls), so no result is ever left
  without its call or a call without its result;
* inside an older turn, a notice the collector wrote earlier;
* inside an older turn, the model's text between two exchanges (or between the request and the
  first one): a run of model messages followed by an exchange, so a turn's closing answer and a
  plain chat turn's answer go only with their turn;
* a budget entry outside the conversation (an ephemeral plugin entry, the enrichment source).

A unit takes the most protective policy of its members, so pulling a tool result never drags a
preservable or locked call with it.

These pieces of a turn (``Collection.inner_units``) let a collection work inside a long
autonomous turn, one request followed by hundreds of model calls: every strategy takes them once
the whole turns it may take are gone (``Collection.oldest_units``), and ``gc_reachability``
sweeps the same exchanges as its segments.

Sealed, nothing taken from them: the last ``preserve_recent_turns`` conversation turns and
pinned turns (stable index or message id). With ``preserve_recent_exchanges``, only the latest
that many tool exchanges of the recent turns are sealed: a recent turn starting before them may
lose its older pieces, never go whole. A turn holding locked content (the original request) or
the current task (the latest request, ``latest_request``) never goes whole, and the request
itself is never a piece: the first request often starts the longest tool loop of a session.
Without a budget, the original request is still locked. An agent's own compaction summary
(``is_agent_summary``) is sealed below the pressure threshold.

Under JAATO's plugins' rules (``Collection.jaato_rules``) the last ``preserve_recent_turns``
turns, whatever they hold, and pinned turns are sealed whole, a turn holding locked content
is protected, and nothing else is: no piece of a turn is a unit, the current task and an
agent's summary are not kept, and without a budget nothing is locked, as in JAATO.
"""

from gcengine.gc.plan.applying import apply, failed
from gcengine.gc.plan.collection import (
    Collection,
    Planned,
    jaato_rules,
    pinned_turns,
    preserve_count,
    start_collection,
)
from gcengine.gc.plan.decision import (
    Decision,
    jaato_turn_details,
    marked_message,
    notice_message,
    oldest_first,
    take_every_turn,
    take_until_target,
    touched_turns,
)
from gcengine.gc.plan.units import BudgetLeaf, Unit, index_by_id, index_in_order

__all__ = [
    "BudgetLeaf",
    "Collection",
    "Decision",
    "Planned",
    "Unit",
    "apply",
    "failed",
    "index_by_id",
    "index_in_order",
    "jaato_rules",
    "jaato_turn_details",
    "marked_message",
    "notice_message",
    "oldest_first",
    "pinned_turns",
    "preserve_count",
    "start_collection",
    "take_every_turn",
    "take_until_target",
    "touched_turns",
]
