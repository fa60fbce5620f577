"""Speed for bulk work: building trusted models cheaply, and pausing the cycle collector.

Readers validate raw JSON themselves (so every error names its JSON path) and then build
tens of thousands of models for a long session. ``model_construct`` resolves every default
on each call and was the largest single cost of a load; this does the same job from a
per-class table. Only for values the engine has already checked.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

_set = object.__setattr__


@functools.cache
def _defaults(
    model: type[BaseModel],
) -> tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...]]:
    static: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    for name, field in model.model_fields.items():
        if field.default_factory is not None:
            factories.append((name, field.default_factory))  # type: ignore[arg-type]
        elif not field.is_required():
            static[name] = field.default
    return static, tuple(factories)


@functools.cache
def _field_count(model: type[BaseModel]) -> int:
    return len(model.model_fields)


def construct[M: BaseModel](model: type[M], **values: Any) -> M:
    """Like ``model.model_construct(**values)``: no validation, defaults filled in."""
    if len(values) == _field_count(model):
        data = values  # every field given: the common case on hot paths
    else:
        static, factories = _defaults(model)
        data = {**static, **values}
        for name, factory in factories:
            if name not in data:
                data[name] = factory()
    instance = model.__new__(model)
    _set(instance, "__dict__", data)
    _set(instance, "__pydantic_fields_set__", set(values))
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector during bulk work on a large session.

    Loading or collecting allocates hundreds of thousands of containers, and every few
    thousand allocations the collector walks the young heap, which here holds the whole
    session: that walking cost as much as the rest of a 10,000-turn load, and 40% of a
    collection. Nothing the engine builds forms a reference cycle (JSON and the models are
    trees), so reference counting frees it all and pausing the collector loses nothing.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
