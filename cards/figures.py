"""The figures of metrics.md as pure functions over plain values: one response's claim and
retrieval figures, which verdict a figure uses, and a run's micro and macro totals.

No database here: cards.metrics reads the rows and feeds them in. Every rule of
metrics.md that is arithmetic lives in this module, and its tests are tables.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from operator import attrgetter
from typing import Any, NamedTuple

from cards.annotators import Annotator
from cards.prechecks import PassageFacts
from cards.rules import default_association
from cards.stats import Proportion
from cards.verdicts import LABELS, NO_CONSENSUS, Source, counted

CLAIM_FIGURES = (
    "citation_presence", "support", "support_or_partial", "support_assessed", "coverage",
    "citation_recall", "citation_precision", "honest_misses",
)  # fmt: skip
RANKS = (1, 2, 3, 4, 5, 10)


class Verdict(NamedTuple):
    """A verdict row as the figures read it (see cards.verdicts for which one counts)."""

    annotator: str
    origin: str
    support: str
    association: str
    relevance: dict[str, str] | None
    diagnosis: str
    created_at: datetime


@dataclass
class ClaimState:
    key: str
    kind: str
    text: str
    citations: list[str]
    facts: list[str]
    gaps: list[str]
    withdrawn: bool
    verdicts: list[Verdict] = field(default_factory=list)  # newest first
    # When each annotator could first see another's verdict on the case (cards.blind).
    sighted: Mapping[Annotator, datetime] = field(default_factory=dict)


@dataclass
class VerdictView:
    support: str  # a label, "unreviewed" or "no_consensus"
    association: str
    relevance: dict[str, str]
    diagnosis: str


# Which verdict counts depends only on each verdict's annotator, origin and label, in
# order, unless blind review makes their times matter (`sighted`): remembered per source
# and such pattern, the 100,000 claims of a run cost a few dozen calls of `counted`.
_CHOSEN: dict[Source, dict[tuple, int]] = {}
_CHOSEN_LIMIT = 4096  # patterns per source
_PATTERN = attrgetter("annotator", "origin", "support")
_UNREVIEWED, _NO_CONSENSUS = -1, -2


def choose(claim: ClaimState, source: Source) -> VerdictView | None:
    """The verdict the figures use for this claim; None when it has none from the source."""
    return chooser(source)(claim)


def chooser(source: Source) -> Callable[[ClaimState], VerdictView | None]:
    """`choose` with this source, for a caller that asks about many claims."""
    if source not in _CHOSEN and len(_CHOSEN) >= 64:
        _CHOSEN.clear()
    remembered = _CHOSEN.setdefault(source, {})

    def chosen_for(claim: ClaimState) -> VerdictView | None:
        verdicts = claim.verdicts
        if claim.sighted:
            chosen = counted(verdicts, source, sighted=claim.sighted)
        else:
            pattern = tuple(map(_PATTERN, verdicts))
            at = remembered.get(pattern)
            if at is None:
                found = counted(verdicts, source, sighted={})
                if found is None:
                    at = _UNREVIEWED
                elif found == NO_CONSENSUS:
                    at = _NO_CONSENSUS
                else:
                    at = next(i for i, v in enumerate(verdicts) if v is found)
                if len(remembered) >= _CHOSEN_LIMIT:
                    remembered.clear()
                remembered[pattern] = at
            chosen = (
                None
                if at == _UNREVIEWED
                else NO_CONSENSUS
                if at == _NO_CONSENSUS
                else verdicts[at]
            )
        if chosen is None:
            return None
        if chosen == NO_CONSENSUS:
            return VerdictView(NO_CONSENSUS, _default_association(claim), {}, "")
        return VerdictView(
            chosen.support, chosen.association, chosen.relevance or {}, chosen.diagnosis
        )

    return chosen_for


def _default_association(claim: ClaimState) -> str:
    return default_association(claim.citations)


def response_figures(
    *, reviewed: bool, expectation: dict, claims: list[ClaimState],
    ranked: list[PassageFacts], doc_of: dict[str, str], source: Source,
) -> dict[str, Any]:  # fmt: skip
    """Per-response figures; claim figures are None for an unreviewed response."""
    out = claim_figures(reviewed=reviewed, expectation=expectation, claims=claims, source=source)
    facts = expectation["required_facts"]
    relevant = list(dict.fromkeys(expectation["relevant_refs"]))
    out.update(retrieval_figures(ranked, relevant, facts, doc_of))
    return out


def claim_figures(
    *, reviewed: bool, expectation: dict, claims: list[ClaimState], source: Source,
    chosen: list[VerdictView | None] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The claim figures of `response_figures` alone (a comparison needs no retrieval).

    `chosen`: `choose(claim, source)` of each claim, in order, when the caller has them.
    """
    facts = expectation["required_facts"]
    gaps = [g["gap_id"] for g in expectation["known_gaps"]]
    current = [c for c in claims if not c.withdrawn]
    factual = [c for c in current if c.kind == "factual"]
    out: dict[str, Any] = {}
    if not reviewed:
        out["status"] = "unreviewed"
        out["claims"] = len(factual)
        out["verdicts"] = None
        for name in CLAIM_FIGURES:
            out[name] = None
        out["invented_over_gap"] = None
    else:
        out["status"] = "abstention" if not factual else "reviewed"
        view_of = _chooser(claims, source, chosen)
        out.update(_claim_figures(factual, current, facts, gaps, view_of))
    return out


