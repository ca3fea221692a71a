"""The demo bundles and known answers are copies of ../shared/fixtures: keep them the same."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, SHARED_FIXTURES


@pytest.mark.parametrize("path", sorted(FIXTURES.iterdir()), ids=lambda p: p.name)
def test_each_copy_equals_the_shared_original(path):
    original = SHARED_FIXTURES / path.name
    if not SHARED_FIXTURES.exists():
        pytest.skip("../shared/fixtures is not beside this checkout")
    assert original.exists(), f"{path.name} is not in ../shared/fixtures"
    assert path.read_bytes() == original.read_bytes()
