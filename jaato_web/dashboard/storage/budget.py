"""The budget tree as stored: ``BudgetNode`` rows only above the conversation's turns (the turn
rows hold those), and a run's conversation after it as positions of the turns it left alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gcengine


@dataclass(frozen=True)
class NodeRow:
    path: str
    parent_path: str
    position: int
    depth: int
    key: str
    label: str
    policy: str
    tokens: int
    child_count: int
    message_ids: list[str]


CONVERSATION = gcengine.InstructionSource.CONVERSATION.value


def budget_rows(budget: gcengine.InstructionBudget) -> list[NodeRow]:
    """Every node of the tree above the conversation's turns, parents before children, figures
    computed bottom-up once; the turns and their messages are the turn rows'."""
    rows: list[NodeRow] = []
    for position, (source, entry) in enumerate(budget.entries.items()):
        _flatten(entry, source.value, "", position, 0, rows)
    return rows


def _flatten(
    entry: gcengine.SourceEntry,
    key: str,
    parent_path: str,
    position: int,
    depth: int,
    rows: list[NodeRow] | None,
) -> tuple[int, str]:
    """Add the rows of ``entry`` and its descendants to ``rows`` (the conversation's children
    are only added up: ``rows`` is None below it); its tokens and policy."""
    path = f"{parent_path}/{key}" if parent_path else key
    slot = -1
    if rows is not None:
        slot = len(rows)
        rows.append(NodeRow(path, parent_path, position, depth, key, "", "", 0, 0, []))
    if entry.children:
        below = None if path == CONVERSATION else rows
        tokens = 0
        policies: set[str] = set()
        for child_position, (child_key, child) in enumerate(entry.children.items()):
            child_tokens, child_policy = _flatten(
                child, child_key, path, child_position, depth + 1, below
            )
            tokens += child_tokens
            policies.add(child_policy)
        policy = policies.pop() if len(policies) == 1 else gcengine.GCPolicy.PARTIAL.value
    else:
        tokens, policy = entry.tokens, entry.gc_policy.value
    if rows is not None:
        rows[slot] = NodeRow(
            path=path,
            parent_path=parent_path,
            position=position,
            depth=depth,
            key=key,
            label=entry.label or key,
            policy=policy,
            tokens=tokens,
            child_count=len(entry.children),
            message_ids=list(entry.message_ids),
        )
    return tokens, policy


AfterTurn = int | list[Any]
"""A turn of a run's collected session: the position of a session turn it kept whole, or the
turn itself: ``[key, label, policy, tokens, [[message id, label, policy, tokens], ...]]``."""


def after_turns(
    before: gcengine.InstructionBudget, after: gcengine.InstructionBudget
) -> list[AfterTurn]:
    """The conversation a run left, turn by turn, as ``GCRun.after_turns`` keeps it: the
    turns it left alone by their position in the session (they are the budget before's very
    entries, or equal to them), the rest written out."""
    old = before.get_entry(gcengine.InstructionSource.CONVERSATION)
    new = after.get_entry(gcengine.InstructionSource.CONVERSATION)
    old_children = old.children if old is not None else {}
    position = {key: number for number, key in enumerate(old_children)}
    turns: list[AfterTurn] = []
    for key, entry in (new.children if new is not None else {}).items():
        kept = old_children.get(key)
        if kept is not None and (kept is entry or kept == entry):
            turns.append(position[key])
            continue
        leaves = [
            [
                leaf_key,
                leaf.label or leaf_key,
                leaf.effective_gc_policy().value,
                leaf.total_tokens(),
            ]
            for leaf_key, leaf in entry.children.items()
        ]
        turns.append(
            [
                key,
                entry.label or key,
                entry.effective_gc_policy().value,
                entry.total_tokens(),
                leaves,
            ]
        )
    return turns
