"""The files of runs/RUN/: run.json, responses.jsonl and retrieval.jsonl, as imported."""

from __future__ import annotations

import json
from collections.abc import Iterator

from audit.package import CHUNK, Package
from cards.metrics import Lockstep
from evidence.canonical import rfc3339
from evidence.fields import as_text, decoded
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
    """Each answer with its citation markers; notes the traces missing."""
    citations = Lockstep(
        Citation.objects.filter(response__run=run)
        .order_by("response__position", "position")
        .values_list("response__position", "marker", "passage__ref", "start", "end")
        .iterator(chunk_size=CHUNK)
    )
    for position, case_id, version, answer_id, text, abstained, trace in (
        Response.objects.filter(run=run)
        .order_by("position")
        .values_list(
            "position",
            "case__case_id",
            "expectation__version",
            "answer_id",
            "text",
            "abstained",
            as_text("trace"),
        )
        .iterator(chunk_size=CHUNK)
    ):
        if trace is None:
            package.missing.append(f"runs/{run.run_id}: trace of case {case_id}")
        yield {
            "case_id": case_id,
            "expectation_version": version,
            "answer_id": answer_id or None,
            "text": text,
            "abstained": abstained,
            "citations": [
                {"marker": marker, "ref": ref, "start": start, "end": end}
                for _, marker, ref, start, end in citations.take(position)
            ],
            # Exactly as imported (evidence.fields.VerbatimJSONField); one per response,
            # often large: decoded without the shared cache.
            "trace": None if trace is None else json.loads(trace),
        }


def retrieval_rows(*, package: Package, run: Run) -> Iterator[dict]:
    """The ranked lists, response by response."""
    for case_id, rank, ref, score, as_imported, filters in (
        Retrieval.objects.filter(response__run=run)
        .order_by("response__position", "rank")
        .values_list(
            "response__case__case_id",
            "rank",
            "passage__ref",
            "score",
            as_text("score_as_imported"),
            as_text("filters"),
        )
        .iterator(chunk_size=CHUNK)
    ):
        yield {
            "case_id": case_id,
            "rank": rank,
            "ref": ref,
            # The score as the bundle wrote it: `score_as_imported` keeps `1` an integer,
            # where the float column would give 1.0; rows imported before it was kept have
            # only the float.
            "score": score if as_imported is None else decoded(as_imported),
            "filters": decoded(filters),
        }
