"""ALCE: the result file of `run.py`, `{"args": {…}, "data": [item, …]}`.

Each item has `question`, `docs` (`[{title, text, id?, url?, score?, …}]`, the passages
shown to the model, numbered from 1 in the prompt) and `output`, the answer with
citation markers `[n]` (ALCE's `eval.py` reads `[n` as document n). The markers become
citations with their offsets; the answer's sentences are left to the case page's
suggested split (the same splitter, each accepted sentence citing what its markers
cite), so a response stays unreviewed until a person has split it: claims in a bundle
would mark its decomposition complete (docs/decisions.md, "ALCE sentences are
suggestions"). ALCE's own sentence-level verdicts come from its NLI model and are not in
the result file.
"""

from __future__ import annotations

import re
from typing import Any

from ingest.convert.build import (
    Builder,
    Context,
    Invalid,
    case_id_for,
    require_text,
    response_line,
    rest_of,
)
from ingest.convert.records import finite

FORMAT = "alce"
KEY = "data"
MARKER = re.compile(r"\[(\d+)\]")


def beside(builder: Builder, key: str, value: Any) -> None:
    """`args`, the run's configuration: its model and the rest kept as the system's."""
    if key != "args" or not isinstance(value, dict):
        return
    if isinstance(value.get("model"), str):
        builder.system["model"] = value["model"]
    if isinstance(value.get("prompt_file"), str):
        builder.system["prompt_version"] = value["prompt_file"]
    builder.system["alce_args"] = finite(value)


def convert(builder: Builder, record: Any, *, where: str) -> list[dict[str, Any]]:
    if not isinstance(record, dict):
        raise Invalid("", "an item must be a JSON object")
    _, query = require_text(record, "question")
    output = record.get("output")
    if isinstance(output, list):
        raise Invalid("/output", "holds several samples; convert one sample a run")
    if not isinstance(output, str):
        raise Invalid("/output", "must be the answer as a string")
    docs = record.get("docs") or []
    if not isinstance(docs, list):
        raise Invalid("/docs", "must be a list of {title, text}")
    lines: list[dict[str, Any]] = []
    refs: list[str] = []
    retrieved: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        path = f"/docs/{i}"
        if not isinstance(doc, dict) or not isinstance(doc.get("text"), str):
            raise Invalid(path, "a document must be an object with a string `text`")
        context = Context(
            doc["text"],
            id=None if doc.get("id") is None else str(doc["id"]),
            title=doc["title"] if isinstance(doc.get("title"), str) else None,
            url=doc["url"] if isinstance(doc.get("url"), str) else None,
        )
        ref = builder.passage(context, where=where, path=path, lines=lines)
        refs.append(ref)  # by position: marker [n] is docs[n - 1]
        if all(row["ref"] != ref for row in retrieved):
            row: dict[str, Any] = {"ref": ref, "rank": len(retrieved) + 1}
            score = doc.get("score")
            if isinstance(score, (int, float)) and not isinstance(score, bool):
                row["score"] = finite(score)
                if row["score"] is None:
                    del row["score"]
            retrieved.append(row)
    case_id = case_id_for(
        record.get("sample_id") or record.get("id") or record.get("question_id"), query
    )
    builder.case(case_id, where=where)
    lines.append({"kind": "case", "case_id": case_id, "query": query})
    citations, unresolved = _citations(output, refs)
    trace = finite(rest_of(record, {"question", "output", "docs"}))
    if unresolved:
        trace["unresolved_markers"] = [marker for _, _, marker in unresolved]
    response = response_line(
        fmt=FORMAT,
        case_id=case_id,
        text=output,
        retrieved=retrieved,
        citations=citations,
        trace=trace,
    )
    lines.append(response)
    return lines


def _citations(
    output: str, refs: list[str]
) -> tuple[list[dict[str, Any]], list[tuple[int, int, str]]]:
    """Each `[n]` naming a document shown (1 ≤ n ≤ its number of docs), and the others."""
    citations, unresolved = [], []
    for match in MARKER.finditer(output):
        n = int(match.group(1))
        if 1 <= n <= len(refs):
            citations.append(
                {
                    "marker": match.group(0),
                    "ref": refs[n - 1],
                    "start": match.start(),
                    "end": match.end(),
                }
            )
        else:
            unresolved.append((match.start(), match.end(), match.group(0)))
    return citations, unresolved
