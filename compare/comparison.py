"""Comparing two runs of the same cases (metrics.md, "Comparing two runs").

Pairs are made by case. A pair is comparable only when the case expectation is
the same and every ref either response cites, or that is relevant, has the same
SHA-256 in both runs; every pair that is not says why. Figures of both runs are
computed over the comparable pairs only.

compare.sides reads the rows; this module holds the rules. `compare_runs` builds every
pair (the command, the audit package, a page's summary); `compare_cases` builds the
pairs of some cases only, answers included (the pairs of one page).
"""

from __future__ import annotations

import difflib
import gc
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cards.figures import (
    CLAIM_FIGURES,
    ClaimState,
    Totals,
    VerdictView,
    choose,
    chooser,
    claim_figures,
)
from cards.metrics import stored_claim_totals
from cards.stats import Proportion
from cards.verdicts import Source
from compare.sides import Side, claim_texts, read_sides, read_stored_sides
from evidence.drift import drift_between
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
    a: Side | None = None
    b: Side | None = None

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
    return _fact_status([(claim, choose(claim, source)) for claim in claims], fact_id)


def _fact_status(views: list[tuple[ClaimState, VerdictView | None]], fact_id: str) -> str:
    """`fact_status` over claims whose verdicts are chosen already (once per claim)."""
    best, reported, judged = "absent", False, False
    for claim, view in views:
        if claim.withdrawn or claim.kind != "factual" or fact_id not in claim.facts:
            continue
        reported = True
        judged = judged or view is not None
        support = view.support if view else "unsupported"
        status = support if support in ("supported", "partial") else "unsupported"
        if ORDER[status] > ORDER[best]:
            best = status
    return UNREVIEWED if reported and not judged else best


def match_claims(a: list[ClaimState], b: list[ClaimState]) -> tuple[list, list, list]:
    """Match by the required facts the claims report, then by text similarity."""
    matched, left, right = match_by_facts(a, b)
    return match_by_text(matched, left, right)


def match_by_facts(
    a: list[ClaimState], b: list[ClaimState]
) -> tuple[list[tuple[str, str]], list[ClaimState], list[ClaimState]]:
    """The first step of `match_claims`: the pairs matched by a required fact both claims
    report, and the current claims of each side left unmatched (whose texts the second
    step compares: a caller without them reads them only when both sides have some)."""
    left = [c for c in a if not c.withdrawn]
    right = [c for c in b if not c.withdrawn]
    matched: list[tuple[str, str]] = []
    for claim in list(left):
        reported = set(claim.facts)
        partner = next((c for c in right if not reported.isdisjoint(c.facts)), None)
        if partner is not None:
            matched.append((claim.key, partner.key))
            left.remove(claim)
            right.remove(partner)
    return matched, left, right


def match_by_text(
    matched: list[tuple[str, str]], left: list[ClaimState], right: list[ClaimState]
) -> tuple[list, list, list]:
    """The second step of `match_claims`: the claims left matched by text similarity."""
    scored = []
    lowered = [(x.key, x.text.lower()) for x in left]
    for y in right if lowered else ():
        # SequenceMatcher indexes its second text: once per claim of b, not once per pair.
        matcher = difflib.SequenceMatcher(None, "", y.text.lower())
        for key, text in lowered:
            matcher.set_seq1(text)
            # Both quick ratios bound ratio() from above, for far less: a pair they put
            # below the threshold could never be matched, so its ratio is not needed.
            if (
                matcher.real_quick_ratio() >= SIMILAR_ENOUGH
                and matcher.quick_ratio() >= SIMILAR_ENOUGH
            ):
                scored.append((matcher.ratio(), key, y.key))
    scored.sort(reverse=True)
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
    """Every pair of the two runs, and both runs' figures over the comparable ones.

    The default source's comparison reads the stored figures (`stored_comparison`); any
    other source's reads every revision and verdict (`computed_comparison`): the two give
    the same comparison of the default source, which the reference test holds them to.
    """
    if source.mode == "default":
        return stored_comparison(run_a=run_a, run_b=run_b)
    return computed_comparison(run_a=run_a, run_b=run_b, source=source)


def computed_comparison(*, run_a: Run, run_b: Run, source: Source) -> Comparison:
    """`compare_runs` from every claim revision and verdict of both runs."""
    with _collector_paused():
        drift = drift_between(
            snapshot_a=run_a.snapshot_id,
            snapshot_b=run_b.snapshot_id,
            project_id=run_a.project_id,
        )
        sides_a, sides_b = read_sides(runs=[run_a, run_b], drifted=drift)
        totals = Totals(), Totals()
        pairs = _pairs(run_a, run_b, sides_a, sides_b, drift, source, totals=totals)
        return Comparison(run_a, run_b, source, pairs, totals[0].result(), totals[1].result())