def _chooser(
    claims: list[ClaimState], source: Source, chosen: list[VerdictView | None] | None
) -> Callable[[ClaimState], VerdictView | None]:
    """Each claim's verdict view: chosen now, or as the caller chose it already."""
    if chosen is None:
        return chooser(source)
    views = {id(claim): view for claim, view in zip(claims, chosen, strict=True)}
    return lambda claim: views[id(claim)]


def _claim_figures(factual, current, facts, gaps, view_of) -> dict[str, Any]:
    views = [(claim, view_of(claim)) for claim in factual]
    counts = Counter(v.support if v else "unreviewed" for _, v in views)
    verdicts = {label: counts[label] for label in (*LABELS, "unreviewed", NO_CONSENSUS)}
    judged = [(c, v) for c, v in views if v is None or v.support != NO_CONSENSUS]
    n = len(judged)
    supported = [c for c, v in judged if v and v.support == "supported"]
    attached = [
        c for c, v in judged if (v.association if v else _default_association(c)) == "attached"
    ]
    supported_attached = [
        c for c, v in judged if v and v.support == "supported" and v.association == "attached"
    ]
    relevance = [
        label for c, v in judged if v for ref, label in v.relevance.items() if ref in c.citations
    ]
    assessed = n - counts["not_assessable"] - counts["unreviewed"]
    covered = {fact for c in supported for fact in c.facts}
    fact_ids = [f["fact_id"] for f in facts]
    honest = {
        gap
        for c in current
        if c.kind == "abstention"
        and not any(v and v.support == "unsupported" for v in [view_of(c)])
        for gap in c.gaps
    }
    invented = sum(
        1
        for c, v in views
        if c.gaps or (v and v.support == "unsupported" and v.diagnosis == "not_in_collection")
    )
    return {
        "claims": len(factual),
        "verdicts": verdicts,
        "citation_presence": Proportion(len(attached), n),
        "support": Proportion(len(supported), n),
        "support_or_partial": Proportion(len(supported) + counts["partial"], n),
        "support_assessed": Proportion(len(supported), max(assessed, 0)),
        "coverage": Proportion(sum(1 for f in fact_ids if f in covered), len(fact_ids)),
        "citation_recall": Proportion(len(supported_attached), n),
        "citation_precision": Proportion(
            sum(1 for label in relevance if label in {"necessary", "redundant"}), len(relevance)
        ),
        "honest_misses": Proportion(sum(1 for g in gaps if g in honest), len(gaps)),
        "invented_over_gap": invented,
    }


