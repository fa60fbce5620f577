"""Pausing Python's cycle collector is the caller's choice, never the library's.

``gc.disable()`` is process-wide: a library call that paused it would pause it for every other
thread of a web server too. So loading, running, replaying and planning leave it exactly as the
caller had it, during the call as well as after; the CLI, which owns its process, opts in, and
no other module of the engine touches the collector.
"""

from __future__ import annotations

import ast
import gc
import json
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

import gcengine
from gcengine import ApproxCounter, Session, cyclic_gc_paused
from gcengine.synthetic import SessionShape, generate_session_file


class WatchingCounter(ApproxCounter):
    """Counts like ``ApproxCounter`` and notes whether the collector was on at each count."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[bool] = set()

    def count(self, text: str) -> int:
        self.seen.add(gc.isenabled())
        return super().count(text)


class WatchingSummarizer:
    """A summarizer (called inside a strategy's collect) that notes the collector's state."""

    name = "watching"

    def __init__(self) -> None:
        self.seen: set[bool] = set()

    def summarize(self, request: Any) -> str:
        self.seen.add(gc.isenabled())
        return "the user asked for 3 things"


@pytest.fixture(params=[True, False], ids=["caller-left-it-on", "caller-left-it-off"])
def collector(request: pytest.FixtureRequest) -> Iterator[bool]:
    """The collector as the caller leaves it; restored after the test whatever happens."""
    was_enabled = gc.isenabled()
    if request.param:
        gc.enable()
    else:
        gc.disable()
    try:
        yield bool(request.param)
    finally:
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def session_over_target(counter: gcengine.TokenCounter, turns: int = 40) -> Session:
    session = gcengine.load_session(
        generate_session_file(SessionShape(turns=turns, seed=5)), counter=counter
    )
    session = session.model_copy(update={"context_limit": session.budget.total_tokens()})
    session.budget = gcengine.rebuild_budget(session, counter)
    return session


def summarizing_policy(summarizer: WatchingSummarizer) -> gcengine.GCConfig:
    # A summarizer object is passed programmatically, as plugin_config allows.
    return gcengine.load_gc_config(
        {"type": "summarize", "plugin_config": {"summarizer": summarizer}}, env={}
    )


def test_loading_leaves_the_collector_as_the_caller_left_it(collector: bool) -> None:
    counter = WatchingCounter()
    data = json.dumps(generate_session_file(SessionShape(turns=20, seed=3)))
    gcengine.load_session(data, counter=counter)
    assert counter.seen == {collector}
    assert gc.isenabled() is collector


def test_running_leaves_the_collector_as_the_caller_left_it(collector: bool) -> None:
    session = session_over_target(ApproxCounter())
    summarizer = WatchingSummarizer()
    outcome = gcengine.run_gc(session, summarizing_policy(summarizer))
    assert outcome.result.success
    assert outcome.result.items_collected > 0
    assert summarizer.seen == {collector}
    assert gc.isenabled() is collector


def test_replaying_leaves_the_collector_as_the_caller_left_it(collector: bool) -> None:
    session = session_over_target(ApproxCounter())
    session = session.model_copy(update={"context_limit": session.context_limit // 3})
    summarizer = WatchingSummarizer()
    replay = gcengine.simulate(session, summarizing_policy(summarizer))
    assert replay.events
    assert summarizer.seen == {collector}
    assert gc.isenabled() is collector


def test_planning_leaves_the_collector_as_the_caller_left_it(collector: bool) -> None:
    counter = WatchingCounter()
    session = session_over_target(ApproxCounter(), turns=20)
    # Messages the budget holds no figures for: planning them counts each with ``counter``.
    session = session.model_copy(update={"history": [m.model_copy() for m in session.history]})
    frozen = gc.get_freeze_count()
    items = gcengine.plan_items(session, counter=counter)
    seen: set[bool] = set()

    def watched(items: Iterable[gcengine.PlannerItem]) -> Iterator[gcengine.PlannerItem]:
        for item in items:
            seen.add(gc.isenabled())  # read inside plan_context
            yield item

    plan = gcengine.plan_context(
        watched(items), gcengine.session_caps(session), gcengine.PlannerConfig()
    )
    assert plan.included
    assert counter.seen == {collector}
    assert seen == {collector}
    assert gc.isenabled() is collector
    assert gc.get_freeze_count() == frozen


def test_only_the_command_line_touches_the_collector() -> None:
    """The rule, read from the source: no library module pauses, freezes or switches the
    collector; the CLI (an entry point, owning its process) pauses it around its work, and
    ``gcengine.cyclic_gc_paused`` is there for other entry points (a background worker).
    The one exception is a JAATO plugin's ``collect`` (``running/jaato_plugins.py``): JAATO,
    not the engine, owns that process, so the plugin pauses the collector for its own call
    only, and only when the call runs no code of JAATO's (in-the-loop tests check both)."""
    package = Path(gcengine.__file__).resolve().parent
    touching: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = (
                node.id
                if isinstance(node, ast.Name)
                else node.attr
                if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "gc"
                else None
            )
            if name in {"cyclic_gc_paused", "disable", "enable", "freeze", "unfreeze"}:
                touching.setdefault(str(path.relative_to(package)), set()).add(name)
    assert touching == {
        "_fast.py": {"disable", "enable", "freeze", "unfreeze"},  # the pause itself
        "cli.py": {"cyclic_gc_paused"},
        "running/jaato_plugins.py": {"cyclic_gc_paused"},
    }


def test_pausing_is_an_opt_in_that_restores_the_callers_state(collector: bool) -> None:
    counter = WatchingCounter()
    data = json.dumps(generate_session_file(SessionShape(turns=5, seed=3)))
    with cyclic_gc_paused():
        gcengine.load_session(data, counter=counter)
        with cyclic_gc_paused():  # nested: the inner one must not switch it back on
            pass
        assert not gc.isenabled()
    assert counter.seen == {False}
    assert gc.isenabled() is collector


def test_pauses_on_two_threads_keep_the_collector_off_until_the_last_ends(
    collector: bool,
) -> None:
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with cyclic_gc_paused():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with cyclic_gc_paused():
        second_in.set()
        first_out.wait(5)
        seen.append(gc.isenabled())  # the first pause has ended; this one has not
    thread.join(5)

    assert seen == [False]
    assert gc.isenabled() is collector


def test_the_command_line_pauses_the_collector_for_its_work_and_restores_it(
    collector: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gcengine.cli

    path = tmp_path / "session.json"
    path.write_text(json.dumps(generate_session_file(SessionShape(turns=5, seed=3))))
    seen: set[bool] = set()
    load = gcengine.cli.load_session

    def watched_load(source: Any) -> Session:
        seen.add(gc.isenabled())
        return load(source)

    monkeypatch.setattr(gcengine.cli, "load_session", watched_load)
    assert gcengine.cli.main(["inspect", str(path)]) == 0
    assert seen == {False}
    assert gc.isenabled() is collector


def generation_of(value: object) -> int | None:
    return next(
        (
            generation
            for generation in range(3)
            if any(tracked is value for tracked in gc.get_objects(generation=generation))
        ),
        None,
    )


@pytest.fixture
def on_with_nothing_frozen() -> Iterator[None]:
    was_enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    gc.unfreeze()
    gc.enable()
    try:
        yield
    finally:
        if frozen:
            gc.freeze()
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def test_what_outlives_a_pause_goes_to_the_oldest_generation(on_with_nothing_frozen: None) -> None:
    """So the next collections do not walk a session read back as young objects."""
    with cyclic_gc_paused():
        kept = [{"message": number} for number in range(3)]

    assert generation_of(kept) == 2
    assert gc.get_freeze_count() == 0


def test_objects_the_caller_froze_stay_frozen_and_nothing_is_moved(
    on_with_nothing_frozen: None,
) -> None:
    made_before = [{"frozen": True}]
    gc.freeze()
    try:
        with cyclic_gc_paused():
            kept = [{"message": 1}]
        gc.disable()  # a young collection now would move it on, if only one step

        # Still frozen, in no generation (the count of frozen objects is no test: a frozen
        # object that dies leaves it).
        assert generation_of(made_before) is None
        assert generation_of(kept) in (0, 1)
    finally:
        gc.unfreeze()


def test_nothing_is_moved_when_the_caller_left_the_collector_off() -> None:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            kept = [{"message": 1}]
        assert generation_of(kept) in (0, 1)
    finally:
        if was_enabled:
            gc.enable()
