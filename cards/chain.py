"""The hashed documents of claim and verdict revisions.

Each revision row is sealed by the SHA-256 of its canonical JSON (without the
`sha256` field itself) and carries the previous revision's hash, so a claim's
history is a chain that can be checked from an exported file alone. The same
documents are written to the audit package.

A new revision, saved in review or imported, is built by `claim_revision` or
`verdict_revision`: the fields go in once and come out as the document, its seal
and the row's values, so what is stored is always what was hashed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from evidence.canonical import canonical_json, rfc3339, sha256_hex


def seal(document: dict[str, Any]) -> str:
    return sha256_hex(canonical_json(document))


def claim_revision_document(
    *,
    project: str,
    run_id: str,
    case_id: str,
    claim_id: str,
    seq: int,
    text: str,
    kind: str,
    spans: list,
    citations: list[str],
    facts: list[str],
    gaps: list[str],
    withdrawn: bool,
    reason: str,
    annotator: str,
    origin: str,
    created_at: datetime,
    prev_sha256: str | None,
) -> dict[str, Any]:
    return {
        "type": "claim_revision",
        "project": project,
        "run_id": run_id,
        "case_id": case_id,
        "claim_id": claim_id,
        "seq": seq,
        "text": text,
        "kind": str(kind),
        "spans": [list(span) for span in spans],
        "citations": list(citations),
        "facts": list(facts),
        "gaps": list(gaps),
        "withdrawn": withdrawn,
        "reason": reason,
        "author": annotator,
        "origin": str(origin),
        "created_at": rfc3339(created_at),
        "prev_sha256": prev_sha256,
    }


def verdict_revision_document(
    *,
    project: str,
    run_id: str,
    case_id: str,
    claim_id: str,
    seq: int,
    annotator: str,
    origin: str,
    association: str,
    support: str,
    contradicts: bool,
    reason: str,
    diagnosis: str,
    citation_relevance: dict[str, str],
    note: str,
    stated_at: datetime | None,
    supersedes: int | None,
    created_at: datetime,
    prev_sha256: str | None,
) -> dict[str, Any]:
    return {
        "type": "verdict_revision",
        "project": project,
        "run_id": run_id,
        "case_id": case_id,
        "claim_id": claim_id,
        "seq": seq,
        "author": annotator,
        "origin": str(origin),
        "association": str(association),
        "support": str(support),
        "contradicts": contradicts,
        "reason": reason,
        "diagnosis": diagnosis or None,
        "citation_relevance": dict(citation_relevance),
        "note": note,
        "stated_at": rfc3339(stated_at),
        "supersedes": supersedes,
        "created_at": rfc3339(created_at),
        "prev_sha256": prev_sha256,
    }


@dataclass(frozen=True)
class SealedRevision:
    """A new revision: its hashed document, the seal, and the row to store."""

    document: dict[str, Any]
    sha256: str
    # The row's values by column name, in the table's column order, without `id` and
    # `claim_id` (the caller's): sequences and maps as stored in the JSON columns.
    row: dict[str, Any]


def claim_revision(
    *, project: str, run_id: str, case_id: str, claim_id: str, seq: int, text: str, kind: str,
    spans: list, citations: list[str], facts: list[str], gaps: list[str], withdrawn: bool,
    reason: str, author_id: int | None, annotator: str, origin: str, created_at: datetime,
    prev_sha256: str | None,
) -> SealedRevision:  # fmt: skip
    """A claim revision (review or import): the document, its seal and the row's values."""
    document = claim_revision_document(
        project=project, run_id=run_id, case_id=case_id, claim_id=claim_id, seq=seq, text=text,
        kind=kind, spans=spans, citations=citations, facts=facts, gaps=gaps,
        withdrawn=withdrawn, reason=reason, annotator=annotator, origin=origin,
        created_at=created_at, prev_sha256=prev_sha256,
    )  # fmt: skip
    digest = seal(document)
    row = {
        "seq": seq, "text": text, "kind": document["kind"], "spans": document["spans"],
        "citations": document["citations"], "facts": document["facts"],
        "gaps": document["gaps"], "withdrawn": withdrawn, "reason": reason,
        "author_id": author_id, "annotator": annotator, "origin": document["origin"],
        "created_at": created_at, "prev_sha256": prev_sha256, "sha256": digest,
    }  # fmt: skip
    return SealedRevision(document, digest, row)


def verdict_revision(
    *, project: str, run_id: str, case_id: str, claim_id: str, seq: int,
    author_id: int | None, annotator: str, origin: str, association: str, support: str,
    contradicts: bool, reason: str, diagnosis: str, citation_relevance: dict[str, str],
    note: str, stated_at: datetime | None, supersedes_id: int | None,
    supersedes_seq: int | None, created_at: datetime, prev_sha256: str | None,
) -> SealedRevision:  # fmt: skip
    """A verdict revision (review, adjudication or import): document, seal and row values.

    The document names the superseded verdict by its place in the chain (`seq`), which
    an exported chain can check; the row by its id.
    """
    if (supersedes_id is None) != (supersedes_seq is None):
        raise ValueError("supersedes_id and supersedes_seq come together, or not at all")
    document = verdict_revision_document(
        project=project, run_id=run_id, case_id=case_id, claim_id=claim_id, seq=seq,
        annotator=annotator, origin=origin, association=association, support=support,
        contradicts=contradicts, reason=reason, diagnosis=diagnosis,
        citation_relevance=citation_relevance, note=note, stated_at=stated_at,
        supersedes=supersedes_seq, created_at=created_at, prev_sha256=prev_sha256,
    )  # fmt: skip
    digest = seal(document)
    row = {
        "seq": seq, "author_id": author_id, "annotator": annotator, "origin": document["origin"],
        "association": document["association"], "support": document["support"],
        "contradicts": contradicts, "reason": reason, "diagnosis": diagnosis or "",
        "citation_relevance": document["citation_relevance"], "note": note,
        "stated_at": stated_at, "supersedes_id": supersedes_id, "created_at": created_at,
        "prev_sha256": prev_sha256, "sha256": digest,
    }  # fmt: skip
    return SealedRevision(document, digest, row)
