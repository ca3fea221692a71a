"""The Wilson interval, sample sizes and agreement coefficients of metrics.md, on known values.

The values are typed from metrics.md ("Wilson interval and sample size") and from the
textbooks, not read from a file the code could share.
"""

from __future__ import annotations

import math

import pytest

from cards.stats import (
    Proportion,
    cohen_kappa,
    half_width,
    krippendorff_alpha_nominal,
    sample_size,
    wilson,
    z_for,
)

# metrics.md: "Known values (95 %): 17/20 → [0.64, 0.95]; 24/30 → [0.63, 0.90];
# 85/100 → [0.77, 0.91]; 170/200 → [0.79, 0.89]; 340/400 → [0.81, 0.88]"
WILSON_95 = [
    pytest.param(17, 20, (0.64, 0.95), id="17/20"),
    pytest.param(24, 30, (0.63, 0.90), id="24/30"),
    pytest.param(85, 100, (0.77, 0.91), id="85/100"),
    pytest.param(170, 200, (0.79, 0.89), id="170/200"),
    pytest.param(340, 400, (0.81, 0.88), id="340/400"),
]


@pytest.mark.parametrize(("k", "n", "interval"), WILSON_95)
def test_wilson_intervals_match_the_values_of_the_spec(k, n, interval):
    low, high = wilson(k, n)
    assert (round(low, 2), round(high, 2)) == interval


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 3), (4, 6), (17, 20), (5, 5)])
@pytest.mark.parametrize("confidence", [0.90, 0.95, 0.99])
def test_wilson_follows_the_formula_of_the_spec(k, n, confidence):
    # "centre = (p + z²/2n) / (1 + z²/n), half-width = z·√(p(1−p)/n + z²/4n²) / (1 + z²/n)"
    z = {0.90: 1.6448536269514722, 0.95: 1.959963984540054, 0.99: 2.5758293035489004}[confidence]
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    low, high = wilson(k, n, confidence)
    assert low == pytest.approx(max(0.0, centre - half), abs=1e-12)
    assert high == pytest.approx(min(1.0, centre + half), abs=1e-12)


def test_z_is_the_normal_quantile_of_one_minus_half_alpha():
    # "z = Φ⁻¹(1 − α/2)"
    assert z_for(0.95) == pytest.approx(1.959963984540054)
    assert z_for(0.90) == pytest.approx(1.6448536269514722)


@pytest.mark.parametrize(("k", "n"), [(0, 21), (0, 36), (9, 9), (26, 26)])
def test_a_wilson_interval_never_leaves_0_to_1(k, n):
    # At these n the formula's rounding error falls just outside [0, 1].
    low, high = wilson(k, n)
    assert low >= 0.0 and high <= 1.0
    assert (low == 0.0) if k == 0 else (high == 1.0)


@pytest.mark.parametrize("n", [0, -1])
def test_a_wilson_interval_needs_units(n):
    with pytest.raises(ValueError, match="^a Wilson interval needs n > 0$"):
        wilson(0, n)


# metrics.md: "margin ±10 % → 97, ±7 % → 196, ±5 % → 385, ±3 % → 1068; at 90 %: ±5 % → 271."
SAMPLE_SIZES = [
    pytest.param(0.10, 0.95, 97, id="95%-10%"),
    pytest.param(0.07, 0.95, 196, id="95%-7%"),
    pytest.param(0.05, 0.95, 385, id="95%-5%"),
    pytest.param(0.03, 0.95, 1068, id="95%-3%"),
    pytest.param(0.05, 0.90, 271, id="90%-5%"),
]


@pytest.mark.parametrize(("margin", "confidence", "n"), SAMPLE_SIZES)
def test_sample_sizes_match_the_values_of_the_spec(margin, confidence, n):
    assert sample_size(margin, confidence) == n


def test_a_sample_size_uses_a_given_p():
    # "n = ⌈z²·p(1−p)/e²⌉ with p = 0.5 unless given": 1.96² · 0.2 · 0.8 / 0.05² = 245.9
    assert sample_size(0.05, p=0.2) == 246


@pytest.mark.parametrize("margin", [0, 1, -0.1, 1.5])
def test_a_margin_is_a_fraction_between_0_and_1(margin):
    with pytest.raises(ValueError, match="^the margin is a fraction between 0 and 1$"):
        sample_size(margin)


def test_the_half_width_at_n_is_half_the_wilson_interval_at_p():
    low, high = wilson(50, 100)
    assert half_width(100) == pytest.approx((high - low) / 2)
    low, high = wilson(20, 100, 0.90)
    assert half_width(100, 0.90, p=0.2) == pytest.approx((high - low) / 2)
    low, high = wilson(0, 1)  # round(0.5 · 1) = 0: Python rounds half to even
    assert half_width(1) == pytest.approx((high - low) / 2)
    assert half_width(0) is None


