"""A session's bounded caches: plans and releases kept for queries asked again.

Owns: ``Bounded``, a least-recently-stored cache of at most ``size`` entries and, when a
``weigh(key, value)`` is given, at most ``limit`` of their weight in all (it always keeps the
newest entry; an entry's weight is taken when it is stored). ``dpsql serve`` keeps an analyst's session for months: a cache without bounds grew
the server by 7 MB a query (the eleventh review of issue 33). The caller holds its lock.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable


class Bounded:
    def __init__(self, size: int, weigh: Callable | None = None, limit: float = float("inf"),
                 evicted: Callable | None = None) -> None:
        self.size, self.weigh, self.limit, self.evicted = size, weigh, limit, evicted
        self._items: OrderedDict = OrderedDict()
        self._weights: dict = {}
        self._weight = 0

    def get(self, key):
        return self._items.get(key)

    def clear(self) -> None:
        self._items.clear()
        self._weights.clear()
        self._weight = 0

    def __len__(self) -> int:
        return len(self._items)

    def put(self, key, value) -> None:
        if key in self._items:
            self._weight -= self._weights.pop(key)
            del self._items[key]
        self._items[key] = value
        self._weights[key] = self.weigh(key, value) if self.weigh is not None else 0
        self._weight += self._weights[key]
        while len(self._items) > 1 and (len(self._items) > self.size or self._weight > self.limit):
            old_key, old = self._items.popitem(last=False)
            self._weight -= self._weights.pop(old_key)
            if self.evicted is not None:
                self.evicted(old)
