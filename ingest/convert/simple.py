"""jsonl-simple: our own minimal JSON Lines, for any pipeline without a converter.

One answer a line: `{"query", "answer", "contexts": [{"id"?, "text", "title"?, "url"?}
or "text", …], "case_id"?}`; any other key is kept in the response's trace.
docs/import-formats.md documents it.
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
)
from ingest.convert.records import finite

FORMAT = "jsonl-simple"
KEY = None


def beside(builder: Builder, key: str, value: Any) -> None:
    """Nothing is written beside the records."""


def convert(builder: Builder, record: Any, *, where: str) -> list[dict[str, Any]]:
    if not isinstance(record, dict):
        raise Invalid("", "a record must be a JSON object")
    _, query = require_text(record, "query")
    _, answer = require_text(record, "answer", allow_empty=True)
    contexts = record.get("contexts", [])
    if not isinstance(contexts, list):
        raise Invalid("/contexts", "must be a list of {id?, text}")
    lines: list[dict[str, Any]] = []
    retrieved: list[str] = []
    for i, item in enumerate(contexts):
        path = f"/contexts/{i}"
        if isinstance(item, str):
            context = Context(item)
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            context = Context(
                item["text"],
                id=None if item.get("id") is None else str(item["id"]),
                title=item["title"] if isinstance(item.get("title"), str) else None,
                url=item["url"] if isinstance(item.get("url"), str) else None,
            )
        else:
            raise Invalid(path, "a context must be a string or an object with a string `text`")
        ref = builder.passage(context, where=where, path=path, lines=lines)
        if ref not in retrieved:
            retrieved.append(ref)
    case_id = case_id_for(record.get("case_id"), query)
    builder.case(case_id, where=where)
    lines.append({"kind": "case", "case_id": case_id, "query": query})
    response = response_line(
        fmt=FORMAT,
        case_id=case_id,
        text=answer,
        retrieved=ranked(retrieved),
        trace=finite(rest_of(record, {"query", "answer", "contexts", "case_id"})),
    )
    lines.append(response)
    return lines
