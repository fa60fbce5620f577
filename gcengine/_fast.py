"""Speed for bulk work: building trusted models cheaply, checking what was read from many
values with one count (``Revision``), and (for entry points) pausing the cycle collector.

Readers validate raw JSON themselves (so every error names its JSON path) and then build
tens of thousands of models for a long session. ``model_construct`` resolves every default
on each call and was the largest single cost of a load; this does the same job from a
per-class table. Only for values the engine has already checked.
"""

from __future__ import annotations

import functools
import gc
import operator
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

_set = object.__setattr__


@functools.cache  # bounded pure memo: one entry per model class
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


@functools.cache  # bounded pure memo: one entry per model class
def _all_fields(model: type[BaseModel]) -> set[str]:
    """Every field name of ``model``: the fields-set of each instance built with all of them.

    One set is shared by all those instances (a set per model was a quarter of a loaded
    session's memory). Sharing is safe because a set already holding every field never
    changes: marking a field as set (an assignment, ``set_fresh``) adds a name it holds, and
    pydantic copies the set for a copy."""
    return set(model.model_fields)


def construct[M: BaseModel](model: type[M], **values: Any) -> M:
    """Like ``model.model_construct(**values)``: no validation, defaults filled in."""
    every = _all_fields(model)
    if len(values) == len(every):
        data = values  # every field given: the common case on hot paths
        given = every
    else:
        static, factories = _defaults(model)
        data = {**static, **values}
        for name, factory in factories:
            if name not in data:
                data[name] = factory()
        given = set(values)
    instance = model.__new__(model)
    _set(instance, "__dict__", data)
    _set(instance, "__pydantic_fields_set__", given)
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


def fields_sets_shared(models: Iterable[BaseModel]) -> None:
    """Make instances of a frozen model that were given the same fields share one fields-set.

    Pydantic gives each validated instance a set of its own: 728 bytes for seven fields, 7 MB
    for the accounting of a 10,000-turn session's turns. Only for frozen models: assigning a
    field of one is refused before its set is touched, and pydantic copies the set for a copy,
    so a shared set never changes."""
    shared: dict[frozenset[str], set[str]] = {}
    for model in models:
        assert model.model_config.get("frozen"), "a shared fields-set must never change"
        given = model.__pydantic_fields_set__
        _set(model, "__pydantic_fields_set__", shared.setdefault(frozenset(given), given))


def entry_maker[M: BaseModel](model: type[M]) -> Callable[[dict[str, Any]], M]:
    """``construct`` for a loop building many instances of ``model``: the function returned
    takes a dict holding every field (its own, not shared) and makes it the instance's
    fields, with nothing looked up per call."""
    every = _all_fields(model)
    new = model.__new__

    def make(values: dict[str, Any]) -> M:
        instance = new(model)
        _set(instance, "__dict__", values)
        _set(instance, "__pydantic_fields_set__", every)
        _set(instance, "__pydantic_extra__", None)
        _set(instance, "__pydantic_private__", None)
        return instance

    return make


def entries_made[M: BaseModel](model: type[M], values: Iterable[dict[str, Any]]) -> list[M]:
    """``entry_maker(model)`` applied to each of ``values`` in one loop, with no call per
    instance: for converters making tens of thousands at once (a JAATO history's messages)."""
    every = _all_fields(model)
    new = model.__new__
    made = []
    for fields in values:
        instance = new(model)
        _set(instance, "__dict__", fields)
        _set(instance, "__pydantic_fields_set__", every)
        _set(instance, "__pydantic_extra__", None)
        _set(instance, "__pydantic_private__", None)
        made.append(instance)
    return made


class _Pauses:
    """The pauses of the cycle collector in progress, process-wide: the first to begin
    switches it off, the last to end switches it back on if it was on before the first.

    The engine's one process-wide state that is no memo of a pure function: it follows
    the interpreter's own switch, which is process-wide, and only entry points pause."""

    lock = threading.Lock()
    count = 0
    resume = False


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector for bulk work on large sessions.

    Loading or collecting allocates hundreds of thousands of containers, and every few
    thousand allocations the collector walks the young heap, which here holds the whole
    session: that walking cost as much as the rest of a 10,000-turn load, and 40% of a
    collection. Nothing the engine builds forms a reference cycle (JSON and the models are
    trees), so reference counting frees it all and pausing the collector loses nothing.

    What outlives the work is what it made to keep (a session read back, a run's outcome):
    when the collector is switched back on, every object it tracks goes to its oldest
    generation at once, as the collector would move them after walking them twice as young
    objects (0.13 s a walk for a session of 10,000 turns, which a web request that read one
    back paid after it). Unless objects of the process are frozen (``gc.freeze``, as servers
    do before forking workers): they must stay so, and then nothing is moved.

    The switch is process-wide: while paused, no thread of the process collects cycles, and
    what other threads leave in cycles meanwhile is collected by the next full collection.
    Pauses on several threads at once overlap: the collector stays off until the last of them
    ends (one that ends early never switches it back on under the others), and is then left
    as the first found it (still off, if it was off).
    """
    with _Pauses.lock:
        if _Pauses.count == 0:
            _Pauses.resume = gc.isenabled()
            gc.disable()
        _Pauses.count += 1
    try:
        yield
    finally:
        with _Pauses.lock:
            _Pauses.count -= 1
            if _Pauses.count == 0 and _Pauses.resume:
                if not gc.get_freeze_count():
                    gc.freeze()  # every generation into the frozen one, without a walk,
                    gc.unfreeze()  # and from it into the oldest
                gc.enable()


class Revision:
    """How many times a group of values was edited: what a fact read from all of them (a
    conversation laid out flat, from a budget tree and a history) is stamped with, so that an
    edit of any of them, a leaf deep inside a tree or one message of thousands, makes the fact
    be read again.

    Values point to one (a budget entry in its ``__dict__``, ``REVISION_KEY``; a message in its
    ``Readings``) and count their edits against it. A budget, the budgets rebuilt from it and
    the messages their builder read share one. Edits are rare (the engine builds new values
    instead), so one count for the whole group is enough, and checking a fact costs one
    comparison however many values it was read from.
    """

    __slots__ = ("edits",)

    def __init__(self) -> None:
        self.edits = 0


REVISION_KEY = "_revision"
"""Where a budget entry keeps its revision: a key of its ``__dict__`` that is no field (as a
cached property's value is kept): a copy shares it, a deep copy's tree a copy of it."""


def set_fresh(instance: BaseModel, name: str, value: Any) -> None:
    """Set a field of a model that nobody else holds yet (one being built), skipping the
    model's own assignment: pydantic's checks, and what an edit of a value does to the facts
    read from it (``Revision``)."""
    instance.__dict__[name] = value
    instance.__pydantic_fields_set__.add(name)


def joined[T](lists: Iterable[Iterable[T]]) -> list[T]:
    """The items of ``lists`` in one list, each list added whole (``list.__iadd__``): for
    tens of thousands of short lists (a history's lists of parts, a budget's lists of ids)
    about twice as fast as ``chain.from_iterable``, which makes an iterator for each."""
    made: list[T] = []
    return functools.reduce(operator.iadd, lists, made)
