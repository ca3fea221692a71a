"""`csv_line` writes the bytes the csv module writes, on any row of texts."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidence.spreadsheet import csv_line

# Texts made mostly of what the csv module treats specially, and a little of anything else.
CELLS = st.text(alphabet=st.sampled_from("\",\r\n'\t =;ab \x00é€😀"), max_size=12) | st.text(
    max_size=40
)


def reference(cells: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    return out.getvalue()


@given(st.lists(CELLS, min_size=1, max_size=8))
def test_a_line_is_what_the_csv_module_writes(cells):
    assert csv_line(cells) == reference(cells)


@pytest.mark.parametrize(
    "cells",
    [
        [""],
        ["", ""],
        ['say "no"'],
        ["a,b", "c"],
        ["line\nbreak", "cr\rhere"],
        ["", "x", ""],
        ["\x00"],
        ['"'],
    ],
)
def test_the_quoting_rules(cells):
    assert csv_line(cells) == reference(cells)