def ref_document(ref: str) -> str:
    """The document of a ref, `doc_id@version#chunk_id`, unless its passage says otherwise
    (`doc_of`, cards.metrics.doc_exceptions)."""
    return ref.split("@", 1)[0]


def retrieval_figures(ranked, relevant, facts, doc_of) -> dict[str, Any]:
    """recall@k and hit@k from the first rank of each relevant ref, doc and fact (one pass)."""
    refs = [p.ref for p in ranked]
    first: dict[str, int] = {}
    first_doc: dict[str, int] = {}
    for rank, ref in enumerate(refs, start=1):
        first.setdefault(ref, rank)
        first_doc.setdefault(doc_of.get(ref) or ref_document(ref), rank)
    # Past every k, however short the list: len(refs) + 1 would count as found at a k
    # beyond the list's end (k = 1 for an empty list, 4 for a list of 3).
    never = math.inf
    relevant_ranks = [first.get(r, never) for r in relevant]
    docs = {doc_of.get(r) or ref_document(r) for r in relevant}
    doc_ranks = [first_doc.get(doc, never) for doc in docs]
    fact_ranks = [
        min((first.get(r, never) for r in f.get("evidence", ())), default=never) for f in facts
    ]
    out: dict[str, Any] = {}
    for k in sorted({*RANKS, len(refs)} - {0}):
        out[f"passage_recall@{k}"] = Proportion(
            sum(r <= k for r in relevant_ranks), len(relevant_ranks)
        )
        out[f"doc_recall@{k}"] = Proportion(sum(r <= k for r in doc_ranks), len(doc_ranks))
        out[f"fact_evidence_recall@{k}"] = Proportion(
            sum(r <= k for r in fact_ranks), len(fact_ranks)
        )
        out[f"hit@{k}"] = (1 if min(relevant_ranks) <= k else 0) if relevant_ranks else None
    if relevant_ranks:
        found = sorted(r for r in relevant_ranks if r != never)
        precisions = [(i + 1) / rank for i, rank in enumerate(found)]
        out["context_precision"] = (
            round(sum(precisions) / len(precisions), 4) if precisions else 0.0
        )
    else:
        out["context_precision"] = None
    return out


def stored_retrieval(pairs: list) -> dict[str, Any]:
    """A response's retrieval figures, as `cards.figures` computes them, from its row
    (pairs in order: JSON objects lose their key order in PostgreSQL's jsonb)."""
    return {
        name: Proportion(*value) if isinstance(value, list) else value for name, value in pairs
    }


def retrieval_totals(totals: dict[str, Any]) -> dict[str, list]:
    """The retrieval part of a run's totals (`Totals.result`), as stored, in order."""
    return {
        part: [
            [name, as_stored(value)]
            for name, value in totals[part].items()
            if "@" in name or name == "context_precision"
        ]
        for part in ("undefined", "micro", "macro")
    }


def as_stored(value: Any) -> Any:
    return [value.k, value.n] if isinstance(value, Proportion) else value


def to_json(value: Any) -> Any:
    if isinstance(value, Proportion):
        return value.as_json()
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


