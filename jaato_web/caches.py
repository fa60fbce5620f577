"""Every cache a dashboard process keeps, known in one place.

A process reads the same large values again and again: a stored session reopened for every
run, preview and page, a replay drawn for the editor at every edit, a plan, a page's parts.
Each such cache is made here with ``bounded``, which names it and bounds it by weight, so that
what a process may hold at its peak can be read off one list (``CACHES``), and a test or a
command can put the process back as it started with one call (``clear_all``).

Every cached value is derived from rows that never change once written (uploads are immutable,
a run's figures are its own) under a key that names what it was derived from, so an entry
never goes stale; tests clear them because they roll back and reuse ids.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class BoundedLRU[K, V]:
    """A thread-safe least-recently-used map (runserver and WSGI servers use threads) bounded
    by the total ``weigh`` of its values: the least recently used go first, but the entry used
    last always stays, however heavy."""

    def __init__(self, limit: int, weigh: Callable[[V], int]) -> None:
        self.limit = limit
        self.weigh = weigh
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key][0]

    def put(self, key: K, value: V) -> None:
        weight = self.weigh(value)
        with self._lock:
            if key in self._items:
                self._weight -= self._items.pop(key)[1]
            self._items[key] = (value, weight)
            self._weight += weight
            while self._weight > self.limit and len(self._items) > 1:
                self._weight -= self._items.popitem(last=False)[1][1]

    def make_room(self, weight: int) -> None:
        """Drop the least recently used entries until a value of ``weight`` fits beside the
        rest (all of them, for a value as heavy as the bound). Called before a heavy value is
        built, so the entries it would push out are not held while it is: otherwise a process
        holding one 10,000-turn session peaks with two when it reads the next."""
        with self._lock:
            while self._items and self._weight + weight > self.limit:
                self._weight -= self._items.popitem(last=False)[1][1]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weight = 0

    @property
    def weight(self) -> int:
        """The total weight held now."""
        return self._weight

    def __len__(self) -> int:
        return len(self._items)


def each_weighs_one(_: object) -> int:
    """The weight of an entry in a cache bounded by how many entries it holds."""
    return 1


@dataclass(frozen=True)
class Cache:
    """One of the process's caches: what it holds, in what unit its bound is counted, and the
    cache itself."""

    name: str
    unit: str
    store: BoundedLRU[Any, Any]


CACHES: list[Cache] = []
"""Every cache made with ``bounded``, in the order the modules holding them were imported."""


def bounded[K, V](name: str, limit: int, weigh: Callable[[V], int], unit: str) -> BoundedLRU[K, V]:
    """A new cache of at most ``limit`` ``unit`` (as ``weigh`` counts them), listed in
    ``CACHES`` under ``name``."""
    store: BoundedLRU[K, V] = BoundedLRU(limit, weigh)
    CACHES.append(Cache(name, unit, store))
    return store


def clear_all() -> None:
    """Forget everything every cache holds: the process is as one that has read nothing."""
    for cache in CACHES:
        cache.store.clear()
