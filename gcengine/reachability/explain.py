"""Why, in words: every segment a reachability collection takes or keeps can say why.

"unreachable: no later turn names src/billing/invoice.py; score 0.12 (12 turns old, refcount 0,
log)"; "kept: turn 41 names `InvoiceError`, which this tool output holds; turn 41 is one of
the latest 3 turns". Sentences use JAATO's turn numbers (``turn_label``) and the anchors as
written in the session.
"""

from __future__ import annotations

from typing import Literal

from gcengine.budget import GCPolicy
from gcengine.gc.segments import SegmentKind, describe
from gcengine.messages import turn_label
from gcengine.reachability.anchors import SHOWN_FIRST, shown_order
from gcengine.reachability.graph import (
    REPLY,
    SUMMARY_OF,
    Candidate,
    Plan,
    Segment,
    kept_policies,
)


def label(plan: Plan, number: int) -> str:
    """How a sentence names a segment: ``turn 41``, ``the read_file output of turn 41``."""
    segment = plan.segments[number]
    if segment.kind is SegmentKind.NOTE:
        return "a notice"
    if segment.turn_index is None:
        if segment.kind is SegmentKind.SUMMARY:
            summary = plan.collection.history[segment.positions[0]].metadata.get("summary_number")
            return f"summary {summary}" if isinstance(summary, int) else "a summary"
        return "an inserted turn"
    turn = turn_label(segment.turn_index)
    if not segment.exchange:
        return turn
    tool = segment.tools[0] if segment.tools else "tool"
    return f"the {tool} output of {turn}"


def noun(segment: Segment) -> str:
    """What "this" is in a sentence about the segment."""
    if segment.kind is SegmentKind.SUMMARY:
        return "summary"
    if segment.kind is SegmentKind.NOTE:
        return "notice"
    return "tool output" if segment.exchange else "turn"


def score_words(plan: Plan, number: int, score: float | None = None) -> str:
    """``score 0.12 (12 turns old, refcount 0, log)``."""
    segment = plan.segments[number]
    touched = plan.last_touched(number)
    if touched == segment.clock:
        age = plan.now - segment.clock
        when = "from the latest turn" if age == 0 else f"{_turns(age)} old"
    else:
        when = f"last named {_turns(plan.now - touched)} ago"
    young = ", young" if plan.young(number) else ""
    value = plan.scores[number] if score is None else score
    return (
        f"score {value:.2f} ({when}, refcount {plan.refcount(number)}, {segment.kind.value}{young})"
    )


def _turns(count: int) -> str:
    return "1 turn" if count == 1 else f"{count:,} turns"


def unreachable_words(plan: Plan, number: int) -> str:
    """Why nothing kept reaches the segment: the later segments naming what it holds are not
    kept either, or newer ones hold it now, or nothing later names it at all."""
    others = [r for r, how in _referrers(plan, number) if how != REPLY]
    if others:
        how = plan.references[others[0]][number]
        shown = " and ".join(label(plan, r) for r in others[:2])
        more = f" and {len(others) - 2:,} more" if len(others) > 2 else ""
        verb = "name" if len(others) > 1 else "names"
        them = "them" if len(others) > 1 else label(plan, others[0])
        return (
            f"unreachable: only {shown}{more} {verb} {_how(how)}, and nothing kept refers to {them}"
        )
    segment = plan.segments[number]
    held = _shown_anchors(segment)
    if not held:
        return "unreachable: it holds no file, name or error code for a later turn to name"
    later = [a for a in held if plan.last_named.get(a, -1) > number]
    if later:
        return f"unreachable: later turns name {describe(later[0])}, but a newer segment holds it"
    return f"unreachable: no later turn names {' or '.join(describe(a) for a in held)}"


def _referrers(plan: Plan, number: int) -> list[tuple[int, str]]:
    return [(r, plan.references[r][number]) for r in plan.referrers[number]]


def _shown_anchors(segment: Segment) -> list[str]:
    """Up to two anchors a segment holds, the files it worked on first."""
    shown = [a for a in segment.holds if a.partition(":")[0] in SHOWN_FIRST]
    ordered = [span.key for span in segment.acted_on] + sorted(shown, key=shown_order)
    return list(dict.fromkeys(ordered))[:2]


def _how(how: str) -> str:
    if how == SUMMARY_OF:
        return "it in its summary"
    return describe(how)


def reachable_words(plan: Plan, number: int) -> str:
    """How a root reaches the segment (or why it is one), starting ``kept: ``."""
    segment = plan.segments[number]
    if number in plan.roots:
        return f"kept: this {noun(segment)} {plan.roots[number]}"
    path = plan.path(number)
    if not path:
        raise ValueError("only a reachable segment has a path from a root")
    source, how = path[-1]
    if how == REPLY:
        step = f"the reply of {label(plan, source)} reports this tool output"
    elif how == SUMMARY_OF:
        step = f"{label(plan, source)} covers this turn"
    else:
        step = f"{label(plan, source)} names {describe(how)}, which this {noun(segment)} holds"
    root = path[0][0]
    if root == source:
        context = f"{label(plan, root)} {plan.roots[root]}"
    else:
        steps = len(path)
        context = (
            f"{label(plan, source)} is reached in {steps - 1:,} "
            f"step{'' if steps == 2 else 's'} from {label(plan, root)}, which "
            f"{plan.roots[root]}"
        )
    return f"kept: {step}; {context}"


