"""The figures of metrics.md for a run, computed in one streaming pass.

A fixed number of queries whatever the size of the run: responses, ranked
retrieval, citations, claim revisions and verdicts are each read once, in
response order, and merged here; passages are read once per run (their
number tokens were stored at import, so no passage text is loaded).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import F, Q, TextField
from django.db.models.functions import Cast

from cards.models import ClaimRevision, Origin, VerdictRevision
from cards.prechecks import ClaimFacts, PassageFacts, ResponseFacts, prechecks
from cards.stats import Proportion
from evidence.models import Passage
from replay.models import Citation, Response, Retrieval, Run
from replay.selectors import latest_review_complete

LABELS = ("supported", "partial", "unsupported", "not_assessable")
CLAIM_FIGURES = (
    "citation_presence", "support", "support_or_partial", "support_assessed", "coverage",
    "citation_recall", "citation_precision", "honest_misses",
)  # fmt: skip
RANKS = (1, 2, 3, 4, 5, 10)
CHUNK = 2000


@functools.lru_cache(maxsize=65536)
def _decoded(text: str | None) -> Any:
    """JSON columns come as text and are decoded once per distinct value: most claims'
    `facts`, `gaps` and relevance maps repeat. The results are shared: never mutate them."""
    return None if text is None else json.loads(text)


def _text(name: str) -> Cast:
    # Read as text: Django's per-row JSON converters cost more than the decoding itself.
    return Cast(F(name), output_field=TextField())


@dataclass(frozen=True)
class Source:
    """Which verdict of a claim the figures use (metrics.md)."""

    mode: str = "default"  # default | annotator | consensus
    annotator: str = ""

    @property
    def label(self) -> str:
        return f"annotator:{self.annotator}" if self.mode == "annotator" else self.mode

    @classmethod
    def parse(cls, label: str | None) -> Source:
        """From a label (`default`, `consensus`, `annotator:NAME`); anything else is default."""
        if label == "consensus":
            return cls("consensus")
        if label and label.startswith("annotator:") and label != "annotator:":
            return cls("annotator", label.removeprefix("annotator:"))
        return cls()

    @classmethod
    def from_options(cls, *, annotator: str | None, consensus: bool) -> Source:
        """From the command-line options `--annotator NAME | --consensus`."""
        if annotator:
            return cls("annotator", annotator)
        return cls("consensus") if consensus else cls()


@dataclass
class ClaimState:
    key: str
    kind: str
    text: str
    citations: list[str]
    facts: list[str]
    gaps: list[str]
    withdrawn: bool
    verdicts: list[tuple] = field(default_factory=list)  # newest first


@dataclass
class ResponseDetail:
    """What a comparison needs beyond the figures (kept only when asked for)."""

    expectation_id: int
    answer: str
    claims: list[ClaimState]
    cited: set[str]
    relevant: list[str]
    facts: list[dict]


@dataclass
class VerdictView:
    support: str  # a label, "unreviewed" or "no_consensus"
    association: str
    relevance: dict[str, str]
    diagnosis: str


def _grouped(rows: Iterator[tuple], key_index: int = 0) -> Iterator[tuple[Any, list[tuple]]]:
    for key, group in itertools.groupby(rows, key=lambda row: row[key_index]):
        yield key, list(group)


class Lockstep:
    """Walks several iterators ordered by response id in step with the responses."""

    def __init__(self, rows: Iterator[tuple]):
        self.groups = _grouped(rows)
        self.pending: tuple[Any, list[tuple]] | None = next(self.groups, None)

    def take(self, response_id: int) -> list[tuple]:
        while self.pending is not None and self.pending[0] < response_id:
            self.pending = next(self.groups, None)
        if self.pending is not None and self.pending[0] == response_id:
            rows = self.pending[1]
            self.pending = next(self.groups, None)
            return rows
        return []


def choose(claim: ClaimState, source: Source) -> VerdictView | None:
    """The verdict the figures use for this claim; None when it has none from the source."""
    verdicts = claim.verdicts  # (annotator, origin, support, association, relevance, diagnosis)
    chosen = None
    if source.mode == "default":
        chosen = next((v for v in verdicts if v[1] == Origin.ADJUDICATION), None) or next(
            (v for v in verdicts if v[1] == Origin.REVIEW), None
        )
    elif source.mode == "annotator":
        chosen = next(
            (v for v in verdicts if v[0] == source.annotator and v[1] != Origin.ADJUDICATION), None
        )
    else:
        # An imported annotator is never the local account of the same name (metrics.md).
        newest: dict[tuple[str, bool], tuple] = {}
        for v in verdicts:
            if v[1] != Origin.ADJUDICATION:
                newest.setdefault((v[0], v[1] == Origin.IMPORTED), v)
        if not newest:
            return None
        counts = Counter(v[2] for v in newest.values())
        label, votes = counts.most_common(1)[0]
        if votes * 2 <= len(newest):
            return VerdictView("no_consensus", _default_association(claim), {}, "")
        chosen = next(v for v in newest.values() if v[2] == label)
    if chosen is None:
        return None
    return VerdictView(chosen[2], chosen[3], chosen[4] or {}, chosen[5])


def _default_association(claim: ClaimState) -> str:
    return "attached" if claim.citations else "missing"


def response_figures(
    *, reviewed: bool, expectation: dict, claims: list[ClaimState],
    ranked: list[PassageFacts], doc_of: dict[str, str], source: Source,
) -> dict[str, Any]:  # fmt: skip
    """Per-response figures; claim figures are None for an unreviewed response."""
    facts = expectation["required_facts"]
    gaps = [g["gap_id"] for g in expectation["known_gaps"]]
    relevant = list(dict.fromkeys(expectation["relevant_refs"]))
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
        out.update(_claim_figures(factual, current, facts, gaps, source))
    out.update(_retrieval_figures(ranked, relevant, facts, doc_of))
    return out


def _claim_figures(factual, current, facts, gaps, source) -> dict[str, Any]:
    views = [(claim, choose(claim, source)) for claim in factual]
    counts = Counter(v.support if v else "unreviewed" for _, v in views)
    verdicts = {label: counts[label] for label in (*LABELS, "unreviewed", "no_consensus")}
    judged = [(c, v) for c, v in views if v is None or v.support != "no_consensus"]
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
        and not any(v and v.support == "unsupported" for v in [choose(c, source)])
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


def _retrieval_figures(ranked, relevant, facts, doc_of) -> dict[str, Any]:
    """recall@k and hit@k from the first rank of each relevant ref, doc and fact (one pass)."""
    refs = [p.ref for p in ranked]
    first: dict[str, int] = {}
    first_doc: dict[str, int] = {}
    for rank, ref in enumerate(refs, start=1):
        first.setdefault(ref, rank)
        first_doc.setdefault(doc_of.get(ref) or ref.split("@", 1)[0], rank)
    never = math.inf  # beyond every k: a list shorter than k has no rank past its end
    relevant_ranks = [first.get(r, never) for r in relevant]
    docs = {doc_of.get(r) or r.split("@", 1)[0] for r in relevant}
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


def to_json(value: Any) -> Any:
    if isinstance(value, Proportion):
        return value.as_json()
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


@dataclass
class RunFigures:
    run_id: str
    source: Source
    per_response: list[dict[str, Any]]
    totals: dict[str, Any]
    details: dict[str, ResponseDetail] = field(default_factory=dict)  # by case_id, on request

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "verdicts_from": self.source.label,
            "per_response": [to_json(r) for r in self.per_response],
            "run": to_json(self.totals),
        }


def run_metrics(
    *,
    run: Run,
    source: Source = Source(),
    keep_details: bool = False,  # noqa: B008
) -> RunFigures:
    """Every figure of metrics.md for every response of the run, and the run totals."""
    per_response, details, totals = [], {}, Totals()
    for figures, detail in iter_response_figures(
        run=run, source=source, keep_details=keep_details
    ):
        per_response.append(figures)
        totals.add(figures)
        if detail is not None:
            details[figures["case_id"]] = detail
    return RunFigures(run.run_id, source, per_response, totals.result(), details)


def iter_response_figures(
    *, run: Run, source: Source, keep_details: bool = False
) -> Iterator[tuple[dict[str, Any], ResponseDetail | None]]:
    """Each response's figures (and, when asked, what a comparison needs), one at a time."""
    responses = (
        Response.objects.filter(run=run)
        .annotate(review_complete=latest_review_complete())
        .order_by("pk")
        .values_list(
            "pk",
            "case__case_id",
            "expectation_id",
            "text",
            "abstained",
            "review_complete",
            _text("expectation__required_facts"),
            _text("expectation__relevant_refs"),
            _text("expectation__known_gaps"),
        )  # fmt: skip
    )
    passage_ids = Retrieval.objects.filter(response__run=run).values("passage_id")
    cited_ids = Citation.objects.filter(response__run=run).values("passage_id")
    passages: dict[int, tuple] = {
        pk: (ref, doc_id, status, frozenset(numbers.split()), digest, snapshot_id)
        for pk, ref, doc_id, status, numbers, digest, snapshot_id in Passage.objects.filter(
            Q(pk__in=passage_ids) | Q(pk__in=cited_ids)
        ).values_list("pk", "ref", "doc_id", "version_status", "numbers", "sha256", "snapshot_id")
    }
    drifted = _drifted(run, passages)
    facts_of = {pk: _facts(row) for pk, row in passages.items()}  # built once per passage
    doc_of = {ref: doc for ref, doc, *_ in passages.values()}
    retrievals = Lockstep(
        Retrieval.objects.filter(response__run=run)
        .order_by("response_id", "rank")
        .values_list("response_id", "passage_id")
        .iterator(chunk_size=CHUNK)
    )
    citations = Lockstep(
        Citation.objects.filter(response__run=run)
        .order_by("response_id", "position")
        .values_list("response_id", "passage_id", "start", "end")
        .iterator(chunk_size=CHUNK)
    )
    revisions = Lockstep(
        ClaimRevision.objects.filter(claim__response__run=run)
        .order_by("claim__response_id", "claim__position", "claim_id", "-seq")
        .values_list(
            "claim__response_id",
            "claim_id",
            "claim__key",
            "kind",
            "text",
            _text("citations"),
            _text("facts"),
            _text("gaps"),
            "withdrawn",
        )  # fmt: skip
        .iterator(chunk_size=CHUNK)
    )
    verdicts = Lockstep(
        VerdictRevision.objects.filter(claim__response__run=run)
        .order_by("claim__response_id", "claim_id", "-seq")
        .values_list(
            "claim__response_id",
            "claim_id",
            "annotator",
            "origin",
            "support",
            "association",
            _text("citation_relevance"),
            "diagnosis",
        )  # fmt: skip
        .iterator(chunk_size=CHUNK)
    )
    for (
        pk,
        case_id,
        expectation_id,
        text,
        abstained,
        complete,
        facts,
        relevant,
        gaps,
    ) in responses.iterator(chunk_size=CHUNK):
        claims: dict[int, ClaimState] = {}
        for (
            _,
            claim_id,
            key,
            kind,
            claim_text,
            cited,
            fact_ids,
            gap_ids,
            withdrawn,
        ) in revisions.take(pk):
            if claim_id not in claims:  # newest revision first
                claims[claim_id] = ClaimState(
                    key, kind, claim_text, _decoded(cited), _decoded(fact_ids), _decoded(gap_ids),
                    withdrawn,
                )  # fmt: skip
        for (
            _,
            claim_id,
            annotator,
            origin,
            support,
            association,
            relevance,
            diagnosis,
        ) in verdicts.take(pk):
            if claim_id in claims:
                claims[claim_id].verdicts.append(
                    (annotator, origin, support, association, _decoded(relevance), diagnosis)
                )
        ranked = [facts_of[pid] for _, pid in retrievals.take(pk)]
        cited_rows = citations.take(pk)
        known = {p.ref: p for p in ranked}
        for _, pid, _, _ in cited_rows:
            known.setdefault(passages[pid][0], facts_of[pid])
        facts, relevant, gaps = _decoded(facts), _decoded(relevant), _decoded(gaps)
        expectation = {"required_facts": facts, "relevant_refs": relevant, "known_gaps": gaps}
        claim_list = list(claims.values())
        reviewed = bool(complete) or (abstained and not text)
        figures = response_figures(
            reviewed=reviewed, expectation=expectation,
            claims=claim_list, ranked=ranked, doc_of=doc_of, source=source,
        )  # fmt: skip
        hints = prechecks(
            ResponseFacts(
                answer=text,
                marker_spans=[(s, e) for _, _, s, e in cited_rows if s is not None],
                cited_refs=[passages[pid][0] for _, pid, _, _ in cited_rows],
                retrieved=ranked,
                passages=known,
                relevant_refs=relevant,
                drifted_refs=drifted,
                claims=[
                    ClaimFacts(c.key, c.kind, c.text, c.citations)
                    for c in claim_list
                    if not c.withdrawn
                ],
            )
        )
        detail = None
        if keep_details:
            detail = ResponseDetail(
                expectation_id=expectation_id,
                answer=text,
                claims=claim_list,
                cited={passages[pid][0] for _, pid, _, _ in cited_rows},
                relevant=relevant,
                facts=facts,
            )
        yield {"case_id": case_id, **figures, "prechecks": hints.as_dict()}, detail


