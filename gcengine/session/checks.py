"""What a loaded session's own records say is off: figures that drift from a fresh count
(``token_drift``), tool results without their calls and calls without results
(``tool_pair_report``)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from gcengine.budget import (
    InstructionSource,
)
from gcengine.conversation import (
    index_of,
)
from gcengine.messages import (
    Message,
    ToolPairProblem,
    tool_pair_problems,
)
from gcengine.session.figures import RECORDED, recorded_message_figures
from gcengine.session.model import Session
from gcengine.tokens import (
    TokenCounter,
    count_message,
    counter_by_name,
)


class MessageDrift(BaseModel):
    message_id: str
    label: str
    recorded: int
    counted: int

    @property
    def difference(self) -> int:
        return self.counted - self.recorded


class TokenDrift(BaseModel):
    """How far the figures a file recorded are from what the engine counts."""

    counter: str
    messages: list[MessageDrift]
    recorded_total: int
    counted_total: int
    provider_prompt_tokens: int | None
    counted_context_tokens: int

    @property
    def difference(self) -> int:
        return self.counted_total - self.recorded_total

    @property
    def difference_percent(self) -> float | None:
        if self.recorded_total == 0:
            return None
        return self.difference / self.recorded_total * 100


def message_counts(
    session: Session, counter: TokenCounter, *, recorded: bool = False
) -> Callable[[Message], int]:
    """``count_message(m, counter)``, taken from the budget for the history messages its
    builder counted with a counter of the same name, counted for any other message; with
    ``recorded``, the figures the file recorded are taken from the budget too: what the
    session says each message costs, as its runs and replays count it.

    A drift check follows a load, and the loader's counts used to be found again in the
    counter's content cache; that cache is bounded now, and a long session outgrows it, so
    only the messages whose figure the file recorded are counted again (drift compares the
    two). Scoring what a run removed asks for tens of thousands of messages' figures the
    budget holds, recorded ones included, so that the tokens it says went are the run's.
    """
    index = index_of(session.budget.get_entry(InstructionSource.CONVERSATION))
    known: dict[int, tuple[Message, int]] = {}
    if index is not None and index.counted_by is not None and index.describes(session.history):
        taken = {counter.name, RECORDED} if recorded else {counter.name}
        known = {
            id(message): (message, tokens)
            for message, tokens, counted_by in zip(
                index.messages, index.tokens, index.counted_by, strict=True
            )
            if counted_by in taken
        }

    def count(message: Message) -> int:
        figure = known.get(id(message))
        if figure is not None and figure[0] is message:
            return figure[1]
        return count_message(message, counter)

    return count


def token_drift(session: Session, counter: TokenCounter | None = None) -> TokenDrift:
    """Compare recorded per-message figures (and the provider's prompt size) with fresh counts."""
    counter = counter or counter_by_name(session.token_counter)
    figures = recorded_message_figures(session.recorded_budget)
    conversation = session.budget.get_entry(InstructionSource.CONVERSATION)
    labels = {  # of the messages compared: those the file recorded a figure for
        entry.message_ids[0]: entry.label or ""
        for entry in (conversation.leaves() if conversation and figures else ())
        if entry.message_ids
    }
    counts = list(map(message_counts(session, counter), session.history))
    drifts = [
        MessageDrift(
            message_id=message.message_id,
            label=labels.get(message.message_id, ""),
            recorded=figures[message.message_id],
            counted=counted,
        )
        for message, counted in zip(session.history, counts, strict=True)
        if message.message_id in figures
    ]
    # What the model was sent: the messages, the system instructions the file holds, and what
    # the file does not hold but its recorded usage shows (a locked entry of the budget).
    counted_context = (
        sum(counts)
        + sum(counter.count(i.text) for i in session.system_instructions)
        + (session.unseen_overhead or 0)
    )
    return TokenDrift(
        counter=counter.name,
        messages=drifts,
        recorded_total=sum(d.recorded for d in drifts),
        counted_total=sum(d.counted for d in drifts),
        provider_prompt_tokens=session.recorded_prompt_tokens,
        counted_context_tokens=counted_context,
    )


def tool_pair_report(session: Session) -> list[ToolPairProblem]:
    """Every tool result without its call and every call without its result, in the session's
    context and then in each sub-agent's conversation (see ``tool_pair_problems``)."""
    problems = tool_pair_problems(session.history)
    for agent in session.subagents:
        problems.extend(tool_pair_problems(agent.history, agent.agent_id))
    return problems
