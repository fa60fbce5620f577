"""Replaying a session as the agent lived it, turn by turn, under a policy.

Before each turn is sent (``pre_message``, when ``check_before_send``) and after it (the
post-turn check), the strategy's ``should_collect`` decides; a collection runs on the history
as it stands then. The series this returns draws the sawtooth of threshold mode (climb to the
threshold, fall to the target) and the ripple of continuous mode (a small collection whenever
usage passes the target).

It is incremental: usage is a running total of per-message figures (the same figures the budget
builder uses), and the budget is built only when a collection runs, over the history then in
the window, never over the whole session again. Each message's figure is worked out once per
replay and reused by every budget built afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field

from gcengine._fast import cyclic_gc_paused
from gcengine.budget import InstructionBudget, InstructionSource
from gcengine.config import GCConfig
from gcengine.gc.registry import load_gc_plugin
from gcengine.gc.run import plugin_options, run_collection
from gcengine.gc.types import GCPlugin, GCResult, GCTriggerReason
from gcengine.messages import Message
from gcengine.session import Session, message_figure, rebuild_budget, recorded_message_figures
from gcengine.tokens import TokenCounter, counter_by_name

Point = Literal["pre_message", "post_turn"]


class SimulationStep(BaseModel):
    """Context usage at one check point; ``tokens_after`` differs only when GC ran there."""

    turn_index: int | None
    point: Point
    tokens_before: int
    tokens_after: int
    collected: bool = False


class SimulationEvent(BaseModel):
    turn_index: int | None
    point: Point
    reason: GCTriggerReason
    result: GCResult


class Simulation(BaseModel):
    plugin: str
    context_limit: int
    threshold_percent: float
    target_percent: float
    pressure_percent: float | None
    continuous_mode: bool
    steps: list[SimulationStep] = Field(default_factory=list)
    events: list[SimulationEvent] = Field(default_factory=list)

    def percent(self, tokens: int) -> float:
        return tokens / self.context_limit * 100 if self.context_limit else 0.0

    @property
    def peak_percent(self) -> float:
        return max((self.percent(s.tokens_before) for s in self.steps), default=0.0)


class _Figures:
    """Each message's budget figure (``message_figure``), worked out once per replay.

    The window's budget is built again at every collection from messages that do not change,
    and working their figures out (serialising tool payloads to count them) was most of it.
    """

    def __init__(self, counter: TokenCounter, recorded: Mapping[str, int]) -> None:
        self._counter = counter
        self._recorded = recorded
        self._known: dict[str, tuple[Message, tuple[int, str]]] = {}

    def __call__(self, message: Message) -> tuple[int, str]:
        known = self._known.get(message.message_id)
        if known is None or known[0] is not message:
            figure = message_figure(message, self._counter, self._recorded)
            known = self._known[message.message_id] = (message, figure)
        return known[1]

    def budget(
        self,
        state: Session,
        counter: TokenCounter,
        built: tuple[InstructionBudget, int] | None = None,
    ) -> InstructionBudget:
        return rebuild_budget(state, counter, figure=self, built=built)

    def budget_after(
        self, state: Session, counter: TokenCounter, _before: InstructionBudget
    ) -> InstructionBudget:
        """``run_collection``'s rebuild: every figure is known here already."""
        return self.budget(state, counter)


def simulate(
    session: Session, config: GCConfig, plugin: GCPlugin | str | None = None
) -> Simulation:
    """The per-turn usage series and GC events of ``session`` replayed under ``config``."""
    if plugin is None or isinstance(plugin, str):
        plugin = load_gc_plugin(plugin or config.plugin, plugin_options(config))
    with cyclic_gc_paused():
        return _replay(session, config, plugin)


def _replay(session: Session, config: GCConfig, plugin: GCPlugin) -> Simulation:
    counter = counter_by_name(session.token_counter)
    # Collections never change a message, only which are in the window; nor the recorded
    # conversation, so the recorded figures hold for the whole replay.
    figures = _Figures(counter, recorded_message_figures(session.recorded_budget))
    state = session.model_copy(update={"history": []})
    state.budget = figures.budget(state, counter)
    base = state.budget.total_tokens()  # everything outside the conversation
    window: list[Message] = []
    window_tokens = 0
    turns_done = 0
    simulation = Simulation(
        plugin=plugin.name,
        context_limit=session.context_limit,
        threshold_percent=config.threshold_percent,
        target_percent=config.target_percent,
        pressure_percent=config.pressure_percent,
        continuous_mode=config.continuous_mode,
    )

    def check(turn_index: int | None, point: Point) -> None:
        nonlocal window, window_tokens, state, base
        tokens = base + window_tokens
        usage = {
            "total_tokens": tokens,
            "context_limit": session.context_limit,
            "percent_used": simulation.percent(tokens),
            "turns": turns_done,
        }
        wanted, reason = plugin.should_collect(usage, config)
        step = SimulationStep(
            turn_index=turn_index, point=point, tokens_before=tokens, tokens_after=tokens
        )
        simulation.steps.append(step)
        if not wanted or reason is None:
            return
        reason = GCTriggerReason.PRE_MESSAGE if point == "pre_message" else reason
        # The window is the history after the last collection plus the turns since: only those
        # are added to the budget it had then.
        built = state.budget, len(state.history)
        state = state.model_copy(update={"history": list(window)})
        state.budget = figures.budget(state, counter, built)
        outcome = run_collection(state, config, reason, plugin, figures.budget_after)
        simulation.events.append(
            SimulationEvent(
                turn_index=turn_index, point=point, reason=reason, result=outcome.result
            )
        )
        if not outcome.result.success:
            return
        state = outcome.session
        window = list(state.history)
        conversation = outcome.budget_after.get_entry(InstructionSource.CONVERSATION)
        window_tokens = conversation.total_tokens() if conversation else 0
        base = outcome.budget_after.total_tokens() - window_tokens
        step.tokens_after = base + window_tokens
        step.collected = True

    for turn in session.turns():
        if config.check_before_send:
            check(turn.index, "pre_message")
        for message in turn.messages:
            window.append(message)
            window_tokens += figures(message)[0]
        turns_done += 1
        check(turn.index, "post_turn")
    return simulation