class Totals:
    """Micro (pooled k/n) and macro (mean of defined per-response values), fed one response
    at a time, so a run's totals need no list of its responses."""

    def __init__(self) -> None:
        self.responses = self.reviewed = self.abstentions = self.claims = 0
        self.invented = self.honest_cases = 0
        self.verdicts: Counter = Counter()
        # name → [k, n, defined cases, how many of each defined (k, n), rows considered]; a
        # (k, n) counted as the one int k << 32 | n (no tuple made per value: `mean`)
        self.sums: dict[str, list] = {}
        self.hits: dict[str, list[int]] = {}
        self.precisions: list[float] = [0.0, 0]

    def add(self, r: dict[str, Any]) -> None:
        self.responses += 1
        reviewed = r["status"] != "unreviewed"
        if reviewed:
            self.reviewed += 1
            self.abstentions += r["status"] == "abstention"
            self.claims += r["claims"]
            self.verdicts.update(r["verdicts"])
            self.invented += r["invented_over_gap"] or 0
            misses = r["honest_misses"]
            self.honest_cases += bool(isinstance(misses, Proportion) and misses.k)
        for name, value in r.items():
            if name.startswith("hit@"):
                if value is not None:
                    hit = self.hits.setdefault(name, [0, 0])
                    hit[0] += value
                    hit[1] += 1
                continue
            claim_figure = name in CLAIM_FIGURES
            if not (claim_figure or "recall@" in name):
                continue
            if claim_figure and not reviewed:
                continue
            acc = self.sums.get(name) or self.sums.setdefault(name, new_sum())
            acc[4] += 1
            if value is None or not value.n:
                continue
            acc[0] += value.k
            acc[1] += value.n
            acc[2] += 1
            acc[3][value.k << 32 | value.n] += 1
        if r.get("context_precision") is not None:  # absent from claim figures alone
            self.precisions[0] += r["context_precision"]
            self.precisions[1] += 1

    def result(self) -> dict[str, Any]:
        micro: dict[str, Any] = {}
        macro: dict[str, Any] = {}
        undefined: dict[str, int] = {}
        retrieval = sorted((n for n in self.sums if "recall@" in n), key=_figure_order)
        for name in [*CLAIM_FIGURES, *retrieval]:
            k, n, defined, values, rows = self.sums.get(name) or new_sum()
            if name in CLAIM_FIGURES:
                rows = self.reviewed  # every reviewed response has every claim figure
            micro[name] = Proportion(k, n)
            undefined[name] = rows - defined
            macro[name] = {"value": mean(values, defined), "cases": defined} if defined else None
        for name in sorted(self.hits, key=_figure_order):
            hits, cases = self.hits[name]
            micro[name] = Proportion(hits, cases)
        total, cases = self.precisions
        macro["context_precision"] = (
            {"value": round(total / cases, 4), "cases": cases} if cases else None
        )
        return {
            "responses": self.responses,
            "reviewed": self.reviewed,
            "unreviewed": self.responses - self.reviewed,
            "abstentions": self.abstentions,
            "claims": self.claims,
            "verdicts": {
                label: self.verdicts[label] for label in (*LABELS, "unreviewed", NO_CONSENSUS)
            },
            "invented_over_gap": self.invented,
            "honest_misses_cases": self.honest_cases,
            "undefined": undefined,
            "micro": micro,
            "macro": macro,
        }


def new_sum() -> list:
    """A figure's accumulator in `Totals.sums`."""
    return [0, 0, 0, Counter(), 0]


def mean(values: Counter, defined: int) -> float:
    """The macro mean of the defined values, counted as how many of each (k, n) (as the int
    k << 32 | n, a count of citations or facts never reaching 2**32): summed
    exactly, so the same whatever the order the responses were added or taken away in
    (`cards.metrics` keeps a run's totals current by adding and removing responses), and
    rounded at the fourth decimal, a half up (1/160 = 0.00625 is 0.0063)."""
    by_n: Counter = Counter()
    for pair, count in values.items():
        by_n[pair & 0xFFFF_FFFF] += (pair >> 32) * count
    total = sum((Fraction(k, n) for n, k in by_n.items()), Fraction(0))
    return math.floor(total * 10_000 / defined + Fraction(1, 2)) / 10_000


def run_totals(per_response: list[dict[str, Any]]) -> dict[str, Any]:
    """The run totals of a list of per-response figures (a comparison's subset, say)."""
    totals = Totals()
    for response in per_response:
        totals.add(response)
    return totals.result()


def _figure_order(name: str) -> tuple[str, int]:
    base, _, k = name.partition("@")
    return base, int(k) if k.isdigit() else 0
