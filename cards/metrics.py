"""The figures of metrics.md for a run, read from the database in one streaming pass.

The arithmetic is in cards.figures; this module reads the rows and feeds them in.

A fixed number of queries whatever the size of the run: responses, ranked
retrieval, citations, claim revisions and verdicts are each read once, in
response order, and merged here; passages are read once per run (their
number tokens were stored at import, so no passage text is loaded).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from cards.blind import sightings
from cards.figures import ClaimState, Totals, Verdict, response_figures, to_json
from cards.models import ClaimRevision, VerdictRevision
from cards.prechecks import ClaimFacts, PassageFacts, ResponseFacts, prechecks
from cards.progress import is_reviewed, latest_review_complete
from cards.verdicts import Source
from evidence.drift import drifted_refs_of
from evidence.fields import as_text, decoded
from evidence.models import Passage
from replay.models import Citation, Response, Retrieval, Run

CHUNK = 2000


@dataclass
class ResponseDetail:
    """What a comparison needs beyond the figures (kept only when asked for)."""

    expectation_id: int
    answer: str
    claims: list[ClaimState]
    cited: set[str]
    relevant: list[str]
    facts: list[dict]


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
    source: Source = Source(),  # noqa: B008
    keep_details: bool = False,
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
            as_text("expectation__required_facts"),
            as_text("expectation__relevant_refs"),
            as_text("expectation__known_gaps"),
        )  # fmt: skip
    )
    passage_ids = Retrieval.objects.filter(response__run=run).values("passage_id")
    cited_ids = Citation.objects.filter(response__run=run).values("passage_id")
    passages = _passages(Passage.objects.filter(Q(pk__in=passage_ids) | Q(pk__in=cited_ids)))
    passages.update(_claim_cited_passages(run, known={row[0] for row in passages.values()}))
    drifted = _drifted(run, passages)
    facts_of = {pk: _facts(row) for pk, row in passages.items()}  # built once per passage
    # Refs are unique within the run's snapshot, so one map serves every response's checks.
    facts_by_ref = {facts.ref: facts for facts in facts_of.values()}
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
            as_text("citations"),
            as_text("facts"),
            as_text("gaps"),
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
            as_text("citation_relevance"),
            "diagnosis",
            "created_at",
        )  # fmt: skip
        .iterator(chunk_size=CHUNK)
    )
    clock = sightings(run=run)
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
                    key, kind, claim_text, decoded(cited), decoded(fact_ids), decoded(gap_ids),
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
            created_at,
        ) in verdicts.take(pk):
            if claim_id in claims:
                claims[claim_id].verdicts.append(
                    Verdict(
                        annotator,
                        origin,
                        support,
                        association,
                        decoded(relevance),
                        diagnosis,
                        created_at,
                    )
                )
        sighted = clock.of(pk)
        for claim in claims.values():
            claim.sighted = sighted
        ranked = [facts_of[pid] for _, pid in retrievals.take(pk)]
        cited_rows = citations.take(pk)
        facts, relevant, gaps = decoded(facts), decoded(relevant), decoded(gaps)
        expectation = {"required_facts": facts, "relevant_refs": relevant, "known_gaps": gaps}
        claim_list = list(claims.values())
        reviewed = is_reviewed(complete=complete, abstained=abstained, text=text)
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
                passages=facts_by_ref,
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


def _passages(queryset) -> dict[int, tuple]:
    return {
        pk: (ref, doc_id, status, frozenset(numbers.split()), digest, snapshot_id)
        for pk, ref, doc_id, status, numbers, digest, snapshot_id in queryset.values_list(
            "pk", "ref", "doc_id", "version_status", "numbers", "sha256", "snapshot_id"
        )
    }


def _claim_cited_passages(run: Run, *, known: set[str]) -> dict[int, tuple]:
    """Passages a claim cites although its response neither retrieved nor marked them.

    A bundle's claim may cite any passage it declares (bundle.md), and a reviewer any
    passage of the run's snapshot: without these, such a claim's pre-checks would read
    no evidence. Two queries; the second only when there is such a passage.
    """
    refs: set[str] = set()
    for cited in (
        ClaimRevision.objects.filter(claim__response__run=run)
        .exclude(citations=[])
        .order_by()  # no ordering column in the DISTINCT
        .values_list(as_text("citations"), flat=True)
        .distinct()
        .iterator(chunk_size=CHUNK)
    ):
        refs.update(decoded(cited))
    missing = sorted(refs - known)
    found: dict[int, tuple] = {}
    for start in range(0, len(missing), CHUNK):  # SQLite caps the parameters of a query
        found.update(
            _passages(
                Passage.objects.filter(
                    snapshot_id=run.snapshot_id, ref__in=missing[start : start + CHUNK]
                )
            )
        )
    return found


def _facts(row: tuple) -> PassageFacts:
    ref, _, status, numbers, _, _ = row
    return PassageFacts(ref, numbers, status)


def _drifted(run: Run, passages: dict[int, tuple]) -> frozenset[str]:
    """Refs of this run whose text differs in another snapshot of the project (one query)."""
    refs = {ref for ref, *_ in passages.values()}
    return frozenset(
        drifted_refs_of(snapshot_id=run.snapshot_id, project_id=run.project_id, refs=refs)
    )
