"""The hashed documents of claim and verdict revisions.

Each revision row is sealed by the SHA-256 of its canonical JSON (without the
`sha256` field itself) and carries the previous revision's hash, so a claim's
history is a chain that can be checked from an exported file alone. The same
documents are written to the audit package.
"""

from __future__ import annotations

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