def candidate_segment(plan: Plan, candidate: Candidate) -> int:
    """The segment a candidate's figures are those of: an exchange itself; for what is left of
    a turn, its best-scoring part (a reachable one, when any is)."""
    if candidate.turn is None:
        return candidate.segment
    parts = plan.by_turn[candidate.turn]
    return max(parts, key=lambda n: (plan.reachable[n], plan.scores[n], -n))


def taken_sentence(plan: Plan, candidate: Candidate) -> str:
    """Why the sweep took a candidate."""
    number = candidate_segment(plan, candidate)
    score = score_words(plan, number, candidate.score)
    if not candidate.reachable:
        return f"{unreachable_words(plan, number)}; {score}"
    step = reachable_words(plan, number).removeprefix("kept: ")
    return f"reachable, taken once nothing unreachable was left: {step}; {score}"


def named_sentence(plan: Plan, candidate: Candidate) -> str:
    """Why a prune took a candidate it was asked for by name."""
    number = candidate_segment(plan, candidate)
    score = score_words(plan, number, candidate.score)
    if not candidate.reachable:
        return f"named to be pruned; {unreachable_words(plan, number)}; {score}"
    step = reachable_words(plan, number).removeprefix("kept: ")
    return f"named to be pruned; reachable: {step}; {score}"


def kept_sentence(plan: Plan, number: int, candidate: Candidate | None) -> str:
    """Why a segment stays: a root or reachable, protected, or not needed to reach the target;
    preservable content below the pressure threshold says that first, as it is why no
    collection may take it, reachable or not."""
    waits = plan.segments[number].policy is GCPolicy.PRESERVABLE
    if candidate is None and waits and not plan.collection.under_pressure:
        return _protected_words(plan, number)
    if plan.reachable[number]:
        return reachable_words(plan, number)
    if candidate is not None:
        return (
            f"not taken yet: {unreachable_words(plan, number).removeprefix('unreachable: ')} "
            f"(unreachable); {score_words(plan, number)}; the collection reached its target "
            "first"
        )
    return _protected_words(plan, number)


def untakeable_sentence(plan: Plan, number: int) -> str:
    """Why no collection may take a segment that is not a candidate: what protects it (a pin,
    the latest turns, locked content) before what keeps it as a root."""
    collection, segment = plan.collection, plan.segments[number]
    protected = (
        segment.turn in collection.sealed
        or segment.policy in kept_policies(collection)
        or (not segment.exchange and segment.turn in collection.figures.locked_turns)
    )
    if number in plan.roots and not protected:
        return reachable_words(plan, number)
    return _protected_words(plan, number)


Keeper = Literal["pinned", "recent", "locked", "root"]
"""What keeps a segment no collection may take: a pinned turn, the latest turns
(preserve_recent_turns), locked content, or a root (the segment itself, or one in the turn it
goes with)."""


def kept_by(plan: Plan, number: int) -> Keeper:
    """What keeps a segment that is no candidate, the first that applies."""
    collection, segment = plan.collection, plan.segments[number]
    if segment.turn in collection.sealed:
        return "pinned" if segment.turn in plan.pinned else "recent"
    if segment.policy is GCPolicy.LOCKED or (
        not segment.exchange and segment.turn in collection.figures.locked_turns
    ):
        return "locked"
    return "root"


def _protected_words(plan: Plan, number: int) -> str:
    """Why a segment that is no candidate and no root stays."""
    collection, segment = plan.collection, plan.segments[number]
    turn = segment.turn
    keeper = kept_by(plan, number)
    if keeper == "pinned":
        return f"kept: this {noun(segment)} is in a pinned turn, which no collection touches"
    if keeper == "recent":
        recent = collection.preserve_recent
        return (
            f"kept: this {noun(segment)} is in one of the {_turns(recent)} a collection never "
            "touches (preserve_recent_turns)"
        )
    if keeper == "locked" and not segment.exchange:
        return "kept: this turn holds locked content, which no collection removes"
    if segment.policy is GCPolicy.LOCKED:
        return "kept: this tool output holds locked content, which no collection removes"
    if segment.policy is GCPolicy.PRESERVABLE and not collection.under_pressure:
        return (
            f"kept: this {noun(segment)} holds preservable content, which a collection takes "
            "only at the policy's pressure threshold (never in continuous mode)"
        )
    if segment.exchange:
        return "kept: this tool output holds locked content, which no collection removes"
    roots = [n for n in plan.by_turn[turn] if n in plan.roots]
    if roots:
        return (
            f"kept: this turn goes only whole, and {label(plan, roots[0])} {plan.roots[roots[0]]}"
        )
    return "kept: a collection takes this turn only whole"
