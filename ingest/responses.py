"""The rows of a batch of responses: each response, its retrieval, citations and cards.

A response's claims arrive with their verdicts; each claim becomes a claim
revision and one verdict revision per judgement, chained and sealed here
exactly as `cards.services.claims` and `.verdicts` seal a reviewer's (`cards.chain`), with the
bundle as their annotator, so an imported card verifies like any other.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db import models

from cards.chain import claim_revision, verdict_revision
from cards.models import (
    Claim,
    ClaimKind,
    ClaimRevision,
    Origin,
    ResponseReview,
    VerdictRevision,
)
from cards.rules import default_association
from ingest.bulk import RowWriter, to_json
from ingest.rows import (
    CitationRow,
    ClaimRevisionRow,
    ClaimRow,
    ResponseReviewRow,
    ResponseRow,
    RetrievalRow,
    VerdictRevisionRow,
)
from ingest.rules import ResponseSeen
from ingest.schema import parse_rfc3339
from replay.models import Citation, Response, Retrieval

BUNDLE_ANNOTATOR = "bundle"  # author of claim decompositions that arrive inside a bundle


class Ids:
    """Primary keys reserved for a batch, table by table, handed out in order."""

    def __init__(self, rows: RowWriter, counts: dict[type[models.Model], int]) -> None:
        self.iterators: dict[type[models.Model], Iterator[int]] = {
            model: iter(rows.reserve_ids(model, count)) for model, count in counts.items()
        }

    def next(self, model: type[models.Model]) -> int:
        return next(self.iterators[model])


class ResponseRows:
    """The rows of a batch of responses: each response, its retrieval, citations and cards."""

    def __init__(
        self,
        *,
        ids: Ids,
        passage_pks: dict[str, int | None],
        run_pk: int,
        project_slug: str,
        run_id: str,
        now: datetime,
    ) -> None:
        self.ids = ids
        self.passage_pks = passage_pks  # by ref, of every passage the batch refers to
        self.run_pk = run_pk
        self.project_slug = project_slug
        self.run_id = run_id
        self.now = now
        self.responses: list[ResponseRow] = []
        self.retrievals: list[RetrievalRow] = []
        self.citations: list[CitationRow] = []
        self.claims: list[ClaimRow] = []
        self.claim_revisions: list[ClaimRevisionRow] = []
        self.verdicts: list[VerdictRevisionRow] = []
        self.reviews: list[ResponseReviewRow] = []

    def add(self, seen: ResponseSeen) -> None:
        d = seen.data
        response_pk = self.ids.next(Response)
        self.responses.append(
            ResponseRow(
                id=response_pk,
                run_id=self.run_pk,
                case_id=seen.case.pk,
                expectation_id=seen.case.expectation_pk,
                position=seen.position,
                answer_id=d.get("answer_id", ""),
                text=d["text"],
                abstained=d.get("abstained", False),
                trace=to_json(d.get("trace")),
            )
        )
        for item in d["retrieved"]:
            self.retrievals.append(
                RetrievalRow(
                    id=self.ids.next(Retrieval),
                    response_id=response_pk,
                    rank=item["rank"],
                    passage_id=self.passage_pks[item["ref"]],
                    score=float(item["score"]) if "score" in item else None,
                    score_as_imported=to_json(item.get("score")),
                    filters=to_json(item.get("filters")),
                )
            )
        for position, item in enumerate(d.get("citations", ()), start=1):
            self.citations.append(
                CitationRow(
                    id=self.ids.next(Citation),
                    response_id=response_pk,
                    position=position,
                    marker=item["marker"],
                    passage_id=self.passage_pks[item["ref"]],
                    start=item.get("start"),
                    end=item.get("end"),
                )
            )
        for position, claim in enumerate(d.get("claims", ()), start=1):
            self.add_claim(seen.case.case_id, response_pk, position, claim)
        if "claims" in d:
            self.reviews.append(
                ResponseReviewRow(
                    id=self.ids.next(ResponseReview),
                    response_id=response_pk,
                    complete=True,
                    author_id=None,
                    annotator=BUNDLE_ANNOTATOR,
                    origin=Origin.IMPORTED,
                )
            )

    def add_claim(self, case_id: str, response_pk: int, position: int, claim: dict) -> None:
        """The claim, its first revision and its verdicts: one hash chain, sealed here."""
        claim_pk = self.ids.next(Claim)
        self.claims.append(
            ClaimRow(
                id=claim_pk, response_id=response_pk, key=claim["claim_id"], position=position
            )
        )
        identity = {
            "project": self.project_slug,
            "run_id": self.run_id,
            "case_id": case_id,
            "claim_id": claim["claim_id"],
        }
        cited = claim.get("citations", [])
        # One builder for the document that is hashed and the row that is stored, shared
        # with the review (cards.chain): an imported card seals exactly as a reviewed one.
        sealed = claim_revision(
            **identity, seq=1, text=claim["text"], kind=claim.get("kind", ClaimKind.FACTUAL),
            spans=claim.get("spans", []), citations=cited, facts=claim.get("facts", []),
            gaps=claim.get("gaps", []), withdrawn=False,
            reason=f"Imported with run {self.run_id}", author_id=None,
            annotator=BUNDLE_ANNOTATOR, origin=Origin.IMPORTED, created_at=self.now,
            prev_sha256=None,
        )  # fmt: skip
        self.claim_revisions.append(
            ClaimRevisionRow(
                id=self.ids.next(ClaimRevision),
                claim_id=claim_pk,
                **_stored(sealed.row, JSON_CLAIM_COLUMNS),
            )
        )
        previous = sealed.sha256
        latest_by_annotator: dict[str, tuple[int, int]] = {}  # annotator → (pk, seq)
        for seq, judgement in enumerate(claim.get("judgements", ()), start=2):
            verdict_pk = self.ids.next(VerdictRevision)
            annotator = judgement["annotator"]
            supersedes = latest_by_annotator.get(annotator)
            sealed = verdict_revision(
                **identity, seq=seq, author_id=None, annotator=annotator,
                origin=Origin.IMPORTED,
                association=judgement.get("association", default_association(cited)),
                support=judgement["support"], contradicts=judgement.get("contradicts", False),
                reason=judgement["reason"], diagnosis=judgement.get("diagnosis", ""),
                citation_relevance=judgement.get("citation_relevance", {}),
                note=judgement.get("note", ""),
                stated_at=parse_rfc3339(judgement["at"]) if "at" in judgement else None,
                supersedes_id=supersedes[0] if supersedes else None,
                supersedes_seq=supersedes[1] if supersedes else None,
                created_at=self.now, prev_sha256=previous,
            )  # fmt: skip
            self.verdicts.append(
                VerdictRevisionRow(
                    id=verdict_pk,
                    claim_id=claim_pk,
                    **_stored(sealed.row, JSON_VERDICT_COLUMNS),
                )
            )
            latest_by_annotator[annotator] = (verdict_pk, seq)
            previous = sealed.sha256


JSON_CLAIM_COLUMNS = ("spans", "citations", "facts", "gaps")
JSON_VERDICT_COLUMNS = ("citation_relevance",)


def _stored(row: dict, json_columns: tuple[str, ...]) -> dict:
    """A sealed row's values as the bulk writer stores them: JSON columns as text."""
    return {k: to_json(v) if k in json_columns else v for k, v in row.items()}
