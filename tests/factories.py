"""Synthetic bundles of any size, valid by construction."""

from __future__ import annotations

from evidence.canonical import text_sha256


def synthetic_bundle(
    *, run_id: str = "synthetic-r1", cases: int = 3, passages: int = 4, claims: int = 2,
    snapshot: str = "synthetic@1", revisions: int = 1,
) -> list[dict]:  # fmt: skip
    """A run with `cases` cases, each with its own passages, a response, claims and verdicts."""
    lines: list[dict] = [
        {
            "kind": "run", "schema": "evidence-bundle/1", "run_id": run_id,
            "created_at": "2026-10-01T12:00:00Z", "collection_snapshot": snapshot,
            "system": {"model": "m", "prompt_version": "p1"},
        }
    ]  # fmt: skip
    for c in range(cases):
        refs = [f"doc{c}@v1#c{p}" for p in range(passages)]
        for p, ref in enumerate(refs):
            text = f"Passage {p} of case {c}: the limit is {10 + p} units. " * 3
            lines.append(
                {
                    "kind": "passage", "ref": ref, "doc_id": f"doc{c}", "version": "v1",
                    "chunk_id": f"c{p}", "text": text, "sha256": text_sha256(text),
                    "version_status": "current",
                }
            )  # fmt: skip
        lines.append(
            {
                "kind": "case", "case_id": f"case-{c}", "query": f"What is the limit {c}?",
                "required_facts": [{"fact_id": "G1", "text": "The limit.", "evidence": refs[:1]}],
                "known_gaps": [{"gap_id": "X1", "text": "Nothing about costs."}],
            }
        )  # fmt: skip
        sentence = "The limit is 10 units [1]. "
        text = sentence * max(claims, 1)
        width, reason = len(sentence), "Passage 0 says 10 units."
        lines.append(
            {
                "kind": "response", "case_id": f"case-{c}", "text": text,
                "retrieved": [
                    {"ref": ref, "rank": i + 1, "score": 1 - i / 10} for i, ref in enumerate(refs)
                ],
                "citations": [
                    {"marker": "[1]", "ref": refs[0], "start": k * width + 22, "end": k * width + 25}  # noqa: E501
                    for k in range(max(claims, 1))
                ],
                "claims": [
                    {
                        "claim_id": f"c{k}", "text": "The limit is 10 units.",
                        "spans": [[k * width, k * width + 21]],
                        "citations": refs[:1], "facts": ["G1"],
                        "judgements": [
                            {"annotator": f"judge-{r}", "support": "supported", "reason": reason}
                            for r in range(revisions)
                        ],
                    }
                    for k in range(claims)
                ],
            }
        )  # fmt: skip
    return lines
