"""Comparing two runs of the same cases (metrics.md, "Comparing two runs").

Pairs are made by case. A pair is comparable only when the case expectation is
the same and every ref either response cites, or that is relevant, has the same
SHA-256 in both runs; every pair that is not says why. Figures of both runs are
computed over the comparable pairs only.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.db.models import Max

from cards.blind import blind_state
from cards.figures import CLAIM_FIGURES, ClaimState, choose, run_totals
from cards.metrics import ResponseDetail, run_metrics
from cards.models import ClaimRevision, ResponseReview, VerdictRevision
from cards.stats import Proportion
from cards.verdicts import Source
from evidence.drift import drift_between
from evidence.models import Expectation
from replay.models import Run

ORDER = {"absent": 0, "unsupported": 1, "partial": 2, "supported": 3}
UNREVIEWED = "unreviewed"  # a fact reported only by claims nobody judged (docs/decisions.md)
SIMILAR_ENOUGH = 0.75  # difflib ratio from which two unmatched claims count as the same claim


@dataclass
class FactChange:
    a: str
    b: str

    @property
    def change(self) -> str:
        # Nobody judged one side: whether it improved is unknown, so it is neither.
        if UNREVIEWED in (self.a, self.b):
            return UNREVIEWED
        if ORDER[self.b] > ORDER[self.a]:
            return "improved"
        if ORDER[self.b] < ORDER[self.a]:
            return "regressed"
        return "same"


@dataclass
class Pair:
    case_id: str
    comparable: bool
    reasons: list[str]
    notes: list[str] = field(default_factory=list)
    facts: dict[str, FactChange] = field(default_factory=dict)
    matched: list[tuple[str, str]] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    a: ResponseDetail | None = None
    b: ResponseDetail | None = None

    @property
    def changes(self) -> set[str]:
        """How its facts changed; none for a pair that is not comparable, which is never
        counted as improved or regressed (its evidence or expectation differs)."""
        return {f.change for f in self.facts.values()} if self.comparable else set()

    def as_json(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "comparable": self.comparable,
            "reasons": self.reasons,
            "notes": self.notes,
            "facts": {
                fact: {"a": f.a, "b": f.b, "change": f.change} for fact, f in self.facts.items()
            },
            "claims": {
                "matched": [list(m) for m in self.matched],
                "only_a": self.only_a,
                "only_b": self.only_b,
            },
        }


@dataclass
class Comparison:
    run_a: Run
    run_b: Run
    source: Source
    pairs: list[Pair]
    metrics_a: dict[str, Any]
    metrics_b: dict[str, Any]

    @property
    def left_out(self) -> int:
        return sum(1 for p in self.pairs if not p.comparable)

    def difference(self) -> dict[str, float | None]:
        out = {}
        for name in CLAIM_FIGURES:
            a, b = self.metrics_a["micro"][name], self.metrics_b["micro"][name]
            out[name] = None if not (a.defined and b.defined) else round(b.value - a.value, 4)
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a.run_id,
            "run_b": self.run_b.run_id,
            "verdicts_from": self.source.label,
            "pairs": [p.as_json() for p in self.pairs],
            "left_out": self.left_out,
            "metrics": {
                "a": {n: _p(self.metrics_a["micro"][n]) for n in CLAIM_FIGURES},
                "b": {n: _p(self.metrics_b["micro"][n]) for n in CLAIM_FIGURES},
                "difference": self.difference(),
                "pairs": sum(1 for p in self.pairs if p.comparable),
            },
        }


def _p(value: Proportion) -> dict | None:
    return value.as_json()


def fact_status(claims: list[ClaimState], fact_id: str, source: Source) -> str:
    """Best verdict among current factual claims reporting the fact, or absent.

    Beside a judged claim an unreviewed one counts as unsupported (metrics.md); a fact
    whose claims nobody judged is `unreviewed`, not `unsupported`.
    """
    best, reported, judged = "absent", False, False
    for claim in claims:
        if claim.withdrawn or claim.kind != "factual" or fact_id not in claim.facts:
            continue
        reported = True
        view = choose(claim, source)
        judged = judged or view is not None
        support = view.support if view else "unsupported"
        status = support if support in ("supported", "partial") else "unsupported"
        if ORDER[status] > ORDER[best]:
            best = status
    return UNREVIEWED if reported and not judged else best


def match_claims(a: list[ClaimState], b: list[ClaimState]) -> tuple[list, list, list]:
    """Match by the required facts the claims report, then by text similarity."""
    left = [c for c in a if not c.withdrawn]
    right = [c for c in b if not c.withdrawn]
    matched: list[tuple[str, str]] = []
    for claim in list(left):
        partner = next((c for c in right if set(c.facts) & set(claim.facts)), None)
        if partner is not None:
            matched.append((claim.key, partner.key))
            left.remove(claim)
            right.remove(partner)
    scored = sorted(
        (
            (difflib.SequenceMatcher(None, x.text.lower(), y.text.lower()).ratio(), x.key, y.key)
            for x in left
            for y in right
        ),
        reverse=True,
    )
    taken_a, taken_b = set(), set()
    for ratio, x, y in scored:
        if ratio < SIMILAR_ENOUGH:
            break
        if x not in taken_a and y not in taken_b:
            matched.append((x, y))
            taken_a.add(x)
            taken_b.add(y)
    only_a = [c.key for c in left if c.key not in taken_a]
    only_b = [c.key for c in right if c.key not in taken_b]
    return matched, only_a, only_b


def compare_runs(*, run_a: Run, run_b: Run, source: Source = Source()) -> Comparison:  # noqa: B008
    figures_a = run_metrics(run=run_a, source=source, keep_details=True)
    figures_b = run_metrics(run=run_b, source=source, keep_details=True)
    drift = drift_between(
        snapshot_a=run_a.snapshot_id, snapshot_b=run_b.snapshot_id, project_id=run_a.project_id
    )
    changed = {
        d.expectation_id
        for case_id, d in figures_a.details.items()
        if case_id in figures_b.details
        and figures_b.details[case_id].expectation_id != d.expectation_id
    } | {
        d.expectation_id
        for case_id, d in figures_b.details.items()
        if case_id in figures_a.details
        and figures_a.details[case_id].expectation_id != d.expectation_id
    }
    queries = (
        dict(Expectation.objects.filter(pk__in=changed).values_list("pk", "query"))
        if changed
        else {}
    )
    snapshots_differ = run_a.snapshot_id != run_b.snapshot_id
    pairs = []
    for case_id in sorted(set(figures_a.details) | set(figures_b.details)):
        a, b = figures_a.details.get(case_id), figures_b.details.get(case_id)
        if a is None or b is None:
            pairs.append(Pair(case_id, False, ["case_missing"], a=a, b=b))
            continue
        reasons = []
        if a.expectation_id != b.expectation_id:
            same_query = queries.get(a.expectation_id) == queries.get(b.expectation_id)
            reasons.append("expectation_changed" if same_query else "query_changed")
        for ref in sorted(a.cited | b.cited | set(a.relevant) | set(b.relevant)):
            if ref in drift:
                old, new = drift[ref]
                reasons.append(f"passage_drift: {ref} {old}→{new}")
        pair = Pair(case_id, not reasons, reasons, a=a, b=b)
        if pair.comparable and snapshots_differ:
            pair.notes.append(
                f"different snapshots ({run_a.snapshot.name} → {run_b.snapshot.name}) "
                "with identical evidence"
            )
        fact_ids = [f["fact_id"] for f in a.facts]
        for fact_id in fact_ids:
            pair.facts[fact_id] = FactChange(
                fact_status(a.claims, fact_id, source), fact_status(b.claims, fact_id, source)
            )
        pair.matched, pair.only_a, pair.only_b = match_claims(a.claims, b.claims)
        pairs.append(pair)
    comparable = {p.case_id for p in pairs if p.comparable}
    metrics_a = run_totals([r for r in figures_a.per_response if r["case_id"] in comparable])
    metrics_b = run_totals([r for r in figures_b.per_response if r["case_id"] in comparable])
    return Comparison(run_a, run_b, source, pairs, metrics_a, metrics_b)


def comparison_version(run_a: Run, run_b: Run) -> tuple:
    """Changes whenever a claim, verdict or review mark is added to either run, or anything
    that decides which verdicts were blind (consensus counts those).

    Rows are append-only, so the newest ids say everything about what changed. Three
    MAX queries (two more in a blind project); one join across claims and verdicts would
    multiply rows.
    """
    runs = [run_a.pk, run_b.pk]
    return (
        ClaimRevision.objects.filter(claim__response__run__in=runs).aggregate(m=Max("id"))["m"],
        VerdictRevision.objects.filter(claim__response__run__in=runs).aggregate(m=Max("id"))["m"],
        ResponseReview.objects.filter(response__run__in=runs).aggregate(m=Max("id"))["m"],
        *blind_state(runs=[run_a, run_b]),
    )


def compare_runs_cached(*, run_a: Run, run_b: Run, source: Source) -> Comparison:
    """The side-by-side page shows 20 pairs at a time: compute the comparison once per state."""
    # The import times too: a database restored or rolled back may hand out ids again.
    identity = (run_a.pk, run_a.imported_at, run_b.pk, run_b.imported_at, source.key)
    state = ":".join(map(str, (*identity, *comparison_version(run_a, run_b))))
    key = "compare:" + hashlib.sha256(state.encode()).hexdigest()
    comparison = cache.get(key)
    if comparison is None:
        comparison = compare_runs(run_a=run_a, run_b=run_b, source=source)
        cache.set(key, comparison, timeout=3600)
    return comparison
