"""A memory-bounded cache, for engine values a process reads again and again (a stored
session reopened for every run and preview, a replay drawn for the editor)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable


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


def each_weighs_one(_: object) -> int:
    """The weight of an entry in a cache bounded by how many entries it holds."""
    return 1
