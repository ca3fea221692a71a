"""The files of runs/RUN/: run.json, responses.jsonl and retrieval.jsonl, as imported."""

from __future__ import annotations

from collections.abc import Iterator

from audit.package import CHUNK, Package
from cards.metrics import Lockstep
from evidence.canonical import rfc3339
from replay.models import Citation, Response, Retrieval, Run


def run_meta(*, run: Run) -> dict:
    """run.json: the run line as imported, and the file it came from."""
    return {
        "run_id": run.run_id,
        "label": run.label,
        "created_at": rfc3339(run.created_at),
        "collection_snapshot": run.snapshot.name,
        "system": run.system,
        "locale": run.locale or None,
        "baseline_run_id": run.baseline_run_id or None,
        "notes": run.notes or None,
        "imported_at": rfc3339(run.imported_at),
        "source_name": run.source_name or None,
        "source_sha256": run.source_sha256 or None,
    }


def response_rows(*, package: Package, run: Run) -> Iterator[dict]:
    """Each answer with its citation markers; notes the passages cited and the traces missing."""
    citations = Lockstep(
        (row["response__position"], row)
        for row in Citation.objects.filter(response__run=run)
        .order_by("response__position", "position")
        .values("response__position", "marker", "passage__ref", "start", "end", "passage_id")
        .iterator(chunk_size=CHUNK)
    )
    for row in (
        Response.objects.filter(run=run)
        .order_by("position")
        .values(
            "position",
            "case__case_id",
            "expectation__version",
            "answer_id",
            "text",
            "abstained",
            "trace",
        )
        .iterator(chunk_size=CHUNK)
    ):
        case_id = row["case__case_id"]
        if row["trace"] is None:
            package.missing.append(f"runs/{run.run_id}: trace of case {case_id}")
        cited = []
        for _, citation in citations.take(row["position"]):
            package.passage_ids.add(citation["passage_id"])
            cited.append(
                {
                    "marker": citation["marker"],
                    "ref": citation["passage__ref"],
                    "start": citation["start"],
                    "end": citation["end"],
                }
            )
        yield {
            "case_id": case_id,
            "expectation_version": row["expectation__version"],
            "answer_id": row["answer_id"] or None,
            "text": row["text"],
            "abstained": row["abstained"],
            "citations": cited,
            "trace": row["trace"],  # decoded by the field, exactly as imported
        }


def retrieval_rows(*, package: Package, run: Run) -> Iterator[dict]:
    """The ranked lists, response by response; notes the passages retrieved."""
    for row in (
        Retrieval.objects.filter(response__run=run)
        .order_by("response__position", "rank")
        .values(
            "response__case__case_id",
            "rank",
            "passage__ref",
            "score",
            "score_as_imported",
            "filters",
            "passage_id",
        )
        .iterator(chunk_size=CHUNK)
    ):
        package.passage_ids.add(row["passage_id"])
        yield {
            "case_id": row["response__case__case_id"],
            "rank": row["rank"],
            "ref": row["passage__ref"],
            "score": _score(row),
            "filters": row["filters"],
        }


def _score(row: dict) -> int | float | None:
    """The score as the bundle wrote it: `score_as_imported` keeps `1` an integer, where the
    float column would give 1.0; rows imported before it was kept have only the float."""
    if row["score_as_imported"] is not None:
        return row["score_as_imported"]
    return row["score"]
