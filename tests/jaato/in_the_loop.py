"""The project's plugins inside JAATO's own GC pass (CI's JAATO step; see swap.py).

Each plugin is loaded the way JAATO loads one (``discover_gc_plugins`` by its name), and
collected through ``shared.gc_support.run_gc`` with JAATO's ``GCConfig``, a real
``InstructionBudget`` laid out as a JAATO session lays its conversation out (a child per
message naming it), and JAATO's ``apply_gc_removal_list`` applied to the result, on a history
with tool calls, an audio attachment and a pinned turn; under JAATO's rules (the plugins'
default in JAATO) and under the engine's (``"rules": "engine"`` in the plugin's options).
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jaato import FunctionCall, Message, Part, Role, ToolResult
from shared import gc_support
from shared.instruction_budget import GCPolicy, InstructionBudget, InstructionSource, SourceEntry
from shared.plugins.gc import (
    GCConfig,
    GCResult,
    GCTriggerReason,
    discover_gc_plugins,
    ensure_tool_call_integrity,
    estimate_message_tokens,
    load_gc_from_file,
)
from shared.plugins.telemetry.null_plugin import NullTelemetryPlugin

OURS = [
    "gc_gcengine_truncate",
    "gc_gcengine_summarize",
    "gc_gcengine_hybrid",
    "gc_gcengine_budget",
    "gc_gcengine_reachability",
]
JAATOS = ["gc_truncate", "gc_summarize", "gc_hybrid", "gc_budget"]
# The strategies whose collections JAATO's rules change with a budget given: every turn that
# is not protected goes, the notice first in the history.
TAKE_EVERY_TURN = ["gc_gcengine_truncate", "gc_gcengine_summarize", "gc_gcengine_hybrid"]
RULES = ["jaato", "engine"]
TURNS = 24
PINNED = 3
PRESERVE = 4


def history() -> list[Message]:
    """``TURNS`` turns: a request, a tool call and its result, an answer; every fourth
    request carries audio, every turn reads a different file."""
    messages: list[Message] = []
    for turn in range(TURNS):
        request = [Part(text=f"Turn {turn}: look at module_{turn}.py and fix the bug in it.")]
        if turn % 4 == 1:
            request.append(Part(inline_data={"mime_type": "audio/wav", "data": b"\0" * 40_000}))
        messages.append(Message(role=Role.USER, parts=request))
        call = FunctionCall(id=f"call_{turn}", name="readFile", args={"path": f"module_{turn}.py"})
        messages.append(
            Message(role=Role.MODEL, parts=[Part(text="Reading."), Part(function_call=call)])
        )
        result = ToolResult(call_id=f"call_{turn}", name="readFile", result="x = 1\n" * 400)
        messages.append(Message(role=Role.TOOL, parts=[Part(function_response=result)]))
        messages.append(Message(role=Role.MODEL, parts=[Part(text=f"Fixed module_{turn}.py.")]))
    return messages


def jaatos_policy(n: int) -> GCPolicy:
    """A JAATO session's policy for message ``n``: the original request locked, the rest
    ephemeral."""
    return GCPolicy.LOCKED if n == 0 else GCPolicy.EPHEMERAL


def session_budget(
    messages: list[Message], layout: str = "messages", policy: Any = jaatos_policy
) -> InstructionBudget:
    """The budget a JAATO session keeps: its system prompt locked, and a conversation child per
    message (``msg_<n>``, naming it), the original request locked, the rest ephemeral; or, with
    ``layout="turns"``, those children inside a child per turn (``turn_<n>``), the shape of a
    budget JAATO restores from a session file this engine wrote."""
    budget = InstructionBudget.create_default(session_id="loop", context_limit=20_000)
    budget.set_entry(InstructionSource.SYSTEM, 2_000, GCPolicy.LOCKED)
    conversation = budget.get_entry(InstructionSource.CONVERSATION)
    for n, message in enumerate(messages):
        key, turn = f"msg_{n}", f"turn_{n // 4 + 1}"
        tokens = estimate_message_tokens(message)
        if layout == "messages":
            budget.add_child(
                InstructionSource.CONVERSATION,
                key,
                tokens,
                policy(n),
                label=turn,
                created_at=float(n),
                message_ids=[message.message_id],
            )
            continue
        if turn not in conversation.children:
            budget.add_child(InstructionSource.CONVERSATION, turn, 0, GCPolicy.PARTIAL)
        conversation.children[turn].children[key] = SourceEntry(
            source=InstructionSource.CONVERSATION,
            tokens=tokens,
            gc_policy=policy(n),
            label=key,
            created_at=float(n),
            message_ids=[message.message_id],
        )
    return budget


def usage(budget: InstructionBudget) -> dict[str, Any]:
    total = budget.total_tokens()
    return {
        "total_tokens": total,
        "prompt_tokens": total,
        "context_limit": budget.context_limit,
        "percent_used": budget.utilization_percent(),
        "turns": TURNS,
    }


def options(rules: str, **more: Any) -> dict[str, Any]:
    """A plugin's options as JAATO's loader hands them from a gc.json: JAATO's rules unless
    ``plugin_config`` says ``"rules": "engine"``; a summarizer named as a gc.json can name one
    (JAATO's rules have no default summarizer)."""
    given: dict[str, Any] = {"summarizer": "extractive", **more}
    if rules == "engine":
        given["rules"] = "engine"
    return given


def collect_in_jaato(
    name: str, layout: str = "messages", policy: Any = jaatos_policy, rules: str = "jaato"
) -> tuple[list[Message], list[Message], GCResult, InstructionBudget]:
    plugin = discover_gc_plugins()[name]()
    plugin.initialize(options(rules, preserve_recent_turns=PRESERVE, notify_on_gc=True))
    messages = history()
    budget = session_budget(messages, layout, policy)
    config = GCConfig(
        threshold_percent=80.0,
        target_percent=50.0,
        pressure_percent=90.0,
        preserve_recent_turns=PRESERVE,
        pinned_turn_indices=[PINNED],
    )
    context = usage(budget)
    assert context["percent_used"] > 80.0, "the history must start above the threshold"
    collect, reason = plugin.should_collect(context, config)
    assert collect
    assert reason is GCTriggerReason.THRESHOLD

    def apply(new: list[Message], result: GCResult, span: Any) -> None:
        if result.success:
            gc_support.apply_gc_removal_list(
                result, budget=budget, cache_plugin=None, on_trace=lambda _: None, gc_span=span
            )

    new_history, result = gc_support.run_gc(
        gc_plugin=plugin,
        history=list(messages),
        context_usage=context,
        gc_config=config,
        trigger_reason=reason,
        budget=budget,
        cache_plugin=None,
        telemetry=NullTelemetryPlugin(),
        on_trace=lambda _: None,
        on_collected=apply,
    )
    return messages, new_history, result, budget


def turns_of(messages: list[Message]) -> dict[str, int]:
    return {m.message_id: n // 4 for n, m in enumerate(messages)}


@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize("name", OURS)
def test_a_collection_inside_jaatos_gc_pass(name: str, rules: str) -> None:
    messages, new_history, result, budget = collect_in_jaato(name, rules=rules)
    assert isinstance(result, GCResult)
    assert result.success, result.error
    assert result.plugin_name == name
    assert result.trigger_reason is GCTriggerReason.THRESHOLD
    assert result.items_collected > 0
    assert result.removal_list
    # Usage came down, by JAATO's own budget once JAATO applied the removal list.
    assert budget.utilization_percent() < 80.0

    given = {id(m) for m in messages}
    turn = turns_of(messages)
    kept = [m for m in new_history if id(m) in given]
    inserted = [m for m in new_history if id(m) not in given]
    # Kept messages are the very objects given; what was inserted is JAATO's own shape.
    for message in inserted:
        assert message.role is Role.USER
        text = message.parts[0].text
        assert text.startswith(("[System: ", "[Context Summary"))
    kept_turns = {turn[m.message_id] for m in kept}
    # The original request, the pinned turn and the latest turns are all still there, whole.
    assert messages[0] in kept
    for protected in (PINNED, *range(TURNS - PRESERVE, TURNS)):
        assert protected in kept_turns
        assert sum(1 for m in kept if turn[m.message_id] == protected) == 4
    # Something of the audio-carrying turns went (they are the heaviest and oldest).
    assert len(kept) < len(messages)

    # Tool calls and results stay paired: JAATO's integrity repair has nothing to do.
    assert ensure_tool_call_integrity(list(new_history)) == new_history

    # JAATO's budget is in step with the history: each conversation child names a message
    # still there, and each kept message still has its child.
    conversation = budget.get_entry(InstructionSource.CONVERSATION)
    named = {i for child in conversation.children.values() for i in child.message_ids}
    assert named == {m.message_id for m in kept}

    protected = {0, PINNED, *range(TURNS - PRESERVE, TURNS)}  # 0: locked by JAATO's budget
    if name not in TAKE_EVERY_TURN:
        return
    if rules == "jaato":
        # JAATO's: every turn that is not protected went, whatever the target; the notice
        # first, as JAATO's plugins put it.
        assert kept_turns == protected
        assert new_history[0].parts[0].text.startswith("[System: ")
    else:
        # The engine's: truncate and summarize stopped at the target, before the newest
        # unprotected turns, and the notice is where the removed turns were, after the
        # original request (hybrid summarizes its whole middle generation once it must, and
        # the tool work of the original request's turn with it).
        if name != "gc_gcengine_hybrid":
            assert kept_turns > protected
            assert new_history[0] is messages[0]


@pytest.mark.parametrize("name", OURS)
def test_jaato_loads_the_projects_plugin_from_gc_json(name: str, tmp_path: Any) -> None:
    path = tmp_path / "gc.json"
    path.write_text(f'{{"type": "{name}", "preserve_recent_turns": 3, "target_percent": 50}}')
    loaded = load_gc_from_file(str(path))
    assert loaded is not None, "JAATO could not load the gc.json"
    plugin, config = loaded
    assert plugin.name == name
    assert type(plugin).__module__ == "gcengine.running.jaato_plugins"
    assert config.target_percent == 50


def test_discovery_keeps_jaatos_names_for_jaatos_plugins() -> None:
    found = discover_gc_plugins()
    for name in JAATOS:
        assert found[name].__module__.startswith("shared.plugins."), name
    for name in OURS:
        assert found[name].__module__ == "gcengine.running.jaato_plugins", name
        assert found[name]().name == name


def test_media_pressure_is_jaatos_reason() -> None:
    plugin = discover_gc_plugins()["gc_gcengine_budget"]()
    plugin.initialize({})
    config = GCConfig(media_bytes_threshold=1_000)
    collect, reason = plugin.should_collect({"percent_used": 1.0, "media_bytes": 5_000}, config)
    assert collect
    assert reason is GCTriggerReason.MEDIA_PRESSURE


@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize("name", OURS)
def test_a_budget_of_turn_children_stays_in_step(name: str, rules: str) -> None:
    """JAATO removes top-level children only: a turn child goes when every message it names
    went, and a turn that keeps a message keeps its child."""
    _, new_history, result, budget = collect_in_jaato(name, layout="turns", rules=rules)
    assert result.success, result.error
    kept = {m.message_id for m in new_history}
    conversation = budget.get_entry(InstructionSource.CONVERSATION)
    left = {
        key: {i for leaf in child.children.values() for i in leaf.message_ids}
        for key, child in conversation.children.items()
        if child.children  # not the summary child JAATO adds, which names no message
    }
    for key, named in left.items():
        assert named & kept, f"{key} names only messages that left the history"
    assert {i for named in left.values() for i in named} >= kept - {
        m.message_id for m in new_history if m.parts[0].text and m.parts[0].text.startswith("[")
    }


def engines_policy(n: int) -> GCPolicy:
    """The policies the engine's own budget gives (what a budget restored from a session
    file it wrote says): the original request locked, each tool call and its result
    ephemeral, requests and the answer closing a turn's tool work preservable."""
    if n == 0:
        return GCPolicy.LOCKED
    return GCPolicy.EPHEMERAL if n % 4 in (1, 2) else GCPolicy.PRESERVABLE


def test_a_closing_answer_kept_while_its_tool_work_goes_is_jaatos_object() -> None:
    """The budget strategy takes a turn's tool work and keeps the answer closing it, which the
    engine marks as a closing answer (a new copy of it in the engine's history): in JAATO's
    history the answer is still the very object JAATO gave."""
    messages, new_history, result, _ = collect_in_jaato("gc_gcengine_budget", policy=engines_policy)
    assert result.success, result.error
    given = {id(m) for m in messages}
    answers = [m for n, m in enumerate(messages) if n % 4 == 3]
    kept_answers = [m for m in answers if m in new_history]
    calls_gone = [m for n, m in enumerate(messages) if n % 4 == 1 and m not in new_history]
    assert calls_gone, "the collection must take tool work"
    assert len(kept_answers) == len(answers), "every closing answer stays"
    assert all(id(m) in given for m in kept_answers)


@pytest.mark.parametrize("enabled", [True, False], ids=["jaato-left-it-on", "jaato-left-it-off"])
@pytest.mark.parametrize("name", OURS)
def test_a_collection_leaves_the_cycle_collector_as_jaato_had_it(name: str, enabled: bool) -> None:
    """A plugin pauses Python's cycle collector for its own call only: after it, the collector
    is on or off as JAATO left it, and nothing JAATO froze was unfrozen."""
    was = gc.isenabled()
    gc.freeze()  # objects JAATO froze (as a server does before forking) must stay frozen
    frozen = gc.get_freeze_count()
    (gc.enable if enabled else gc.disable)()
    try:
        _, _, result, _ = collect_in_jaato(name)
        assert result.success, result.error
        assert gc.isenabled() is enabled
        # Still frozen (a frozen object the collection let go of is freed, so the count may
        # drop), and nothing newly frozen.
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


def test_a_summarizer_of_jaatos_runs_with_the_collector_as_jaato_had_it() -> None:
    """JAATO's own code (a summarizer callable, which may call an LLM for as long as it
    takes) never runs with the collector paused by the plugin."""
    seen: list[bool] = []

    def summarizer(conversation: str) -> str:
        seen.append(gc.isenabled())
        return "The user asked for fixes to the modules."

    plugin = discover_gc_plugins()["gc_gcengine_summarize"]()
    plugin.initialize({"preserve_recent_turns": PRESERVE, "summarizer": summarizer})
    messages = history()
    budget = session_budget(messages)
    config = GCConfig(threshold_percent=80.0, target_percent=50.0, preserve_recent_turns=PRESERVE)
    assert gc.isenabled()
    _, result = plugin.collect(
        messages, usage(budget), config, GCTriggerReason.THRESHOLD, budget=budget
    )
    assert result.success, result.error
    assert seen == [True]


def answer_of(plugin: Any, messages: list[Message], budget: InstructionBudget) -> Any:
    """What a collection gives, comparably: the history by identity, the removals' keys,
    tokens and messages, the figures."""
    config = GCConfig(threshold_percent=80.0, target_percent=50.0, preserve_recent_turns=PRESERVE)
    new, result = plugin.collect(
        messages, usage(budget), config, GCTriggerReason.THRESHOLD, budget=budget
    )
    removals = [(r.child_key, r.tokens_freed, list(r.message_ids)) for r in result.removal_list]
    kept = [id(m) if id(m) in {id(g) for g in messages} else m.parts[0].text for m in new]
    return kept, removals, result.tokens_before, result.tokens_after


def plugin_named(name: str, rules: str) -> Any:
    """A plugin as JAATO loads it, under either rules."""
    plugin = discover_gc_plugins()[name]()
    plugin.initialize(options(rules, preserve_recent_turns=PRESERVE))
    return plugin


def fresh_plugin(rules: str) -> Any:
    """The summarize plugin: its summary is written from the messages as the plugin read
    them, so a message read stale would show in the answer."""
    return plugin_named("gc_gcengine_summarize", rules)


@pytest.mark.parametrize("rules", RULES)
def test_a_plugin_collecting_again_answers_as_a_new_one(rules: str) -> None:
    """A plugin keeps what it read of a history for the next collection: whatever JAATO
    changed in between (a part replaced, a message's budget figure or policy), the answer is
    the one a plugin seeing the history for the first time gives."""
    plugin = fresh_plugin(rules)
    messages = history()
    budget = session_budget(messages)
    first = answer_of(plugin, messages, budget)
    assert first == answer_of(fresh_plugin(rules), messages, budget)
    # The same history and budget again: the same answer.
    assert answer_of(plugin, messages, budget) == first

    # JAATO replaces a part of an old request (as its media eviction replaces parts) and
    # rebuilds the budget: the summary follows the new text.
    messages[4].parts[0] = Part(text="Turn 1: rename the zebra_crossing module, please.")
    budget = session_budget(messages)
    again = answer_of(plugin, messages, budget)
    assert again == answer_of(fresh_plugin(rules), messages, budget)
    assert again != first

    # Only the budget changed: the old turns are now locked, and the plugin reads that.
    budget = session_budget(
        messages, policy=lambda n: GCPolicy.LOCKED if n < 40 else jaatos_policy(n)
    )
    locked = answer_of(plugin, messages, budget)
    assert locked == answer_of(fresh_plugin(rules), messages, budget)
    assert locked != again

    # JAATO appends turns: the answer is a new plugin's on the longer history.
    messages += history()[:8]
    budget = session_budget(messages)
    assert answer_of(plugin, messages, budget) == answer_of(fresh_plugin(rules), messages, budget)


@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize("layout", ["messages", "turns"])
@pytest.mark.parametrize("name", ["gc_gcengine_summarize", "gc_gcengine_budget"])
def test_a_plugin_collecting_after_its_own_collection_answers_as_a_new_one(
    name: str, layout: str, rules: str
) -> None:
    """What a session does between two collections: the history the plugin answered (less
    what it removed, with the summary it inserted), turns appended, the budget rebuilt from
    it. The plugin, which keeps what it read the time before, answers as a new one."""
    plugin = plugin_named(name, rules)
    messages = history()
    config = GCConfig(threshold_percent=80.0, target_percent=50.0, preserve_recent_turns=PRESERVE)
    budget = session_budget(messages, layout)
    collected, result = plugin.collect(
        messages, usage(budget), config, GCTriggerReason.THRESHOLD, budget=budget
    )
    assert result.success, result.error
    assert len(collected) < len(messages)
    grown = [*collected, *history()[:12]]
    budget = session_budget(grown, layout)
    again = answer_of(plugin, grown, budget)
    assert again == answer_of(plugin_named(name, rules), grown, budget)
    assert again[1], "the second collection takes something too"
    # Collected again, and grown again: still a new plugin's answer.
    after, result = plugin.collect(
        grown, usage(budget), config, GCTriggerReason.THRESHOLD, budget=budget
    )
    grown = [*after, *history()[:8]]
    budget = session_budget(grown, layout)
    assert answer_of(plugin, grown, budget) == answer_of(plugin_named(name, rules), grown, budget)


def test_a_history_converted_at_once_reads_as_its_parts_one_by_one() -> None:
    """A plugin converts a whole history at once (text parts together, the others one by
    one): each message reads as its JAATO parts converted one at a time, in their order,
    a part carrying nothing left out, under the message's own id and role."""
    from gcengine.running.jaato_reading import engine_messages, engine_part

    call = FunctionCall(id="call_0", name="readFile", args={"path": "a.py"})
    result = ToolResult(call_id="call_0", name="readFile", result={"text": "print(1)"})
    messages = [
        Message(role=Role.USER, parts=[Part(text="first"), Part(), Part(text="second")]),
        Message(role=Role.MODEL, parts=[Part(thought="thinking"), Part(function_call=call)]),
        Message(role=Role.USER, parts=[Part(function_response=result), Part(text="after")]),
        Message(role=Role.MODEL, parts=[]),
        Message(role=Role.USER, parts=[Part(inline_data={"mime_type": "audio/wav", "data": b"1"})]),
    ]
    converted = engine_messages(messages)
    assert [m.message_id for m in converted] == [m.message_id for m in messages]
    assert [m.role.value for m in converted] == [m.role.value for m in messages]
    for message, copy in zip(messages, converted, strict=True):
        one_by_one = [p for p in map(engine_part, message.parts) if p is not None]
        assert copy.parts == one_by_one
    assert [p.text for p in converted[0].parts] == ["first", "second"]


@st.composite
def jaato_histories(draw: st.DrawFn) -> list[Message]:
    """A JAATO history of a few turns: each a request (with audio, sometimes), then model
    text, thoughts, calls answered one by one, together or not at all, results sent as tool
    or user messages, a part with text and a call (text wins), an empty message; sometimes
    after model text whose request is gone."""
    messages: list[Message] = []
    calls = 0
    if draw(st.booleans()):  # a history whose first turn's request is gone already
        call = FunctionCall(id="call_before", name="readFile", args={"path": "a.py"})
        result = ToolResult(call_id="call_before", name="readFile", result="w" * 800)
        messages += [
            Message(role=Role.MODEL, parts=[Part(text="Going on. " * 40)]),
            Message(role=Role.MODEL, parts=[Part(function_call=call)]),
            Message(role=Role.TOOL, parts=[Part(function_response=result)]),
        ]
    for turn in range(draw(st.integers(1, 9))):
        request = [Part(text=f"Turn {turn}: " + "fix it " * draw(st.integers(1, 60)))]
        if draw(st.integers(0, 5)) == 0:
            request.append(Part(inline_data={"mime_type": "audio/wav", "data": b"\0" * 4_000}))
        messages.append(Message(role=Role.USER, parts=request))
        for _ in range(draw(st.integers(0, 4))):
            step = draw(
                st.sampled_from(
                    ["text", "thought", "call", "parallel", "unanswered", "both", "empty"]
                )
            )
            size = draw(st.integers(1, 300))
            if step in ("text", "thought", "empty"):
                part = Part(text="x " * size) if step == "text" else Part(thought="y " * size)
                messages.append(Message(role=Role.MODEL, parts=[] if step == "empty" else [part]))
                continue
            ids = [f"call_{calls + n}" for n in range(2 if step == "parallel" else 1)]
            calls += len(ids)
            made = [FunctionCall(id=i, name="readFile", args={"path": i}) for i in ids]
            parts = [Part(function_call=call) for call in made]
            if step == "both":  # text and a call in one part: JAATO's text wins
                parts = [Part(text="calling", function_call=made[0])]
            messages.append(Message(role=Role.MODEL, parts=parts))
            if step == "unanswered":
                continue
            role = draw(st.sampled_from([Role.TOOL, Role.USER]))
            results = [
                Part(function_response=ToolResult(call_id=i, name="readFile", result="z" * size))
                for i in ids
            ]
            together = draw(st.booleans())
            for group in [results] if together else [[r] for r in results]:
                messages.append(Message(role=role, parts=group))
        if draw(st.booleans()):
            closing = "Done. " * draw(st.integers(1, 100))
            messages.append(Message(role=Role.MODEL, parts=[Part(text=closing)]))
    return messages


def engine_messages_answer(
    name: str, rules: str, messages: list[Message], budget: InstructionBudget, config: GCConfig
) -> Any:
    """``answer_of`` on the engine's path without the plugin's flat reading: every message
    converted to the engine's, the index made from them, the strategy run on them, and its
    answer put in JAATO's terms as the plugin does (a kept copy is the JAATO message at its
    position, or under its id after it for a closing answer the engine marked). The budget
    is read without the history, so its leaves are matched to messages by id and removals
    made the general way, never by position as the plugin does for a budget in order."""
    from gcengine.gc.plan import index_by_id, index_in_order
    from gcengine.messages import MessageKind, turn_layout
    from gcengine.running.jaato_plugins import JAATO_PLUGINS, _jaato, engine_config, jaato_removals
    from gcengine.running.jaato_reading import engine_messages, read_budget
    from gcengine.tokens import ApproxCounter

    counter = ApproxCounter()
    spec = JAATO_PLUGINS[name].spec
    given = options(rules, preserve_recent_turns=config.preserve_recent_turns, notify_on_gc=True)
    strategy = spec.plugin()
    strategy.initialize(given)
    copies = engine_messages(messages)
    reading = read_budget(budget)
    index = None
    if not reading.copied:
        layout = turn_layout(copies)
        index = (
            index_in_order(
                copies, layout, reading.tokens, reading.policies, reading.created, reading.named
            )
            or index_by_id(copies, layout, reading.leaves(), counter, budgeted=True)
        )[0]
    new, result = strategy.collect(
        copies,
        usage(budget),
        engine_config(spec, config, given),
        GCTriggerReason.THRESHOLD,
        reading.budget,
        counter=counter,
        conversation=index,
    )
    at = {id(copy): position for position, copy in enumerate(copies)}
    kept: list[Any] = []
    for message in new:
        position = at.get(id(message))
        if position is None and message.kind is MessageKind.CHAT:
            after = next((p for p in reversed(kept) if isinstance(p, int)), -1) + 1
            position = next(
                p
                for p in range(after, len(copies))
                if copies[p] is not None and copies[p].message_id == message.message_id
            )
        kept.append(position if position is not None else message.text)
    removals = [
        (r.child_key, r.tokens_freed, list(r.message_ids))
        for r in jaato_removals(result.removal_list, reading, _jaato())
    ]
    return compared(kept, removals, result)


def compared(kept: list[Any], removals: list[Any], result: Any) -> tuple[Any, ...]:
    """What the flat-reading property compares of a collection: the history kept, the
    removals and the result's figures and details."""
    return (
        kept,
        removals,
        result.items_collected,
        result.tokens_before,
        result.tokens_after,
        result.details,
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=jaato_histories(),
    name=st.sampled_from(OURS),
    rules=st.sampled_from(RULES),
    layout=st.sampled_from(["messages", "turns"]),
    policies=st.lists(
        st.sampled_from([GCPolicy.EPHEMERAL, GCPolicy.PRESERVABLE, GCPolicy.LOCKED]), min_size=1
    ),
    target=st.integers(10, 70),
    preserve=st.integers(0, 4),
    percent=st.integers(60, 140),
)
def test_the_plugins_flat_reading_decides_as_the_engines_messages(
    messages: list[Message],
    name: str,
    rules: str,
    layout: str,
    policies: list[GCPolicy],
    target: int,
    preserve: int,
    percent: int,
) -> None:
    """The plugin reads JAATO's history as flat lists, making the engine's copy of a message
    only when the strategy reads it: on any history, budget and policy it answers as the
    strategy run on every message converted (the same history kept, summaries and notices,
    removals, figures and details)."""
    budget = session_budget(messages, layout, lambda n: policies[n % len(policies)])
    budget.context_limit = max(1, budget.total_tokens() * 100 // percent)
    config = GCConfig(
        threshold_percent=50.0,
        target_percent=float(target),
        pressure_percent=90.0,
        preserve_recent_turns=preserve,
    )
    plugin = discover_gc_plugins()[name]()
    plugin.initialize(options(rules, preserve_recent_turns=preserve, notify_on_gc=True))
    new, result = plugin.collect(
        messages, usage(budget), config, GCTriggerReason.THRESHOLD, budget=budget
    )
    where = {id(m): position for position, m in enumerate(messages)}
    kept = [where.get(id(m), m.parts[0].text if m.parts else None) for m in new]
    removals = [(r.child_key, r.tokens_freed, list(r.message_ids)) for r in result.removal_list]
    flat = compared(kept, removals, result)
    expected = engine_messages_answer(name, rules, messages, budget, config)
    # The engine writes a summary or notice as JAATO's helper does: compared by their text.
    assert flat[1:] == expected[1:]
    assert [k if isinstance(k, int) else "written" for k in flat[0]] == [
        k if isinstance(k, int) else "written" for k in expected[0]
    ]
