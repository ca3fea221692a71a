"""A bounded map kept in this process, the least recently used entry dropped first.

For what is worth keeping between requests and can never be stale: rendered fragments keyed
by the hashes of what they show (`cards.views.card_cache`), and the rows of frozen evidence
(`cards.selectors`), which the database refuses to change. Each process keeps its own: no
process needs another's entries, and none is ever invalid.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable


class Recent[K: Hashable, V]:
    """Values by key, the least recently used dropped past `max_entries`."""

    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()  # a threaded server's requests share the process

    def get(self, key: K) -> V | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        found = {}
        with self._lock:
            for key in keys:
                value = self._entries.get(key)
                if value is not None:
                    self._entries.move_to_end(key)
                    found[key] = value
        return found

    def set(self, key: K, value: V) -> None:
        self.set_many({key: value})

    def set_many(self, values: dict[K, V]) -> None:
        with self._lock:
            self._entries.update(values)
            for key in values:
                self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
