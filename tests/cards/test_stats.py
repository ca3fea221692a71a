from __future__ import annotations

import json
import random

import krippendorff
import numpy as np
import pytest

from cards.stats import (
    Proportion,
    cohen_kappa,
    half_width,
    krippendorff_alpha_nominal,
    sample_size,
    wilson,
)
from tests.cards.test_metrics_expected import EXPECTED


@pytest.mark.parametrize(("fraction", "interval"), EXPECTED["wilson95"].items())
def test_wilson_intervals_match_the_known_values(fraction, interval):
    k, n = map(int, fraction.split("/"))
    assert [round(x, 2) for x in wilson(k, n)] == interval


@pytest.mark.parametrize(("label", "n"), EXPECTED["sample_size"].items())
def test_sample_sizes_match_the_known_values(label, n):
    confidence, margin = label.split("% ±")
    assert sample_size(float(margin.rstrip("%")) / 100, float(confidence) / 100) == n


def test_an_undefined_ratio_is_null_not_zero():
    assert Proportion(0, 0).as_json() is None
    assert Proportion(0, 3).as_json()["value"] == 0.0
    assert half_width(0) is None


def test_the_interval_narrows_as_n_grows():
    assert half_width(100) > half_width(400) > half_width(1600)


def test_cohen_kappa_matches_a_textbook_example():
    # 50 items: both yes 20, both no 15, A yes/B no 5, A no/B yes 10 → κ = 0.4
    pairs = [("y", "y")] * 20 + [("n", "n")] * 15 + [("y", "n")] * 5 + [("n", "y")] * 10
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_alpha_matches_krippendorffs_own_nominal_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", nominal data with
    # missing values: 4 coders, 12 units; alpha = 0.743.
    table = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = [[row[i] for row in table if row[i] is not None] for i in range(12)]
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.743, abs=0.001)


@pytest.mark.parametrize("seed", range(20))
def test_alpha_agrees_with_an_independent_implementation(seed):
    rng = random.Random(seed)
    labels = ["supported", "partial", "unsupported", "not_assessable"]
    coders, items = rng.randint(2, 5), rng.randint(5, 60)
    table = [
        [rng.choice(labels) if rng.random() > 0.25 else None for _ in range(items)]
        for _ in range(coders)
    ]
    codes = {label: i for i, label in enumerate(labels)}
    matrix = np.array(
        [[np.nan if v is None else codes[v] for v in row] for row in table], dtype=float
    )
    units = [[row[i] for row in table if row[i] is not None] for i in range(items)]
    if sum(1 for unit in units if len(unit) >= 2) < 2:
        pytest.skip("too few pairable units in this draw")
    reference = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    assert krippendorff_alpha_nominal(units) == pytest.approx(reference, abs=1e-9)


def test_kappa_is_undefined_when_both_use_one_label_throughout():
    assert cohen_kappa([("a", "a")] * 5) is None
    assert krippendorff_alpha_nominal([["a", "a"]] * 5) is None
    assert json.dumps(Proportion(1, 2).as_json())
