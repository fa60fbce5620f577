"""``_fast.construct`` builds exactly what pydantic's ``model_construct`` builds.

``construct`` fills a model's private attributes itself, to skip work ``model_construct`` does
on every call; a pydantic release that changed those attributes would break it silently. So
for every model the engine builds with it (found in the source, not listed by hand), both are
compared field by field, with every field given and with only the required ones.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import gcengine
from gcengine import (
    FunctionCall,
    FunctionResponse,
    GCPolicy,
    GCRemovalItem,
    GCResult,
    GCTriggerReason,
    InlineData,
    InstructionBudget,
    InstructionSource,
    Message,
    MessageKind,
    OpaquePart,
    Part,
    PartType,
    Role,
    SourceEntry,
    Turn,
)
from gcengine._fast import construct, entry_maker, set_fresh
from gcengine.gc.segments import SegmentKind
from gcengine.gc.stash import RecordedLeaf, Stash, StashedSegment
from gcengine.planner.model import ItemRole, PlannerItem, Priority, Source
from gcengine.quality.anchors import AnchorClass
from gcengine.quality.prompt_cache import PromptRequest
from gcengine.quality.retention import (
    AnchorRetention,
    ClassRetention,
    InventedAnchors,
    RecencyRetention,
)
from gcengine.running.simulate import SimulationEvent, SimulationStep

PACKAGE_DIR = Path(gcengine.__file__).resolve().parent


def constructed_models() -> set[type[BaseModel]]:
    """Every model class the engine passes to ``construct``: by name, or as ``cls`` inside a
    class's own methods."""
    found: set[type[BaseModel]] = set()
    for path in PACKAGE_DIR.rglob("*.py"):
        module_name = ".".join(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if module_name.endswith("__main__"):
            continue
        module = importlib.import_module(module_name.removesuffix(".__init__"))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for owner in ast.walk(tree):
            if not isinstance(owner, ast.ClassDef | ast.Module):
                continue
            for node in ast.walk(owner):
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "construct"
                    and node.args
                    and isinstance(node.args[0], ast.Name)
                ):
                    continue
                name = node.args[0].id
                if name == "cls":
                    if isinstance(owner, ast.ClassDef):
                        found.add(getattr(module, owner.name))
                else:
                    found.add(getattr(module, name))
    return found


def message() -> Message:
    return Message(role=Role.USER, parts=[Part.from_text("hi")], message_id="m1")


# Every field of each model, with a value unlike its default.
EVERY_FIELD: dict[type[BaseModel], dict[str, Any]] = {
    FunctionCall: {"id": "c1", "name": "grep", "args": {"pattern": "x"}},
    FunctionResponse: {
        "call_id": "c1",
        "name": "grep",
        "result": {"matches": 2},
        "is_error": True,
        "extra": {"untrusted": True},
    },
    InlineData: {"mime_type": "image/png", "data": "aGVsbG8=", "extra": {"url": True}},
    OpaquePart: {"kind": "code_execution", "data": {"code": "print(1)"}},
    Part: {
        "type": PartType.TEXT,
        "text": "hello",
        "function_call": None,
        "function_response": None,
        "inline_data": None,
        "opaque": None,
        "extra": {"signature": "s"},
    },
    Message: {
        "role": Role.MODEL,
        "parts": [Part.from_text("answer")],
        "message_id": "m2",
        "kind": MessageKind.SUMMARY,
        "turn_index": 3,
        "metadata": {"model": "gpt-4.1"},
    },
    Turn: {"index": 2, "messages": [message()]},
    SourceEntry: {
        "source": InstructionSource.CONVERSATION,
        "tokens": 12,
        "gc_policy": GCPolicy.EPHEMERAL,
        "label": "turn 1",
        "children": {},
        "metadata": {"counted_by": "recorded"},
        "created_at": 1.5,
        "message_ids": ["m1"],
    },
    InstructionBudget: {
        "session_id": "s",
        "agent_id": "sub",
        "agent_type": "helper",
        "context_limit": 1_000,
        "entries": {},
    },
    GCResult: {
        "success": True,
        "items_collected": 1,
        "tokens_before": 100,
        "tokens_after": 40,
        "plugin_name": "gc_budget",
        "trigger_reason": GCTriggerReason.THRESHOLD,
        "notification": "done",
        "details": {"phase": 1},
        "error": None,
        "removal_list": [GCRemovalItem(InstructionSource.CONVERSATION, "turn_0", 60)],
        "stash": Stash(),
    },
    RecordedLeaf: {
        "path": ["turn_0", "msg_0"],
        "entry": SourceEntry(
            source=InstructionSource.CONVERSATION, tokens=5, gc_policy=GCPolicy.EPHEMERAL
        ),
    },
    StashedSegment: {
        "segment_id": "turn_3/m1",
        "kind": SegmentKind.LOG,
        "turn_index": 3,
        "messages": [message()],
        "positions": [7],
        "after": ["m0"],
        "tokens": 40,
        "reachable": True,
        "score": 0.25,
        "reason": "unreachable: no later turn names BILL-4012",
        "anchors": ["code:BILL-4012"],
        "recorded": [],
    },
    Stash: {
        "segments": [],
        "deleted": {"m9": "m8"},
        "notice_id": "n1",
        "summary_id": "s1",
        "recorded_prompt_tokens": 90_118,
    },
    ClassRetention: {
        "anchor_class": AnchorClass.PATHS,
        "weight": 3,
        "anchors": 4,
        "retained": 3,
        "lost": ["src/app.py"],
    },
    RecencyRetention: {
        "oldest_weight": 9,
        "oldest_retained": 3,
        "newest_weight": 12,
        "newest_retained": 12,
    },
    AnchorRetention: {
        "classes": [],
        "invented": InventedAnchors(checked=2, invented=1, examples=["BILL-9"]),
        "recency": RecencyRetention(oldest_weight=1),
        "removed_messages": 5,
        "removed_tokens": 400,
        "replacement_tokens": 60,
        "tokens_before": 1_000,
        "tokens_after": 660,
        "size": 700,
        "compactions": 2,
        "unscorable": None,
    },
    PromptRequest: {"turn_index": 4, "tokens": 9_000, "shared_prefix_tokens": 8_200},
    SimulationStep: {
        "turn_index": 4,
        "point": "pre_call",
        "tokens_before": 9_000,
        "tokens_after": 6_000,
        "collected": True,
        "call_number": 2,
    },
    SimulationEvent: {
        "turn_index": 4,
        "point": "post_turn",
        "reason": GCTriggerReason.CONTINUOUS,
        "result": GCResult(
            success=True,
            items_collected=2,
            tokens_before=9_000,
            tokens_after=6_000,
            plugin_name="gc_truncate",
            trigger_reason=GCTriggerReason.CONTINUOUS,
        ),
        "retention": AnchorRetention(recency=RecencyRetention(oldest_weight=1)),
        "call_number": 2,
    },
    PlannerItem: {
        "id": "msg-7",
        "source": Source.CONVERSATION,
        "role": ItemRole.ASSISTANT,
        "tokens": 42,
        "seq": 7,
        "turn": 3,
        "priority": Priority.HIGH,
        "ttl": 2,
        "review_pending": True,
        "score": 0.5,
        "tool_calls": ("call-1",),
        "tool_call_ids": ("call-0",),
        "model_visible": False,
        "label": "turn 3 answer",
    },
}

