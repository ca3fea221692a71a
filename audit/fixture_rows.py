"""The rows of fixture/cases.jsonl and fixture/passages.jsonl."""

from __future__ import annotations

from collections.abc import Iterator

from audit.package import CHUNK, AuditExportError, Package
from cards.models import ClaimRevision
from evidence.canonical import text_sha256
from evidence.models import Expectation, Passage
from replay.models import Response


def case_rows(*, package: Package) -> Iterator[dict]:
    """Each expectation an exported response was made against, by case and version."""
    used = Response.objects.filter(run__in=package.runs).values("expectation_id")
    for row in (
        Expectation.objects.filter(pk__in=used)
        .order_by("case__case_id", "version")
        .values(
            "case__case_id",
            "version",
            "query",
            "query_id",
            "required_facts",
            "relevant_refs",
            "known_gaps",
            "sha256",
        )
        .iterator(chunk_size=CHUNK)
    ):
        yield {
            "case_id": row["case__case_id"],
            "expectation_version": row["version"],
            "query": row["query"],
            "query_id": row["query_id"] or None,
            "required_facts": row["required_facts"],
            "relevant_refs": row["relevant_refs"],
            "known_gaps": row["known_gaps"],
            "expectation_sha256": row["sha256"],
        }


def passage_rows(*, package: Package) -> Iterator[dict]:
    """Every passage the runs' files named, its hash recomputed: a mismatch stops the export.

    The mismatches are all named at the end (a tampered database rarely has just one), so
    the member is never finished and the package never gets a manifest.
    """
    bad = []
    for p in (
        Passage.objects.filter(pk__in=package.passage_ids)
        .select_related("snapshot")
        .order_by("snapshot__name", "ref")
        .iterator(chunk_size=CHUNK)
    ):
        if text_sha256(p.text) != p.sha256:
            bad.append(f"{p.snapshot.name} {p.ref} (row {p.pk})")
            continue
        yield {
            "snapshot": p.snapshot.name,
            "ref": p.ref,
            "doc_id": p.doc_id,
            "version": p.version,
            "chunk_id": p.chunk_id,
            "text": p.text,
            "sha256": p.sha256,
            "locator": {
                "title": p.title,
                "url": p.url,
                "anchor": p.anchor,
                "context_before": p.context_before,
                "context_after": p.context_after,
            },
            "version_status": p.version_status,
            "superseded_by": p.superseded_by or None,
        }
    if bad:
        raise AuditExportError(
            "passage text no longer matches its stored SHA-256: " + "; ".join(bad[:20])
        )


def collect_claim_passages(*, package: Package) -> None:
    """Passages a claim cites although its response neither retrieved nor cited them."""
    for run in package.runs:
        refs: set[str] = set()
        for cited in (
            ClaimRevision.objects.filter(claim__response__run=run)
            .exclude(citations=[])
            .values_list("citations", flat=True)
            .iterator(chunk_size=CHUNK)
        ):
            refs.update(cited)
        ordered = sorted(refs)
        for start in range(0, len(ordered), CHUNK):  # SQLite caps the parameters of a query
            package.passage_ids.update(
                Passage.objects.filter(
                    snapshot_id=run.snapshot_id, ref__in=ordered[start : start + CHUNK]
                ).values_list("pk", flat=True)
            )