# --- a figure is k / n, undefined when n = 0 (metrics.md, opening) ---------------------------


def test_a_proportion_is_shown_as_k_n_value_and_interval():
    low, high = wilson(3, 4)
    assert Proportion(3, 4).as_json() == {
        "k": 3, "n": 4, "value": 0.75, "low": round(low, 4), "high": round(high, 4),
    }  # fmt: skip
    assert Proportion(2, 3).as_json()["value"] == 0.6667


def test_a_zero_denominator_is_undefined_never_0_or_100_percent():
    assert Proportion(0, 0).defined is False
    assert Proportion(0, 0).value is None
    assert Proportion(0, 0).as_json() is None
    assert Proportion(0, 1).defined is True
    assert Proportion(0, 1).value == 0.0
    assert Proportion(1, 4).value == 0.25


def test_proportions_add_as_pooled_k_and_n():
    assert Proportion(1, 2) + Proportion(3, 4) == Proportion(4, 6)


# --- agreement (metrics.md, "Agreement between annotators") ----------------------------------


def pairs(yes_yes: int, yes_no: int, no_yes: int, no_no: int) -> list[tuple[str, str]]:
    return (
        [("yes", "yes")] * yes_yes + [("yes", "no")] * yes_no
        + [("no", "yes")] * no_yes + [("no", "no")] * no_no
    )  # fmt: skip


@pytest.mark.parametrize(
    ("table", "kappa"),
    [
        # Cohen's kappa, Wikipedia's worked example: p_o = 0.7, p_e = 0.5.
        pytest.param((20, 5, 10, 15), 0.4, id="po-0.7-pe-0.5"),
        # Wikipedia, "same percentages but different numbers": both p_o = 0.6.
        pytest.param((45, 15, 25, 15), 0.1304, id="po-0.6-pe-0.54"),
        pytest.param((25, 35, 5, 35), 0.2593, id="po-0.6-pe-0.46"),
        pytest.param((10, 0, 0, 10), 1.0, id="perfect"),
        pytest.param((0, 10, 10, 0), -1.0, id="always-opposite"),
    ],
)
def test_cohen_kappa_matches_textbook_values(table, kappa):
    assert round(cohen_kappa(pairs(*table)), 4) == kappa


def test_cohen_kappa_is_undefined_without_items_or_with_one_label_throughout():
    assert cohen_kappa([]) is None
    assert cohen_kappa([("a", "a")] * 3) is None


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", A: binary data, two
# observers, no missing data: α = 1 − (n − 1)·o₀₁ / (n₀·n₁) = 1 − 19·4 / (14·6) = 0.095.
KRIPPENDORFF_BINARY = [
    [0, 1], [1, 1], [0, 1], [0, 0], [0, 0], [0, 1], [0, 0], [0, 0], [1, 0], [0, 0],
]  # fmt: skip

# Ibid., C: nominal data, four observers, missing values; α = 0.743.
KRIPPENDORFF_NOMINAL = [
    [1, 1, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [5, 5, 5], [1, 1], [3],
]  # fmt: skip


def test_alpha_matches_krippendorffs_binary_example():
    assert round(krippendorff_alpha_nominal(KRIPPENDORFF_BINARY), 3) == 0.095


def test_alpha_matches_krippendorffs_nominal_example_with_missing_labels():
    assert round(krippendorff_alpha_nominal(KRIPPENDORFF_NOMINAL), 3) == 0.743


def test_alpha_leaves_out_units_with_one_label():
    with_singles = [*KRIPPENDORFF_BINARY, [1], [0], []]
    assert krippendorff_alpha_nominal(with_singles) == krippendorff_alpha_nominal(
        KRIPPENDORFF_BINARY
    )


def test_alpha_is_1_for_perfect_agreement_on_more_than_one_label():
    assert krippendorff_alpha_nominal([["a", "a"], ["b", "b", "b"], ["a", "a"]]) == 1.0


def test_alpha_of_a_single_disagreeing_pair_is_0():
    # One unit labelled a and b: the disagreement observed is the one expected, α = 1 − 1.
    assert krippendorff_alpha_nominal([["a", "b"]]) == 0.0


def test_alpha_is_undefined_without_pairable_units_or_with_one_label_throughout():
    assert krippendorff_alpha_nominal([]) is None
    assert krippendorff_alpha_nominal([["a"], ["b"]]) is None
    assert krippendorff_alpha_nominal([["a", "a"], ["a", "a", "a"]]) is None
