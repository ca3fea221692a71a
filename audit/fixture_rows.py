"""The rows of fixture/cases.jsonl and fixture/passages.jsonl."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator

from django.db.models import Exists, OuterRef, Q

from audit.package import CHUNK, AuditExportError, Package
from cards.metrics import Lockstep
from cards.models import ClaimRevision
from evidence.canonical import text_sha256
from evidence.fields import as_text, decoded
from evidence.models import Expectation, Passage
from replay.models import Citation, Response, Retrieval


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
    """Every passage the runs' files name, its hash recomputed: a mismatch stops the export.

    Those a response of the runs retrieved or cited, found by the database (subqueries,
    not a list of ids sent with the query: 100,000 of them cost more to send and parse
    than to read the rows), and those only a claim cites (`collect_claim_passages`).
    The mismatches are all named at the end (a tampered database rarely has just one), so
    the member is never finished and the package never gets a manifest.
    """
    runs = package.runs
    named = Q(pk__in=Retrieval.objects.filter(response__run__in=runs).values("passage_id"))
    named |= Q(pk__in=Citation.objects.filter(response__run__in=runs).values("passage_id"))
    if package.claim_passage_ids:
        named |= Q(pk__in=sorted(package.claim_passage_ids))
    bad = []
    for (
        pk, snapshot, ref, doc_id, version, chunk_id, text, digest, title, url, anchor,
        context_before, context_after, version_status, superseded_by,
    ) in (
        Passage.objects.filter(named)
        .order_by("snapshot__name", "ref")
        .values_list(
            "pk", "snapshot__name", "ref", "doc_id", "version", "chunk_id", "text", "sha256",
            "title", "url", "anchor", "context_before", "context_after", "version_status",
            "superseded_by",
        )
        .iterator(chunk_size=CHUNK)
    ):  # fmt: skip
        if text_sha256(text) != digest:
            bad.append(f"{snapshot} {ref} (row {pk})")
            continue
        yield {
            "snapshot": snapshot,
            "ref": ref,
            "doc_id": doc_id,
            "version": version,
            "chunk_id": chunk_id,
            "text": text,
            "sha256": digest,
            "locator": {
                "title": title,
                "url": url,
                "anchor": anchor,
                "context_before": context_before,
                "context_after": context_after,
            },
            "version_status": version_status,
            "superseded_by": superseded_by or None,
        }
    if bad:
        raise AuditExportError(
            "passage text no longer matches its stored SHA-256: " + "; ".join(bad[:20])
        )


def collect_claim_passages(*, package: Package) -> None:
    """Passages a claim cites although no response of the runs retrieved or cited them.

    Usually none, so only their ids are kept. Each claim's refs are first set against what
    its own response retrieved or marked (three streams, in response order); only the rest,
    usually nothing, is looked up (sending 50,000 refs as query parameters took 3 s).
    """
    for run in package.runs:
        retrieved = Lockstep(
            Retrieval.objects.filter(response__run=run)
            .order_by("response_id")
            .values_list("response_id", "passage__ref")
            .iterator(chunk_size=CHUNK)
        )
        marked = Lockstep(
            Citation.objects.filter(response__run=run)
            .order_by("response_id")
            .values_list("response_id", "passage__ref")
            .iterator(chunk_size=CHUNK)
        )
        claims = (
            ClaimRevision.objects.filter(claim__response__run=run)
            .exclude(citations=[])
            .order_by("claim__response_id")
            .values_list("claim__response_id", as_text("citations"))
            .iterator(chunk_size=CHUNK)
        )
        refs: set[str] = set()
        for response_id, rows in itertools.groupby(claims, key=operator.itemgetter(0)):
            own = {ref for _, ref in retrieved.take(response_id)}
            own.update(ref for _, ref in marked.take(response_id))
            for _, cited in rows:
                refs.update(ref for ref in decoded(cited) if ref not in own)
        named = Exists(
            Retrieval.objects.filter(passage_id=OuterRef("pk"), response__run__in=package.runs)
        ) | Exists(
            Citation.objects.filter(passage_id=OuterRef("pk"), response__run__in=package.runs)
        )
        ordered = sorted(refs)
        for start in range(0, len(ordered), CHUNK):  # SQLite caps the parameters of a query
            package.claim_passage_ids.update(
                Passage.objects.filter(
                    snapshot_id=run.snapshot_id, ref__in=ordered[start : start + CHUNK]
                )
                .exclude(named)
                .values_list("pk", flat=True)
            )
