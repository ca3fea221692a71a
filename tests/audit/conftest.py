"""Fixtures of the audit tests."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture
def collect_abandoned_zips() -> Iterator[None]:
    """A full collection after the test, of what the test made only.

    An export that fails half-way closes its zip (ZipStream.abandon): one left to the
    garbage collector would write to a closed file. Collected after each test (and the
    module makes the warning an error), so such a regression fails in the test that left
    it rather than in whichever test runs next.

    What lived before the test (Django, the apps, the test modules: some 130,000 objects)
    is frozen meanwhile: walking it cost 0.1-0.15 s a test, more than most of these tests.
    A zip the test abandoned was made during the test, so it is not frozen (unless the
    test imports after abandoning it: the import freezes what exists, until we unfreeze).
    """
    gc.freeze()
    try:
        yield
        gc.collect()
    finally:
        gc.unfreeze()
