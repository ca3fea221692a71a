"""The fragment store of the case page: bounded, the least recently used dropped first."""

from __future__ import annotations

from cards.views.card_cache import Fragments


def test_it_keeps_at_most_its_entries_and_drops_the_least_recently_used():
    store = Fragments(max_entries=2)
    store.set_many({"a": "<p>a</p>", "b": "<p>b</p>"})
    assert store.get("a") == "<p>a</p>"  # a is now the most recently used
    store.set("c", "<p>c</p>")
    assert store.get_many(["a", "b", "c"]) == {"a": "<p>a</p>", "c": "<p>c</p>"}
    store.clear()
    assert store.get("a") is None