def stored_comparison(*, run_a: Run, run_b: Run) -> Comparison:
    """`compare_runs` of the default source from the stored figures: each claim's chosen
    label and facts from its `ClaimTally`, the runs' figures summed from the comparable
    pairs' stored claim sums, and claim texts read only for the pairs whose matching
    needs them (both sides with a current claim no required fact matched)."""
    source = Source()
    with _collector_paused():
        drift = drift_between(
            snapshot_a=run_a.snapshot_id,
            snapshot_b=run_b.snapshot_id,
            project_id=run_a.project_id,
        )
        (sides_a, sides_b), stored = read_stored_sides(runs=[run_a, run_b], drifted=drift)
        pairs, unmatched = [], []
        for pair in _heads(run_a, run_b, sides_a, sides_b, drift):
            pairs.append(pair)
            a, b = pair.a, pair.b
            if a is None or b is None:
                continue
            _add_facts(pair, list(zip(a.claims, a.chosen, strict=True)),
                       list(zip(b.claims, b.chosen, strict=True)))  # fmt: skip
            matched, left, right = match_by_facts(a.claims, b.claims)
            if left and right:
                unmatched.append((pair, matched, left, right))
            else:
                pair.matched = matched
                pair.only_a, pair.only_b = [c.key for c in left], [c.key for c in right]
        if unmatched:
            texts = claim_texts(sides=[side for p, *_ in unmatched for side in (p.a, p.b)])
            for pair, matched, left, right in unmatched:
                for side, claims in ((pair.a, left), (pair.b, right)):
                    for claim in claims:
                        claim.text = texts[side.response_id, claim.key]
                pair.matched, pair.only_a, pair.only_b = match_by_text(matched, left, right)
        comparable = [pair for pair in pairs if pair.comparable]
        metrics = [
            stored_claim_totals(stored[getattr(p, side).response_id] for p in comparable).result()
            for side in ("a", "b")
        ]
        return Comparison(run_a, run_b, source, pairs, *metrics)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The pass makes about a million objects (claims, verdicts, pairs) that all live to its
    end: the cyclic garbage collector would walk them again and again for nothing (0.6 of
    2.1 s of CPU for two runs of 10,000 cases). What the pass drops, reference counting
    frees. At its end, everything is moved to the oldest generation (freeze, then
    unfreeze): the next young collections would otherwise walk the million objects once
    more each (0.3 s while the JSON was built); a full collection still finds any cycle."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if paused:
            gc.enable()


def compare_cases(
    *, run_a: Run, run_b: Run, source: Source, case_ids: Collection[str]
) -> list[Pair]:
    """The pairs of these cases only, with their answers (a page of the side-by-side view).

    The same pairs as `compare_runs` makes of these cases, read by case: drift is
    looked up only for the refs these responses cite or count as relevant.
    """
    sides_a, sides_b = read_sides(runs=[run_a, run_b], drifted=(), case_ids=case_ids, answers=True)
    refs = {
        ref
        for sides in (sides_a, sides_b)
        for side in sides.values()
        for ref in (*side.cited, *side.relevant)
    }
    drift = drift_between(
        snapshot_a=run_a.snapshot_id,
        snapshot_b=run_b.snapshot_id,
        project_id=run_a.project_id,
        refs=refs,
    )
    return _pairs(run_a, run_b, sides_a, sides_b, drift, source)


def _heads(
    run_a: Run,
    run_b: Run,
    sides_a: dict[str, Side],
    sides_b: dict[str, Side],
    drift: dict[str, tuple],
) -> Iterator[Pair]:
    """Each pair, in case order, with whether it is comparable and why not, and its notes:
    its facts and claims are the caller's to add."""
    snapshots_differ = run_a.snapshot_id != run_b.snapshot_id
    note = ""
    for case_id in sorted(sides_a.keys() | sides_b.keys()):
        a, b = sides_a.get(case_id), sides_b.get(case_id)
        if a is None or b is None:
            yield Pair(case_id, False, ["case_missing"], a=a, b=b)
            continue
        reasons = []
        if a.expectation_id != b.expectation_id:
            same_query = a.expectation["query"] == b.expectation["query"]
            reasons.append("expectation_changed" if same_query else "query_changed")
        # Every ref either response cites, or that is relevant (`cited` holds at least
        # those that drifted: the others cannot make the pair not comparable).
        if drift:
            refs = (a.cited | b.cited | set(a.relevant) | set(b.relevant)) & drift.keys()
            for ref in sorted(refs):
                old, new = drift[ref]
                reasons.append(f"passage_drift: {ref} {old}→{new}")
        pair = Pair(case_id, not reasons, reasons, a=a, b=b)
        if pair.comparable and snapshots_differ:
            note = note or (
                f"different snapshots ({run_a.snapshot.name} → {run_b.snapshot.name}) "
                "with identical evidence"
            )
            pair.notes.append(note)
        yield pair


def _add_facts(
    pair: Pair,
    views_a: list[tuple[ClaimState, VerdictView | None]],
    views_b: list[tuple[ClaimState, VerdictView | None]],
) -> None:
    """Each required fact of the pair's case: its status in a and in b."""
    for fact in pair.a.facts:
        fact_id = fact["fact_id"]
        pair.facts[fact_id] = FactChange(
            _fact_status(views_a, fact_id), _fact_status(views_b, fact_id)
        )


def _pairs(
    run_a: Run,
    run_b: Run,
    sides_a: dict[str, Side],
    sides_b: dict[str, Side],
    drift: dict[str, tuple],
    source: Source,
    *,
    totals: tuple[Totals, Totals] | None = None,
) -> list[Pair]:
    """The pairs, in case order; with `totals`, each run's claim figures of the comparable
    pairs are added to them."""
    pick = chooser(source)
    pairs = []
    for pair in _heads(run_a, run_b, sides_a, sides_b, drift):
        pairs.append(pair)
        a, b = pair.a, pair.b
        if a is None or b is None:
            continue
        chosen_a = [pick(claim) for claim in a.claims]  # once per claim
        chosen_b = [pick(claim) for claim in b.claims]
        _add_facts(pair, list(zip(a.claims, chosen_a, strict=True)),
                   list(zip(b.claims, chosen_b, strict=True)))  # fmt: skip
        pair.matched, pair.only_a, pair.only_b = match_claims(a.claims, b.claims)
        if totals is not None and pair.comparable:
            for total, side, chosen in ((totals[0], a, chosen_a), (totals[1], b, chosen_b)):
                total.add(
                    claim_figures(
                        reviewed=side.reviewed,
                        expectation=side.expectation,
                        claims=side.claims,
                        source=source,
                        chosen=chosen,
                    )  # fmt: skip
                )
    return pairs
