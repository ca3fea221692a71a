"""Ragas: an evaluation dataset or an evaluation result, one sample a record.

Covered (docs/import-formats.md): the single-turn sample of Ragas 0.2 and later
(`user_input`, `response`, `retrieved_contexts`, `retrieved_context_ids`, `reference`,
`reference_contexts`, `reference_context_ids`), as `EvaluationDataset.to_jsonl()` writes
it, and the 0.1 names (`question`, `answer`, `contexts`, `ground_truth`,
`ground_truths`); an evaluation result adds one column a metric
(`result.to_pandas().to_json(orient="records", lines=True)`). Per-statement verdicts are
faithfulness's own output (`NLIStatementOutput`: `[{statement, reason, verdict}]`),
under `statements` or `<metric>_statements`, when the exporter kept them.
"""

from __future__ import annotations

from typing import Any

from ingest.convert.build import (
    Builder,
    Context,
    Invalid,
    case_id_for,
    ranked,
    require_text,
    response_line,
    rest_of,
    text_of,
)
from ingest.convert.records import finite

FORMAT = "ragas"
KEY = None  # JSON Lines, or one JSON array of samples
DEFAULT_METRIC = "faithfulness"
VERDICTS = {1: "supported", 0: "unsupported"}


def beside(builder: Builder, key: str, value: Any) -> None:
    """Ragas writes nothing beside its samples."""


def convert(builder: Builder, record: Any, *, where: str) -> list[dict[str, Any]]:
    if not isinstance(record, dict):
        raise Invalid("", "a sample must be a JSON object")
    query_key, query = text_of(record, "user_input", "question")
    if isinstance(query, list):
        raise Invalid(f"/{query_key}", "a multi-turn sample (a list of messages) is not covered")
    query_key, query = require_text(record, "user_input", "question")
    answer_key, answer = require_text(record, "response", "answer", allow_empty=True)
    lines: list[dict[str, Any]] = []
    contexts_key, contexts = text_of(record, "retrieved_contexts", "contexts")
    ids = record.get("retrieved_context_ids")
    retrieved = _refs(builder, contexts_key, contexts, ids, "retrieved_context_ids", where, lines)
    relevant = _refs(
        builder,
        "reference_contexts",
        record.get("reference_contexts"),
        record.get("reference_context_ids"),
        "reference_context_ids",
        where,
        lines,
    )
    case_id = case_id_for(record.get("id") or record.get("sample_id"), query)
    builder.case(case_id, where=where)
    case: dict[str, Any] = {"kind": "case", "case_id": case_id, "query": query}
    if relevant:
        case["relevant_refs"] = relevant
    lines.append(case)
    used = {
        query_key,
        answer_key,
        contexts_key,
        "retrieved_context_ids",
        "reference_contexts",
        "reference_context_ids",
        *(key for key in record if key == "statements" or key.endswith("_statements")),
    }
    response = response_line(
        fmt=FORMAT,
        case_id=case_id,
        text=answer,
        retrieved=ranked(retrieved),
        claims=_claims(record),
        trace=finite(rest_of(record, used)),
    )
    lines.append(response)
    return lines


def _refs(
    builder: Builder,
    key: str,
    contexts: Any,
    ids: Any,
    ids_key: str,
    where: str,
    lines: list[dict[str, Any]],
) -> list[str]:
    """The refs of a list of context strings, in order, each once (a repeat keeps its first
    rank: ranks in a bundle have no repeats)."""
    if contexts is None:
        return []
    if not isinstance(contexts, list):
        raise Invalid(f"/{key}", "must be a list of strings")
    if ids is not None and (not isinstance(ids, list) or len(ids) != len(contexts)):
        raise Invalid(f"/{ids_key}", f"must be a list as long as {key} ({len(contexts)})")
    refs: list[str] = []
    for i, text in enumerate(contexts):
        if not isinstance(text, str):
            raise Invalid(f"/{key}/{i}", "must be a string")
        given = None if ids is None or ids[i] is None else str(ids[i])
        ref = builder.passage(
            Context(text, id=given), where=where, path=f"/{key}/{i}", lines=lines
        )
        if ref not in refs:
            refs.append(ref)
    return refs


def _claims(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Each judged statement a claim, with the metric's verdict as an imported annotator's."""
    claims: list[dict[str, Any]] = []
    for key in sorted(k for k in record if k == "statements" or k.endswith("_statements")):
        metric = DEFAULT_METRIC if key == "statements" else key.removesuffix("_statements")
        statements = record[key]
        if statements is None:
            continue
        if isinstance(statements, dict) and "statements" in statements:
            statements = statements["statements"]  # the whole NLIStatementOutput
        if not isinstance(statements, list):
            raise Invalid(f"/{key}", "must be a list of {statement, reason, verdict}")
        for i, item in enumerate(statements):
            claims.append(_claim(item, f"/{key}/{i}", f"ragas-{metric}", len(claims) + 1))
    return claims


def _claim(item: Any, path: str, annotator: str, number: int) -> dict[str, Any]:
    if not isinstance(item, dict) or not isinstance(item.get("statement"), str):
        raise Invalid(path, "a statement must be an object with a string `statement`")
    if not item["statement"].strip():
        raise Invalid(f"{path}/statement", "must not be empty")
    verdict = item.get("verdict")
    if isinstance(verdict, bool) or verdict not in VERDICTS:
        raise Invalid(f"{path}/verdict", "must be 1 (inferred from the context) or 0")
    reason = item.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        reason = f"{annotator} gave verdict {verdict} without a reason."
    return {
        "claim_id": f"s{number}",
        "text": item["statement"],
        "judgements": [{"annotator": annotator, "support": VERDICTS[verdict], "reason": reason}],
    }
