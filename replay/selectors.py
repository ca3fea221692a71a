"""Reads of the replay app: runs, their responses and what a case page shows."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.http import Http404

from cards.models import Claim, ClaimRevision, ResponseReview, VerdictRevision
from evidence.models import Passage, Project
from replay.models import Citation, Response, Retrieval, Run


class SubqueryCount(Subquery):
    """COUNT(*) of a correlated queryset: joins across responses and claims would multiply rows."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) AS counted)"
    output_field = IntegerField()


def latest_review_complete() -> Subquery:
    """The newest ResponseReview's `complete` for the outer response (None when never marked)."""
    newest = ResponseReview.objects.filter(response=OuterRef("pk")).order_by("-pk")
    return Subquery(newest.values("complete")[:1])


def reviewed_condition() -> Q:
    """A response counts as reviewed when its decomposition is marked complete, or when
    the system abstained with no text at all (metrics.md)."""
    return Q(review_complete=True) | Q(abstained=True, text="")


def runs_for_project(*, project: Project) -> QuerySet[Run]:
    """Runs with the counts the project page shows, in one query."""
    responses = Response.objects.filter(run=OuterRef("pk")).values("pk")
    reviewed = (
        Response.objects.filter(run=OuterRef("pk"))
        .annotate(review_complete=latest_review_complete())
        .filter(reviewed_condition())
        .values("pk")
    )
    return (
        Run.objects.filter(project=project)
        .select_related("snapshot")
        .annotate(
            response_count=SubqueryCount(responses),
            reviewed_count=SubqueryCount(reviewed),
            claim_count=SubqueryCount(
                Claim.objects.filter(response__run=OuterRef("pk")).values("pk")
            ),
        )
        .order_by("-imported_at", "-pk")
    )


def run_for_project(*, project: Project, run_id: str) -> Run:
    run = Run.objects.select_related("snapshot").filter(project=project, run_id=run_id).first()
    if run is None:
        raise Http404("No such run.")
    return run


def responses_for_run(*, run: Run) -> QuerySet[Response]:
    return (
        Response.objects.filter(run=run)
        .select_related("case", "expectation")
        .annotate(
            claim_count=SubqueryCount(Claim.objects.filter(response=OuterRef("pk")).values("pk")),
            retrieved_count=SubqueryCount(
                Retrieval.objects.filter(response=OuterRef("pk")).values("pk")
            ),
            citation_count=SubqueryCount(
                Citation.objects.filter(response=OuterRef("pk")).values("pk")
            ),
            review_complete=latest_review_complete(),
        )
        .order_by("position")
    )


@dataclass(frozen=True)
class Segment:
    text: str
    citation: Citation | None = None


@dataclass(frozen=True)
class ClaimView:
    claim: Claim
    revision: ClaimRevision
    verdicts: list[VerdictRevision]


@dataclass(frozen=True)
class CasePage:
    response: Response
    segments: list[Segment]
    unplaced_citations: list[Citation]
    retrieved: list[Retrieval]
    cited_only: list[Passage]
    cited_refs: set[str]
    relevant_refs: set[str]
    expected_refs: set[str]
    claims: list[ClaimView]
    review_complete: bool


def case_page(*, run: Run, case_id: str) -> CasePage:
    """Everything the read-only case page shows, in a fixed number of queries."""
    response = (
        Response.objects.select_related("case", "expectation")
        .filter(run=run, case__case_id=case_id)
        .annotate(review_complete=latest_review_complete())
        .first()
    )
    if response is None:
        raise Http404("No such case in this run.")
    retrieved = list(response.retrieved.select_related("passage").order_by("rank"))
    citations = list(response.citations.select_related("passage").order_by("position"))
    claims = (
        Claim.objects.filter(response=response)
        .order_by("position")
        .prefetch_related(
            Prefetch("revisions", queryset=ClaimRevision.objects.order_by("seq")),
            Prefetch("verdicts", queryset=VerdictRevision.objects.order_by("-seq")),
        )
    )
    claim_views = [
        ClaimView(
            claim=claim,
            revision=list(claim.revisions.all())[-1],
            verdicts=list(claim.verdicts.all()),
        )
        for claim in claims
    ]
    retrieved_refs = {row.passage.ref for row in retrieved}
    cited_only: dict[str, Passage] = {}
    for citation in citations:
        if citation.passage.ref not in retrieved_refs:
            cited_only.setdefault(citation.passage.ref, citation.passage)
    expectation = response.expectation
    segments, unplaced = answer_segments(response.text, citations)
    return CasePage(
        response=response,
        segments=segments,
        unplaced_citations=unplaced,
        retrieved=retrieved,
        cited_only=list(cited_only.values()),
        cited_refs={c.passage.ref for c in citations},
        relevant_refs=set(expectation.relevant_refs),
        expected_refs={
            ref for fact in expectation.required_facts for ref in fact.get("evidence", [])
        },
        claims=claim_views,
        review_complete=bool(response.review_complete)
        or (response.abstained and not response.text),
    )


def answer_segments(text: str, citations: list[Citation]) -> tuple[list[Segment], list[Citation]]:
    """Split the answer at its citation markers; markers without offsets are returned apart."""
    placed = sorted((c for c in citations if c.start is not None), key=lambda c: (c.start, c.end))
    segments: list[Segment] = []
    cursor = 0
    unplaced = [c for c in citations if c.start is None]
    for citation in placed:
        if citation.start < cursor:  # overlapping markers: show the first, list the rest
            unplaced.append(citation)
            continue
        if citation.start > cursor:
            segments.append(Segment(text[cursor : citation.start]))
        segments.append(Segment(text[citation.start : citation.end], citation))
        cursor = citation.end
    if cursor < len(text):
        segments.append(Segment(text[cursor:]))
    return segments, unplaced
