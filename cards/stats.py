"""Proportions with Wilson intervals, sample sizes, and agreement coefficients.

Plain arithmetic, no database: every figure the application shows is a k / n
with its denominator, and an undefined ratio stays undefined (None).
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist


@functools.cache
def z_for(confidence: float) -> float:
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


# Kept per (k, n, confidence): a run's figures repeat the same small fractions (an audit
# package of 10,000 responses asks for some 240,000 intervals of a few hundred distinct ones).
@functools.lru_cache(maxsize=65536)
def wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of k successes out of n (metrics.md)."""
    if n <= 0:
        raise ValueError("a Wilson interval needs n > 0")
    z = z_for(confidence)
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def sample_size(margin: float, confidence: float = 0.95, p: float = 0.5) -> int:
    """Units needed for a ±margin interval: ⌈z²·p(1−p)/e²⌉."""
    if not 0 < margin < 1:
        raise ValueError("the margin is a fraction between 0 and 1")
    z = z_for(confidence)
    return math.ceil(round(z * z * p * (1 - p) / (margin * margin), 9))


def half_width(n: int, confidence: float = 0.95, p: float = 0.5) -> float | None:
    """How wide (±) a proportion's interval is at this n, for the sample-size helper."""
    if n <= 0:
        return None
    low, high = wilson(round(p * n), n, confidence)
    return (high - low) / 2


@dataclass(frozen=True)
class Proportion:
    k: int
    n: int

    @property
    def defined(self) -> bool:
        return self.n > 0

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95 % Wilson interval; None when the ratio is undefined."""
        return wilson(self.k, self.n) if self.n else None

    def as_json(self) -> dict | None:
        if not self.n:
            return None
        return dict(_proportion_json(self.k, self.n))  # a copy: the kept one stays as it is

    def __add__(self, other: Proportion) -> Proportion:
        return Proportion(self.k + other.k, self.n + other.n)


@functools.lru_cache(maxsize=65536)
def _proportion_json(k: int, n: int) -> dict:
    """A proportion as JSON, kept per (k, n): a run's figures repeat a few hundred."""
    low, high = wilson(k, n)
    return {
        "k": k,
        "n": n,
        "value": round(k / n, 4),
        "low": round(low, 4),
        "high": round(high, 4),
    }


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's κ for two annotators over the items both labelled; None when undefined."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    expected = sum(first[label] * second[label] for label in first) / (n * n)
    if expected == 1:
        return None  # both annotators used one and the same label throughout
    return (observed - expected) / (1 - expected)


def krippendorff_alpha_nominal(units: Iterable[Sequence[Hashable]]) -> float | None:
    """Krippendorff's α (nominal) for any number of annotators, missing labels allowed.

    `units` holds, per item, the labels it received (one per annotator who labelled
    it). Items with fewer than two labels are not pairable and are left out.
    """
    coincidence: Counter[tuple[Hashable, Hashable]] = Counter()
    for labels in units:
        m = len(labels)
        if m < 2:
            continue
        counts = Counter(labels)
        for c, nc in counts.items():
            for k, nk in counts.items():
                pairs = nc * (nk - 1) if c == k else nc * nk
                if pairs:
                    coincidence[(c, k)] += pairs / (m - 1)
    n_c: Counter[Hashable] = Counter()
    for (c, _), value in coincidence.items():
        n_c[c] += value
    total = sum(n_c.values())
    if total <= 1:
        return None
    observed = sum(v for (c, k), v in coincidence.items() if c != k)
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k) / (total - 1)
    if expected == 0:
        return None  # one label throughout: agreement is perfect but α is undefined
    return 1 - observed / expected
