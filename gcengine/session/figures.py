"""What each message of a history counts for in its budget: its figure, its policy, its time.

Message policies follow how JAATO fills its budget, without its two mistakes (the first user
message of the session is locked even after a notice is put before it; every complex turn keeps
its closing answer, not only the last turn):

* the session's original request (first user message of the conversation): LOCKED;
* the closing text answer of a turn that used tools over several model messages: PRESERVABLE,
  and still so once a collection took the tool work before it (``CLOSING_ANSWER_KEY``);
* summaries written by a collector: PRESERVABLE;
* a clarification question or answer, as the file recorded it (``recorded_clarifications``):
  PRESERVABLE, JAATO's default for both; everything else: EPHEMERAL.

A message's figure is the one the file recorded for it when that recording covers everything
the message sends, else the counter's (JAATO's own figures leave out function calls and media).
Each leaf says which in ``metadata["counted_by"]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from gcengine.budget import (
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    SourceEntry,
)
from gcengine.conversation import (
    Figure,
    turn_key_of,
)
from gcengine.messages import (
    Message,
    MessageKind,
    PartType,
    Role,
    Turn,
)
from gcengine.tokens import (
    TokenCounter,
    count_message,
    count_messages,
)


def _recorded_message_leaves(recorded: InstructionBudget | None) -> Iterator[SourceEntry]:
    """The leaves of a recorded conversation that name exactly one message."""
    if recorded is None:
        return
    conversation = recorded.get_entry(InstructionSource.CONVERSATION)
    if conversation is None:
        return
    for _, entry in conversation.walk():
        if not entry.children and len(entry.message_ids) == 1:
            yield entry


def recorded_message_figures(recorded: InstructionBudget | None) -> dict[str, int]:
    """Per-message token figures a recorded budget holds."""
    return {entry.message_ids[0]: entry.tokens for entry in _recorded_message_leaves(recorded)}


CLARIFICATION_TURN_TYPES = frozenset({"clarification_q", "clarification_a"})
"""JAATO's ``ConversationTurnType`` values for a clarification question and its answer."""


def recorded_clarifications(recorded: InstructionBudget | None) -> frozenset[str]:
    """Messages a recorded budget names as clarifications: a leaf whose ``metadata["turn_type"]``
    is JAATO's ``clarification_q`` or ``clarification_a``.

    Only the agent knows that a question it asked, or the user's answer, settled something the
    rest of the work depends on, so the file is the only place that can say so. JAATO's default
    policy for both is preservable. Nothing else a recording says raises a policy: JAATO also
    records its one "turn summary" as preservable (the last answer of the session, wherever
    its turn was) and locks whatever user message comes first, a notice included.
    """
    return frozenset(
        entry.message_ids[0]
        for entry in _recorded_message_leaves(recorded)
        if entry.metadata.get("turn_type") in CLARIFICATION_TURN_TYPES
    )


_PARTS_JAATO_DOES_NOT_COUNT = frozenset({PartType.FUNCTION_CALL, PartType.INLINE_DATA})


def _recording_is_complete(message: Message) -> bool:
    return not any(part.type in _PARTS_JAATO_DOES_NOT_COUNT for part in message.parts)


RECORDED = "recorded"
"""What made a message's figure when the file recorded it (else the counter's name)."""


def message_figure(
    message: Message, counter: TokenCounter, recorded_figures: Mapping[str, int]
) -> tuple[int, str]:
    """A message's tokens in the budget, and what made the figure (``recorded`` or a counter)."""
    recorded = recorded_figures.get(message.message_id)
    if recorded is not None and _recording_is_complete(message):
        return recorded, RECORDED
    return count_message(message, counter), counter.name


def counted_figures(
    messages: Sequence[Message], counter: TokenCounter, recorded_figures: Mapping[str, int]
) -> Figure:
    """``message_figure`` for the messages of a history, those without a recorded figure
    counted together beforehand (``count_messages``: on several threads, for tiktoken)."""
    to_count = [
        message
        for message in messages
        if recorded_figures.get(message.message_id) is None or not _recording_is_complete(message)
    ]
    counts = dict(zip(map(id, to_count), count_messages(to_count, counter), strict=True))
    name = counter.name

    def figure(message: Message) -> tuple[int, str]:
        tokens = counts.get(id(message))
        if tokens is None:
            return message_figure(message, counter, recorded_figures)
        return tokens, name

    return figure


def role_label(message: Message) -> str:
    if message.kind is MessageKind.CHAT:
        if message.role is Role.MODEL:  # the commonest message: answered without its parts
            return "output (model)"
    elif message.kind is MessageKind.SUMMARY:
        return "summary"
    else:
        return "notice"
    if message.is_function_response:
        names = sorted({r.name for r in message.function_responses if r.name})
        return f"input (tool = {', '.join(names)})" if names else "input (tool)"
    return "input (external)"


CLOSING_ANSWER_KEY = "closes_tool_loop"
"""The message metadata key a collection sets on a closing answer it keeps while taking the
tool work before it. The answer is told by the turn's shape, and the turn no longer has that
shape: without the mark the next collection would see a plain answer (ephemeral) and take what
the policy kept, so one policy run twice would take more than run once."""


