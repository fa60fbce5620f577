"""``plan_context``: choose what goes into the next request, within the prompt budget, and say
why for every item. Pure: the same items, caps and settings always give the same plan, in
whatever order the items come.

The steps are the specification's (``docs/planner.md``):

1. the prompt budget B from the window, the completion reservation and the safety buffer;
2. policy filters, each removal recorded: duplicates, items not meant for the model, tool
   results without their call, calls without their results (outside the current turn, which
   may end in calls still waiting), expired TTLs;
3. the required set (system items, sticky pins, the whole current turn), never trimmed; a
   current turn larger than the budget keeps only its latest user message required;
4. candidates per section: pins one by one in priority order, older turns whole and most
   recent first (a turn that works with tools and does not fit whole gives its newest
   exchanges), RAG parts by score;
5. each active section gets its share of what is left, the remainder to conversation first;
6. pass 1 packs each section in its own allocation: pins and turns as a prefix (stop at the
   first that does not fit, so history stays contiguous), RAG first-fit;
7. pass 2 gives what the sections left unused to the others, resuming where each stopped;
8. every candidate left out gets ``budget/does_not_fit`` or ``budget/behind_cut``.

Items are handled by their position in the canonical order (seq, then id) in flat lists, so
planning a 10,000-turn session stays a few linear passes.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import compress, islice, pairwise, repeat
from operator import and_, ge, is_, itemgetter, not_, or_
from typing import Any, NamedTuple

from gcengine.errors import PlannerError
from gcengine.planner.model import (
    BudgetSources,
    CompletionSource,
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
    SectionUsage,
    Source,
    StateTransition,
    TTLPolicy,
    TTLState,
    decision_code,
)

# Pass 1 and 2 visit the sections in this order; a remainder of the allocation goes to the
# first active one in ``_REMAINDER_ORDER``.
_SECTIONS = (Section.SYSTEM_PINNED, Section.CONVERSATION, Section.RAG)
_REMAINDER_ORDER = (Section.CONVERSATION, Section.RAG, Section.SYSTEM_PINNED)
_TTL_DETAILS = {TTLPolicy.ASK: Detail.TTL_GRACE, TTLPolicy.UNLIMITED: Detail.TTL_IGNORED}


def prompt_budget(caps: ModelCaps, config: PlannerConfig) -> PromptBudget:
    """Step 1: L, C, S and B, with where L, C and B came from.

    The completion reservation is the request's own ``max_tokens`` when set; otherwise the
    smallest of the configured default, the model's output limit and a quarter of the window,
    so a provider advertising an output limit close to its window does not eat the prompt.
    """
    if caps.context_length:
        window, window_source = caps.context_length, "model"
    else:
        window, window_source = config.default_context_length, "default"
    completion_source: CompletionSource
    if caps.request_max_tokens is not None:
        completion, completion_source = caps.request_max_tokens, "request"
    else:
        choices: list[tuple[int, CompletionSource]] = [
            (config.default_max_completion_tokens, "default"),
            (window // 4, "quarter_window"),
        ]
        if caps.provider_max_completion_tokens:
            choices.insert(1, (caps.provider_max_completion_tokens, "model"))
        completion, completion_source = min(choices, key=lambda choice: choice[0])
    safety = config.safety_buffer
    budget = max(0, window - completion - safety)
    budget_source = "window"
    if caps.max_prompt_tokens and max(0, caps.max_prompt_tokens - safety) < budget:
        budget, budget_source = max(0, caps.max_prompt_tokens - safety), "max_prompt_tokens"
    return PromptBudget(
        model_context_len=window,
        max_completion_tokens=completion,
        safety_buffer=safety,
        prompt_budget=budget,
        sources=BudgetSources(
            context_length=window_source,
            max_completion_tokens=completion_source,
            prompt_budget=budget_source,
        ),
    )


def plan_context(
    items: Iterable[PlannerItem],
    caps: ModelCaps,
    config: PlannerConfig,
    *,
    plan_id: str | None = None,
    request_id: str | None = None,
) -> ContextPlan:
    """Plan the next request: every item is either included (in prompt order) or excluded,
    with a reason code and detail. ``plan_id`` defaults to a digest of the inputs, so the same
    inputs always give the same plan; ``request_id`` goes into the telemetry record."""
    columns = _Columns(items)
    budget = prompt_budget(caps, config)
    selection = _Selection(columns, config, budget.prompt_budget)
    selection.run()
    return selection.plan(
        budget,
        caps,
        plan_id if plan_id is not None else columns.digest(caps, config),
        request_id,
    )


_FIELDS = tuple(PlannerItem.model_fields)
_ENUM_FIELDS = frozenset({"source", "role", "priority"})


class _Columns:
    """The items in canonical order (seq, then id), read once into one tuple per field.

    Every step reads these by position instead of the items' attributes: a long
    session has tens of thousands of items, and the steps read each several times.
    """

    def __init__(self, items: Iterable[PlannerItem]) -> None:
        # Each item's fields as a tuple: reading its dict beats reading its attributes.
        rows = list(map(itemgetter(*_FIELDS), map(vars, items)))
        columns: list[tuple[Any, ...]] = (
            list(zip(*rows, strict=True)) if rows else [()] * len(_FIELDS)
        )
        seq, ident = _FIELDS.index("seq"), _FIELDS.index("id")
        seqs = columns[seq]
        if any(map(ge, seqs, islice(seqs, 1, None))):
            rows.sort(key=itemgetter(seq, ident))
            for first, second in pairwise(rows):
                if first[seq] == second[seq]:
                    raise PlannerError(
                        f"items {first[ident]!r} and {second[ident]!r} share seq {first[seq]}; "
                        "every item needs its own"
                    )
            columns = list(zip(*rows, strict=True))
        self.size = len(rows)
        self.by_name = dict(zip(_FIELDS, columns, strict=True))
        self.id: tuple[str, ...] = self.by_name["id"]
        self.source: tuple[Source, ...] = self.by_name["source"]
        self.role: tuple[ItemRole, ...] = self.by_name["role"]
        self.tokens: tuple[int, ...] = self.by_name["tokens"]
        self.seq: tuple[int, ...] = self.by_name["seq"]
        self.turn: tuple[int | None, ...] = self.by_name["turn"]
        self.priority: tuple[Priority, ...] = self.by_name["priority"]
        self.ttl: tuple[int | TTLState | None, ...] = self.by_name["ttl"]
        self.review_pending: tuple[bool, ...] = self.by_name["review_pending"]
        self.score: tuple[float, ...] = self.by_name["score"]
        self.tool_calls: tuple[tuple[str, ...], ...] = self.by_name["tool_calls"]
        self.tool_call_ids: tuple[tuple[str, ...], ...] = self.by_name["tool_call_ids"]
        self.model_visible: tuple[bool, ...] = self.by_name["model_visible"]
        self.label: tuple[str, ...] = self.by_name["label"]

    def digest(self, caps: ModelCaps, config: PlannerConfig) -> str:
        """A digest of the canonical inputs: the plan id when the caller gives none. Taken
        column by column (a tuple's ``repr`` is built in C, an item's would not be)."""
        digest = hashlib.blake2b(digest_size=12)
        digest.update(caps.model_dump_json().encode())
        digest.update(config.model_dump_json().encode())
        for name, column in self.by_name.items():
            if name in _ENUM_FIELDS:
                digest.update(",".join(column).encode())  # enum values hold no commas
            else:
                digest.update(repr(column).encode())
        return digest.hexdigest()


class _Selection:
    """The decisions of one plan, by canonical position, as the steps make them."""

    def __init__(self, columns: _Columns, config: PlannerConfig, budget: int) -> None:
        self.items = columns
        self.config = config
        self.budget = budget
        size = columns.size
        self.alive = [True] * size
        self.included = [False] * size
        self.required = [False] * size
        self.reason: list[Reason | None] = [None] * size
        self.detail: list[Detail | None] = [None] * size
        self.pass_no = [0] * size
        self.section: list[Section | None] = [None] * size
        self.by_turn = [False] * size  # decided as a member of its turn
        self.tokens_left: list[int | None] = [None] * size
        # Items kept although their TTL ran out (ttl_grace or ttl_ignored).
        self.ttl_kept: dict[int, Detail] = {}
        self.review: list[int] = []
        self.latest_user = -1
        self.current_turn: int | None = None
        self.required_tokens = 0
        self.over_budget = False
        self.allocated = dict.fromkeys(_SECTIONS, 0)
        self.used = dict.fromkeys(_SECTIONS, 0)
        self.spill_in = dict.fromkeys(_SECTIONS, 0)
        self.pins: list[int] = []
        self.turns: list[list[int]] = []
        self.rag: list[int] = []

    def run(self) -> None:
        self._drop_duplicates()
        for position in compress(range(self.items.size), map(not_, self.items.model_visible)):
            if self.alive[position]:
                self._drop(position, Detail.NOT_MODEL_VISIBLE)
        self._find_current_turn()
        self._mark_required()
        self._check_tool_pairs(self._tool_turns())
        self._apply_ttl_policy()
        self._take_required()
        self._gather_candidates()
        if self.over_budget:
            self._exclude_all_candidates()
            return
        self._allocate()
        self._pack()

    # Step 2: policy filters.

    def _drop(self, position: int, detail: Detail) -> None:
        self.alive[position] = False
        self.reason[position] = Reason.POLICY
        self.detail[position] = detail
        self.by_turn[position] = self.items.source[position] is Source.CONVERSATION

    def _drop_duplicates(self) -> None:
        ids = self.items.id
        if len(set(ids)) == len(ids):
            return
        positions: dict[str, list[int]] = {}
        for position, item_id in enumerate(ids):
            positions.setdefault(item_id, []).append(position)
        source, score, seq = self.items.source, self.items.score, self.items.seq
        for copies in positions.values():
            if len(copies) < 2:
                continue
            if all(source[p] is Source.RAG for p in copies):
                kept = min(copies, key=lambda p: (-score[p], seq[p]))
            else:
                kept = copies[0]  # the lowest seq: positions follow the canonical order
            for position in copies:
                if position != kept:
                    self._drop(position, Detail.DUPLICATE)

    def _find_current_turn(self) -> None:
        """The latest user message U is the newest user item that belongs to a turn; its turn
        is the current turn K."""
        role, turn, alive = self.items.role, self.items.turn, self.alive
        for position in range(self.items.size - 1, -1, -1):
            if alive[position] and role[position] is ItemRole.USER and turn[position] is not None:
                self.latest_user = position
                self.current_turn = turn[position]
                return

    def _mark_required(self) -> None:
        """System items, sticky pins (TTL unlimited) and every item of the current turn."""
        items, current, required = self.items, self.current_turn, self.required
        sticky = TTLState.UNLIMITED
        facts = zip(items.source, items.turn, items.ttl, self.alive, strict=True)
        for position, (source, turn, ttl, alive) in enumerate(facts):
            if alive and (
                source is Source.SYSTEM
                or (turn == current and turn is not None)
                or (source is Source.PINNED and ttl is sticky)
            ):
                required[position] = True

    def _tool_turns(self) -> dict[int, list[int]]:
        """The turns that hold tool traffic, with those items."""
        items = self.items
        turns: dict[int, list[int]] = {}
        traffic = map(or_, map(bool, items.tool_calls), map(bool, items.tool_call_ids))
        for position in compress(range(items.size), traffic):
            turn = items.turn[position]
            if turn is not None:
                turns.setdefault(turn, []).append(position)
        return turns

    def _check_tool_pairs(self, turns: dict[int, list[int]]) -> None:
        """Drop tool results whose call is not in their turn and, outside the current turn,
        calls whose results are not, until every call left has its results (dropping one may
        leave its partner without its own). The current turn may end in calls still waiting
        for their results; a result without its call is never sent, providers refuse it."""
        calls, answers, alive = self.items.tool_calls, self.items.tool_call_ids, self.alive
        for turn, members in turns.items():
            open_chains = turn == self.current_turn
            changed = True
            while changed:
                changed = False
                living = [p for p in members if alive[p]]
                made = {c for p in living for c in calls[p]}
                answered = {c for p in living for c in answers[p]}
                for position in living:
                    if answers[position] and not made.issuperset(answers[position]):
                        self._drop(position, Detail.ORPHAN_TOOL_RESULT)
                        changed = True
                    elif (
                        calls[position]
                        and not open_chains
                        and not answered.issuperset(calls[position])
                    ):
                        self._drop(position, Detail.DANGLING_TOOL_CALL)
                        changed = True

    def _apply_ttl_policy(self) -> None:
        items, policy = self.items, self.config.ttl_policy
        expired = TTLState.NONE_REMAINING
        expired_tool_turns: set[int | None] = set()
        for position in compress(range(items.size), map(is_, items.ttl, repeat(expired))):
            if not self.alive[position] or self.required[position]:
                continue
            if policy is TTLPolicy.AUTOMATIC:
                self._drop(position, Detail.TTL_EXPIRED)
            elif policy is TTLPolicy.ASK and items.review_pending[position]:
                self._drop(position, Detail.TTL_REVIEW_EXPIRED)
            else:
                self.ttl_kept[position] = _TTL_DETAILS[policy]
                if policy is TTLPolicy.ASK:
                    self.review.append(position)
                continue
            if items.tool_calls[position] or items.tool_call_ids[position]:
                expired_tool_turns.add(items.turn[position])
        if expired_tool_turns:
            # A call or result that expired takes its partners out with it.
            turns = self._tool_turns()
            self._check_tool_pairs({t: m for t, m in turns.items() if t in expired_tool_turns})

    # Step 3: the required set.

    def _take_required(self) -> None:
        items, current = self.items, self.current_turn
        total = 0
        for position in compress(range(items.size), self.required):
            if not self.alive[position]:
                continue
            self.included[position] = True
            total += items.tokens[position]
            if items.source[position] is Source.SYSTEM:
                self.reason[position], self.detail[position] = Reason.REQUIRED, Detail.SYSTEM
            elif current is not None and items.turn[position] == current:
                self.reason[position] = Reason.REQUIRED
                self.detail[position] = (
                    Detail.LATEST_USER_MESSAGE
                    if position == self.latest_user
                    else Detail.CURRENT_TURN
                )
                self.section[position] = Section.CONVERSATION
                self.by_turn[position] = True
            else:
                self.reason[position], self.detail[position] = Reason.PINNED, Detail.STICKY
                self.section[position] = Section.SYSTEM_PINNED
        self.required_tokens = total
        self.over_budget = total > self.budget
        if self.over_budget and self._current_task_only():
            self._take_required()

    def _current_task_only(self) -> bool:
        """When what is required (the system prompt, the pins and the whole current turn)
        exceeds the budget, as an agent's autonomous turn of hundreds of calls does, only the
        current turn's latest user request stays required: the current task.
        The rest of the turn competes as the newest candidates, exchange by exchange
        (``_prefix`` splits it), so the plan holds the request and the latest work on it
        instead of nothing. Whether anything was given up."""
        current, latest = self.current_turn, self.latest_user
        if current is None:
            return False
        given_up = False
        for position, turn in enumerate(self.items.turn):
            if turn == current and position != latest and self.required[position]:
                if self.items.source[position] is Source.PINNED or not self.alive[position]:
                    continue  # a pin keeps what it asked for; a dropped item stays dropped
                self.required[position] = False
                self.included[position] = False
                self.reason[position] = self.detail[position] = self.section[position] = None
                self.by_turn[position] = False
                given_up = True
        return given_up

    # Step 4: candidates.

    def _gather_candidates(self) -> None:
        """Pins by priority, newest first, then id; turns most recent first, each with its
        members (a pinned message is also a member of its turn); RAG parts by score, then
        id."""
        items, alive, required = self.items, self.alive, self.required
        source, turn = items.source, items.turn
        turns: dict[int, list[int]] = {}
        candidates = map(and_, alive, map(not_, required))
        for position in compress(range(items.size), candidates):
            if source[position] is Source.PINNED:
                self.pins.append(position)
            elif source[position] is Source.RAG:
                self.rag.append(position)
            number = turn[position]
            if number is not None:
                turns.setdefault(number, []).append(position)
        priority, seq, ids, score = items.priority, items.seq, items.id, items.score
        self.pins.sort(key=lambda p: (priority[p].rank, -seq[p], ids[p]))
        self.rag.sort(key=lambda p: (-score[p], ids[p]))
        self.turns = [turns[number] for number in sorted(turns, reverse=True)]

    def _exclude_all_candidates(self) -> None:
        source = self.items.source
        for position in (*self.pins, *(p for unit in self.turns for p in unit), *self.rag):
            if self.reason[position] is None:
                self.reason[position] = Reason.BUDGET
                self.detail[position] = Detail.REQUIRED_EXCEEDS_BUDGET
                self.by_turn[position] = source[position] is Source.CONVERSATION

    # Step 5: allocation.

    def _allocate(self) -> None:
        optional = self.budget - self.required_tokens
        shares = self.config.shares
        active = [
            section
            for section, units in zip(_SECTIONS, (self.pins, self.turns, self.rag), strict=True)
            if units
        ]
        total_share = sum(shares.of(section) for section in active)
        if total_share == 0:
            return
        for section in active:
            self.allocated[section] = optional * shares.of(section) // total_share
        remainder = optional - sum(self.allocated.values())
        first = next(section for section in _REMAINDER_ORDER if section in active)
        self.allocated[first] += remainder

    # Steps 6 to 8: packing and exclusions.

    def _pack(self) -> None:
        pin_units = [[p] for p in self.pins]
        prefix_sections = ((Section.SYSTEM_PINNED, pin_units), (Section.CONVERSATION, self.turns))
        purses = {section: _Purse(self.allocated[section]) for section in _SECTIONS}
        cuts: dict[Section, _Cut | None] = {
            section: self._prefix(section, units, 0, purses[section], 1)
            for section, units in prefix_sections
        }
        skipped = self._first_fit(self.rag, purses[Section.RAG], 1)
        if self.config.spillover:
            pool = _Purse(sum(purse.left for purse in purses.values()))
            for section, units in prefix_sections:
                cut = cuts[section]
                if cut is not None:
                    cuts[section] = self._prefix(section, units, cut.unit, pool, 2)
            skipped = self._first_fit(skipped, pool, 2)
        for section, units in prefix_sections:
            self._exclude_from_cut(section, units, cuts[section])
        for position in skipped:
            self.reason[position], self.detail[position] = Reason.BUDGET, Detail.DOES_NOT_FIT

    def _prefix(
        self, section: Section, units: Sequence[list[int]], start: int, purse: _Purse, pass_no: int
    ) -> _Cut | None:
        """Include whole units in order from ``start`` while they fit in the purse; where the
        first that does not fit is (the cut), or None when all fit. A unit costs what its
        members not yet included cost."""
        tokens, included = self.items.tokens, self.included
        for index in range(start, len(units)):
            unit = units[index]
            cost = sum([tokens[p] for p in unit if not included[p]])
            if cost > purse.left:
                if section is Section.CONVERSATION and self._works_with_tools(unit):
                    # A working turn too large to go whole gives its newest exchanges that fit:
                    # an agent's turn of hundreds of calls would otherwise stop the history
                    # here. A turn of plain messages stays whole, question with answer.
                    for exchange in self._exchanges(unit):
                        spent = sum([tokens[p] for p in exchange if not included[p]])
                        if spent > purse.left:
                            break
                        purse.left -= spent
                        self._take(section, exchange, pass_no, spent)
                return _Cut(index, purse.left)
            purse.left -= cost
            self._take(section, unit, pass_no, cost)
        return None

    def _works_with_tools(self, unit: list[int]) -> bool:
        calls, answers = self.items.tool_calls, self.items.tool_call_ids
        return any(calls[p] or answers[p] for p in unit)

    def _exchanges(self, unit: list[int]) -> list[list[int]]:
        """A turn's members as the smallest units that keep tool pairs together, newest
        first: a message with the calls it makes and every result answering them; any other
        message alone."""
        calls, answers = self.items.tool_calls, self.items.tool_call_ids
        groups: list[list[int]] = []
        group_of: dict[str, int] = {}
        for position in unit:
            joined = next((group_of[c] for c in answers[position] if c in group_of), None)
            if joined is None:
                joined = len(groups)
                groups.append([])
            groups[joined].append(position)
            for call in calls[position]:
                group_of[call] = joined
        # A message making calls joins the group of the first call it answers, if any; the
        # newest group is the one holding the newest member.
        return sorted(groups, key=lambda group: group[-1], reverse=True)

    def _first_fit(self, parts: list[int], purse: _Purse, pass_no: int) -> list[int]:
        """Include each part that fits in the purse, in order; the parts that did not."""
        skipped = []
        for position in parts:
            tokens = self.items.tokens[position]
            if tokens > purse.left:
                self.tokens_left[position] = purse.left
                skipped.append(position)
                continue
            purse.left -= tokens
            self._take(Section.RAG, [position], pass_no, tokens)
        return skipped

    def _take(self, section: Section, unit: list[int], pass_no: int, cost: int) -> None:
        reason = _SECTION_REASONS[section]
        for position in unit:
            if self.included[position]:
                continue
            self.included[position] = True
            self.reason[position] = reason
            self.detail[position] = self.ttl_kept.get(position)
            self.pass_no[position] = pass_no
            self.section[position] = section
            self.by_turn[position] = section is Section.CONVERSATION
        self.used[section] += cost
        if pass_no == 2:
            self.spill_in[section] += cost

    def _exclude_from_cut(
        self, section: Section, units: Sequence[list[int]], cut: _Cut | None
    ) -> None:
        """The unit at the final cut did not fit; the ones after it are behind the cut. A pin
        that is also a member of a turn keeps what the pins decided for it."""
        if cut is None:
            return
        for index in range(cut.unit, len(units)):
            detail = Detail.DOES_NOT_FIT if index == cut.unit else Detail.BEHIND_CUT
            for position in units[index]:
                if self.included[position] or self.reason[position] is not None:
                    continue
                self.reason[position], self.detail[position] = Reason.BUDGET, detail
                self.by_turn[position] = section is Section.CONVERSATION
                if detail is Detail.DOES_NOT_FIT:
                    self.tokens_left[position] = cut.left

    # Outputs.

    def plan(
        self, budget: PromptBudget, caps: ModelCaps, plan_id: str, request_id: str | None
    ) -> ContextPlan:
        items = self.items
        order = self._prompt_order()
        left_out = list(compress(range(items.size), map(not_, self.included)))
        for position in left_out:
            if self.section[position] is None:
                self.section[position] = (
                    Section.CONVERSATION
                    if self.by_turn[position]
                    else _SOURCE_SECTIONS[items.source[position]]
                )
            if self.detail[position] is not Detail.DOES_NOT_FIT:
                self.tokens_left[position] = None
        included = self._decisions(PlannedItem, order, self.pass_no)
        excluded = self._decisions(ExcludedItem, left_out, self.tokens_left)
        shares = self.config.shares
        sections = Sections(
            **{
                section.value: SectionUsage(
                    share=shares.of(section),
                    allocated=self.allocated[section],
                    used=self.used[section],
                    spill_in=self.spill_in[section],
                )
                for section in _SECTIONS
            }
        )
        tokens = items.tokens
        total = sum([tokens[p] for p in order])
        overflow = max(0, total - budget.prompt_budget)
        review = tuple(items.id[p] for p in self.review)
        telemetry = PlanTelemetry(
            plan_id=plan_id,
            request_id=request_id,
            model=caps.model,
            model_context_len=budget.model_context_len,
            max_completion_tokens=budget.max_completion_tokens,
            safety_buffer=budget.safety_buffer,
            prompt_budget=budget.prompt_budget,
            budget_sources=budget.sources,
            ttl_policy=self.config.ttl_policy,
            spillover=self.config.spillover,
            sections=sections,
            included_by_reason=self._tally(order),
            excluded_by_reason=self._tally(left_out),
            required_tokens=self.required_tokens,
            included_tokens=total,
            excluded_tokens=sum([tokens[p] for p in left_out]),
            over_budget=self.over_budget,
            overflow_tokens=overflow,
            review_requests=len(review),
        )
        # Built without validating again: every value above is the planner's own.
        return ContextPlan.model_construct(
            plan_id=plan_id,
            model=caps.model,
            model_context_len=budget.model_context_len,
            max_completion_tokens=budget.max_completion_tokens,
            safety_buffer=budget.safety_buffer,
            prompt_budget=budget.prompt_budget,
            budget_sources=budget.sources,
            sections=sections,
            included=included,
            excluded=excluded,
            estimated_tokens_total=total,
            required_tokens=self.required_tokens,
            over_budget=self.over_budget,
            overflow_tokens=overflow,
            review_requests=review,
            state_transitions=tuple(
                StateTransition(item_id=items.id[p], seq=items.seq[p]) for p in self.review
            ),
            ttl_policy=self.config.ttl_policy,
            spillover=self.config.spillover,
            caps=caps,
            config=self.config,
            telemetry=telemetry,
        )

    def _decisions[D: (PlannedItem, ExcludedItem)](
        self, kind: type[D], positions: list[int], eleventh: Sequence[int | None]
    ) -> tuple[D, ...]:
        """The decisions at ``positions``, built column by column: both kinds have the same
        fields but the eleventh (the pass for an included item, the budget left for an
        excluded one)."""
        if not positions:
            return ()
        items = self.items
        pick = itemgetter(*positions) if len(positions) > 1 else _single(positions[0])
        turn_atoms: dict[int | None, str] = {}
        atoms = [
            (turn_atoms.get(turn) or turn_atoms.setdefault(turn, f"turn_{turn}"))
            if by_turn
            else item_id
            for item_id, turn, by_turn in zip(
                pick(items.id), pick(items.turn), pick(self.by_turn), strict=True
            )
        ]
        fields = zip(
            pick(items.id),
            pick(items.source),
            pick(self.section),
            pick(items.role),
            pick(items.priority),
            pick(items.ttl),
            pick(self.reason),
            pick(self.detail),
            pick(items.tokens),
            atoms,
            pick(eleventh),
            pick(items.seq),
            pick(items.turn),
            pick(items.label),
            strict=True,
        )
        return tuple(map(partial(tuple.__new__, kind), fields))

    def _tally(self, positions: list[int]) -> dict[str, int]:
        """How many of these decisions there are per code (``budget/does_not_fit``)."""
        reason, detail = self.reason, self.detail
        counts = Counter([(reason[p], detail[p]) for p in positions])
        return dict(
            sorted((decision_code(r, d), n) for (r, d), n in counts.items() if r is not None)
        )

    def _prompt_order(self) -> list[int]:
        """System items, then pins, then RAG parts by rank, then the conversation; a pinned
        message whose turn is sent sits in its turn, by seq."""
        items, included, by_turn = self.items, self.included, self.by_turn
        turn, source = items.turn, items.source
        sent = map(and_, included, by_turn)
        sent_turns = {turn[p] for p in compress(range(items.size), sent)}
        system: list[int] = []
        pinned: list[int] = []
        conversation: list[int] = []
        for position in compress(range(items.size), included):
            kind = source[position]
            if kind is Source.SYSTEM:
                system.append(position)
            elif kind is Source.RAG:
                continue
            elif turn[position] is not None and turn[position] in sent_turns:
                conversation.append(position)
            else:
                pinned.append(position)
        rag = [p for p in self.rag if included[p]]
        return [*system, *pinned, *rag, *conversation]


def _single(position: int) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """``itemgetter`` of one position, returning a 1-tuple as it does for several."""
    return lambda column: (column[position],)


_SECTION_REASONS = {
    Section.SYSTEM_PINNED: Reason.PINNED,
    Section.CONVERSATION: Reason.RECENT,
    Section.RAG: Reason.RELEVANT,
}
_SOURCE_SECTIONS: dict[Source, Section | None] = {
    Source.SYSTEM: None,
    Source.PINNED: Section.SYSTEM_PINNED,
    Source.CONVERSATION: Section.CONVERSATION,
    Source.RAG: Section.RAG,
}


class _Purse:
    """Tokens a pass may still spend: one section's allocation, or the shared pool."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


class _Cut(NamedTuple):
    """Where a prefix section stopped: the unit that did not fit and the budget it met."""

    unit: int
    left: int


def _counts(codes: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for code in codes:
        counts[code] = counts.get(code, 0) + 1
    return dict(sorted(counts.items()))