MODELS = sorted(constructed_models(), key=lambda model: model.__name__)


def test_every_constructed_model_is_checked_here() -> None:
    assert MODELS, "the source scan found no construct() calls"
    assert set(MODELS) <= set(EVERY_FIELD), "add the new model's fields to EVERY_FIELD"
    for model, values in EVERY_FIELD.items():
        assert set(values) == set(model.model_fields), model.__name__


def state(instance: BaseModel) -> tuple[Any, ...]:
    return (
        instance.model_dump(),
        instance.model_fields_set,
        instance.__pydantic_extra__,
        instance.__pydantic_private__,
    )


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
@pytest.mark.parametrize("given", ["every field", "required fields"])
def test_construct_builds_what_model_construct_builds(model: type[BaseModel], given: str) -> None:
    values = EVERY_FIELD[model]
    if given == "required fields":
        values = {k: v for k, v in values.items() if model.model_fields[k].is_required()}
    built = construct(model, **values)
    assert type(built) is model
    assert state(built) == state(model.model_construct(**values))


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_defaults_made_by_a_factory_are_never_shared(model: type[BaseModel]) -> None:
    required = {k: v for k, v in EVERY_FIELD[model].items() if model.model_fields[k].is_required()}
    first, second = construct(model, **required), construct(model, **required)
    for name, field in model.model_fields.items():
        if field.default_factory is not None:
            assert getattr(first, name) is not getattr(second, name), name


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_marking_a_field_set_on_one_instance_leaves_the_others_as_built(
    model: type[BaseModel],
) -> None:
    # Instances built with every field share one fields-set: it must never change under them.
    values = EVERY_FIELD[model]
    required = {k: v for k, v in values.items() if model.model_fields[k].is_required()}
    full, partial, other = (construct(model, **values) for values in (values, required, required))
    for name in model.model_fields:
        set_fresh(partial, name, getattr(full, name))
    assert construct(model, **values).model_fields_set == set(model.model_fields)
    assert other.model_fields_set == set(required)
    assert full.model_fields_set == set(model.model_fields)


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_entry_maker_builds_what_model_construct_builds(model: type[BaseModel]) -> None:
    make = entry_maker(model)
    first, second = make(dict(EVERY_FIELD[model])), make(dict(EVERY_FIELD[model]))
    assert type(first) is model
    assert state(first) == state(model.model_construct(**EVERY_FIELD[model]))
    # Marking a field set on one instance (they share one fields-set) leaves the other as built.
    set_fresh(
        first, next(iter(model.model_fields)), getattr(second, next(iter(model.model_fields)))
    )
    assert second.model_fields_set == set(model.model_fields)