def closing_answer_ids(turn: Sequence[Message]) -> frozenset[str]:
    """The answer that closes a turn which took several model messages and used tools, or
    that a collection marked as one (``CLOSING_ANSWER_KEY``)."""
    marked = frozenset(
        [
            message.message_id
            for message in turn
            if message.metadata
            and message.role is Role.MODEL
            and message.metadata.get(CLOSING_ANSWER_KEY) is True
        ]
    )
    closing = _closing_answer(turn)
    return marked if closing is None else marked | {closing.message_id}


def _closing_answer(turn: Sequence[Message]) -> Message | None:
    """The text answer closing the model messages of ``turn``, when there are several and
    they used tools. One pass, each message's part types read once: a collection asks this
    of every turn it takes a part of, a budget rebuilt after it of every turn it reads."""
    answers, used_tools = 0, False
    closing: Message | None = None
    for message in turn:
        if message.role is not Role.MODEL:
            continue
        answers += 1
        types = [part.type for part in message.parts]  # as ``is_text_only``
        if types and types.count(PartType.TEXT) == len(types):
            closing = message
        elif PartType.FUNCTION_CALL in types:
            used_tools = True
    return closing if used_tools and answers >= 2 else None


def without_needless_marks(turn: Sequence[Message]) -> list[Message]:
    """``turn`` with the closing-answer mark taken off the answer its turn shows again to be
    the closing one (the tool work before it was put back): the message as it was before a
    collection marked it."""
    closing = _closing_answer(turn)
    if closing is None or closing.metadata.get(CLOSING_ANSWER_KEY) is not True:
        return list(turn)
    metadata = {k: v for k, v in closing.metadata.items() if k != CLOSING_ANSWER_KEY}
    unmarked = closing.model_copy(update={"metadata": metadata})
    return [unmarked if message is closing else message for message in turn]


def original_request(history: Sequence[Message]) -> int | None:
    """Where the user's first request is: the first user message that is not a tool result or
    notice."""
    for position, message in enumerate(history):
        if (
            message.role is Role.USER
            and message.kind is MessageKind.CHAT
            and not message.is_function_response
        ):
            return position
    return None


_ASIDE_OPENINGS = ("[Request interrupted by user", "<system-reminder>", "<task-notification>")
"""How rows a user did not type begin: an interruption, a reminder, a task notification."""


def is_request(message: Message) -> bool:
    """Whether a message is a request the user made: user text, not a tool result, a summary
    or notice, a meta row (Claude Code's ``isMeta``: skill text, reminders) or an
    interruption marker."""
    if (
        message.role is not Role.USER
        or message.kind is not MessageKind.CHAT
        or message.is_function_response
    ):
        return False
    source = message.metadata.get("source") if message.metadata else None
    if isinstance(source, dict) and source.get("isMeta") is True:
        return False
    return not message.text.lstrip().startswith(_ASIDE_OPENINGS)


def latest_request(history: Sequence[Message]) -> int | None:
    """Where the current task is: the latest request the user made (``is_request``), else
    the latest user message that is not a tool result."""
    fallback = None
    for position in range(len(history) - 1, -1, -1):
        message = history[position]
        if is_request(message):
            return position
        if (
            fallback is None
            and message.role is Role.USER
            and message.kind is MessageKind.CHAT
            and not message.is_function_response
        ):
            fallback = position
    return fallback


def is_agent_summary(message: Message) -> bool:
    """Whether a message is a summary an agent wrote when it compacted its own context
    (Claude Code's ``isCompactSummary``, Codex's ``compacted``, an OpenHands condensation),
    not one of the summary chain JAATO and this engine write (``[Context Summary``...)."""
    return message.kind is MessageKind.SUMMARY and not message.text.startswith(
        SUMMARY_CHAIN_OPENING
    )


SUMMARY_CHAIN_OPENING = "[Context Summary"
"""How every summary of the chain JAATO and this engine write begins."""


def message_policy(
    message: Message,
    original: str | None,
    closing: frozenset[str],
    clarifications: frozenset[str],
) -> GCPolicy:
    if message.message_id == original:
        return GCPolicy.LOCKED
    if (
        message.kind is MessageKind.SUMMARY
        or message.message_id in closing
        or message.message_id in clarifications
    ):
        return GCPolicy.PRESERVABLE
    return GCPolicy.EPHEMERAL


def turn_key(turn: Turn) -> str:
    """Budget key of a turn (``turn_key_of``)."""
    return turn_key_of(turn.index, turn.messages[0])


def turn_time(indices: Sequence[int | None], turn: int) -> tuple[float, float]:
    """When turn ``turn`` of a layout (its stable ``indices``) was created, relative to the
    session's start, and the span its messages take: ``(clock, width)``; message ``k`` of
    ``n`` was created at ``clock + k * width / n``.

    Times follow stable turn indices, not positions: uploaded turn ``i`` takes
    ``[i, i + 1/2)`` whatever was removed before it, so the budget entries of every turn a
    collection leaves alone are the same values after it, and a budget is updated by what a
    run changed rather than rebuilt. Turns a collector inserted (summaries, notices) share the
    half after the uploaded turn before them (``[-1/2, 0)`` at the start), in history order.
    Times increase along a history whose stable indices do, as the builder's always do.
    """
    index = indices[turn]
    if index is not None:
        return float(index), 0.5
    first = turn
    while first and indices[first - 1] is None:
        first -= 1
    end = turn + 1
    while end < len(indices) and indices[end] is None:
        end += 1
    before = indices[first - 1] if first else None
    width = 0.5 / (end - first)
    return (before if before is not None else -1) + 0.5 + (turn - first) * width, width