def _facts(row: tuple) -> PassageFacts:
    ref, _, status, numbers, _, _ = row
    return PassageFacts(ref, numbers, status)


def _drifted(run: Run, passages: dict[int, tuple]) -> frozenset[str]:
    """Refs of this run whose text differs in another snapshot of the project (one query)."""
    mine = {ref: digest for ref, _, _, _, digest, _ in passages.values()}
    others = (
        Passage.objects.filter(snapshot__project_id=run.project_id, ref__in=list(mine))
        .exclude(snapshot_id=run.snapshot_id)
        .values_list("ref", "sha256")
    )
    return frozenset(ref for ref, digest in others if digest != mine[ref])


class Totals:
    """Micro (pooled k/n) and macro (mean of defined per-response values), fed one response
    at a time, so a run's totals need no list of its responses."""

    def __init__(self) -> None:
        self.responses = self.reviewed = self.abstentions = self.claims = 0
        self.invented = self.honest_cases = 0
        self.verdicts: Counter = Counter()
        # name → [k, n, defined cases, sum of defined values, rows considered]
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
            acc = self.sums.setdefault(name, [0, 0, 0, 0.0, 0])
            acc[4] += 1
            if value is None or not value.n:
                continue
            acc[0] += value.k
            acc[1] += value.n
            acc[2] += 1
            acc[3] += value.k / value.n
        if r["context_precision"] is not None:
            self.precisions[0] += r["context_precision"]
            self.precisions[1] += 1

    def result(self) -> dict[str, Any]:
        micro: dict[str, Any] = {}
        macro: dict[str, Any] = {}
        undefined: dict[str, int] = {}
        retrieval = sorted((n for n in self.sums if "recall@" in n), key=_figure_order)
        for name in [*CLAIM_FIGURES, *retrieval]:
            k, n, defined, total, rows = self.sums.get(name, [0, 0, 0, 0.0, 0])
            if name in CLAIM_FIGURES:
                rows = self.reviewed  # every reviewed response has every claim figure
            micro[name] = Proportion(k, n)
            undefined[name] = rows - defined
            macro[name] = (
                {"value": round(total / defined, 4), "cases": defined} if defined else None
            )
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
                label: self.verdicts[label] for label in (*LABELS, "unreviewed", "no_consensus")
            },
            "invented_over_gap": self.invented,
            "honest_misses_cases": self.honest_cases,
            "undefined": undefined,
            "micro": micro,
            "macro": macro,
        }


def run_totals(per_response: list[dict[str, Any]]) -> dict[str, Any]:
    """The run totals of a list of per-response figures (a comparison's subset, say)."""
    totals = Totals()
    for response in per_response:
        totals.add(response)
    return totals.result()


def _figure_order(name: str) -> tuple[str, int]:
    base, _, k = name.partition("@")
    return base, int(k) if k.isdigit() else 0
