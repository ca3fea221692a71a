"""cards/revisions.jsonl: every claim and verdict revision, re-sealed and checked on export."""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from audit.package import CHUNK, AuditExportError, Package
from cards.chain import claim_revision_document, seal, verdict_revision_document
from cards.models import ClaimRevision, VerdictRevision

IDENTITY = (
    "claim__response__position", "claim__position", "claim_id", "claim__response__case__case_id",
    "claim__key",
)  # fmt: skip
COMMON_FIELDS = (
    "pk", "seq", "annotator", "origin", "reason", "created_at", "prev_sha256", "sha256",
)  # fmt: skip
CLAIM_FIELDS = (*COMMON_FIELDS, "text", "kind", "spans", "citations", "facts", "gaps", "withdrawn")
VERDICT_FIELDS = (
    *COMMON_FIELDS, "association", "support", "contradicts", "diagnosis", "citation_relevance",
    "note", "stated_at", "supersedes__seq",
)  # fmt: skip


def revision_rows(*, package: Package) -> Iterator[dict]:
    """Every claim and verdict revision, each chain in seq order, re-sealed and checked.

    Read as plain rows (no model objects, no joins beyond the claim's identity): this
    file is most of an export's rows.
    """
    for run in package.runs:
        order = ("claim__response__position", "claim__position", "seq")
        claims = (
            ClaimRevision.objects.filter(claim__response__run=run)
            .order_by(*order)
            .values(*IDENTITY, *CLAIM_FIELDS)
            .iterator(chunk_size=CHUNK)
        )
        verdicts = (
            VerdictRevision.objects.filter(claim__response__run=run)
            .order_by(*order)
            .values(*IDENTITY, *VERDICT_FIELDS)
            .iterator(chunk_size=CHUNK)
        )
        chain, seq, previous = None, 0, None
        for kind, row in _merge_by_claim(claims, verdicts):
            identity = {
                "project": package.project.slug,
                "run_id": run.run_id,
                "case_id": row["claim__response__case__case_id"],
                "claim_id": row["claim__key"],
            }
            key = "/".join(identity.values())
            if key != chain:
                chain, seq, previous = key, 0, None
            document = _document(kind, row, identity)
            table = "cards_claimrevision" if kind == "claim" else "cards_verdictrevision"
            where = f"{key} revision {row['seq']} (row {row['pk']} of {table})"
            if row["seq"] != seq + 1 or row["prev_sha256"] != previous:
                raise AuditExportError(f"broken revision chain at {where}")
            if seal(document) != row["sha256"]:
                raise AuditExportError(f"revision content does not match its hash at {where}")
            seq, previous = row["seq"], row["sha256"]
            package.chain_heads[key] = row["sha256"]
            if package.newest is None or row["created_at"] > package.newest:
                package.newest = row["created_at"]
            yield {**document, "sha256": row["sha256"]}


def _merge_by_claim(claims: Iterator[dict], verdicts: Iterator[dict]) -> Iterator[tuple]:
    """Interleave the two ordered streams into each claim's single chain (by seq)."""

    def keyed(rows, kind):
        for row in rows:
            position = (row["claim__response__position"], row["claim__position"], row["seq"])
            yield position, kind, row

    for _, kind, row in heapq.merge(
        keyed(claims, "claim"), keyed(verdicts, "verdict"), key=lambda item: item[0]
    ):
        yield kind, row


def _document(kind: str, row: dict, identity: dict) -> dict:
    """The document the revision's hash seals (cards.chain), rebuilt from the stored row."""
    common = {
        "seq": row["seq"],
        "annotator": row["annotator"],
        "origin": row["origin"],
        "reason": row["reason"],
        "created_at": row["created_at"],
        "prev_sha256": row["prev_sha256"],
    }
    if kind == "claim":
        return claim_revision_document(
            **identity, **common, text=row["text"], kind=row["kind"], spans=row["spans"],
            citations=row["citations"], facts=row["facts"], gaps=row["gaps"],
            withdrawn=row["withdrawn"],
        )  # fmt: skip
    return verdict_revision_document(
        **identity, **common, association=row["association"], support=row["support"],
        contradicts=row["contradicts"], diagnosis=row["diagnosis"],
        citation_relevance=row["citation_relevance"], note=row["note"],
        stated_at=row["stated_at"], supersedes=row["supersedes__seq"],
    )  # fmt: skip
