"""What makes two imports 'the same case': the canonical expectation document and its hash."""

from __future__ import annotations

from evidence.canonical import canonical_json, sha256_hex
from evidence.models import Expectation


def expectation_document(
    *, query: str, required_facts: list[dict], relevant_refs: list[str], known_gaps: list[dict]
) -> dict:
    """The canonical content of an expectation: what decides 'the same case' across replays."""
    return {
        "query": query,
        "required_facts": [
            {"fact_id": f["fact_id"], "text": f["text"], "evidence": list(f.get("evidence", []))}
            for f in required_facts
        ],
        "relevant_refs": list(relevant_refs),
        "known_gaps": [{"gap_id": g["gap_id"], "text": g["text"]} for g in known_gaps],
    }


def expectation_sha256(document: dict) -> str:
    return sha256_hex(canonical_json(document))


def stored_document(expectation: Expectation) -> dict:
    return expectation_document(
        query=expectation.query,
        required_facts=expectation.required_facts,
        relevant_refs=expectation.relevant_refs,
        known_gaps=expectation.known_gaps,
    )
