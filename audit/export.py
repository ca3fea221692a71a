"""Writing an audit package (evidence-audit/1): a deterministic, streamed zip.

Every file is produced in a fixed order with fixed zip timestamps and
canonical JSON, so exporting the same stored data twice gives the same bytes.
Rows are streamed from the database straight into the zip, so memory does not
grow with the number of cases. Before a row is written its hash is recomputed
from the database: a passage whose text no longer matches its SHA-256, or a
revision whose chain is broken (someone went around the triggers), stops the
export and is named.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import heapq
import io
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cards.chain import claim_revision_document, seal, verdict_revision_document
from cards.metrics import Lockstep, Source, Totals, iter_response_figures, to_json
from cards.models import ClaimRevision, Origin, VerdictRevision
from compare.comparison import compare_runs
from evidence.canonical import canonical_json, rfc3339, text_sha256
from evidence.models import Expectation, Passage, Project
from ingest.bundle import SCHEMA_PATH
from replay.models import Citation, Response, Retrieval, Run

FORMAT = "evidence-audit/1"
GENERATOR = "evidence-review 0.1"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
HERE = Path(__file__).resolve().parent
CHUNK = 2000


class AuditExportError(Exception):
    """The database no longer matches its own hashes; no package was produced."""


class _Sink(io.RawIOBase):
    """An unseekable sink: the zip is written with data descriptors, as a stream."""

    def __init__(self, out: IO[bytes] | None = None):
        self.out = out
        self.chunks: list[bytes] = []
        self.position = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        data = bytes(data)
        if self.out is not None:
            self.out.write(data)
        else:
            self.chunks.append(data)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        raise io.UnsupportedOperation("unseekable")

    def drain(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks.clear()
        return data


def _zip_info(path: str) -> zipfile.ZipInfo:
    """The same date, mode and compression for every member: part of being deterministic."""
    info = zipfile.ZipInfo(path, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


@dataclass
class _Writer:
    archive: zipfile.ZipFile
    entries: list[dict] = field(default_factory=list)

    def file(self, path: str, chunks: Iterable[bytes]) -> Iterator[None]:
        """Write one file; yields between chunks so the caller can stream the zip out."""
        info = _zip_info(path)
        digest, size = hashlib.sha256(), 0
        with self.archive.open(info, "w") as handle:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                handle.write(chunk)
                yield
        self.entries.append({"path": path, "bytes": size, "sha256": digest.hexdigest()})
        yield


def _line(value: Any) -> bytes:
    return canonical_json(value) + b"\n"


def _lines(rows: Iterable[Any], batch: int = 500) -> Iterator[bytes]:
    buffer = []
    for row in rows:
        buffer.append(_line(row))
        if len(buffer) >= batch:
            yield b"".join(buffer)
            buffer.clear()
    if buffer:
        yield b"".join(buffer)


@dataclass
class Package:
    """What one export contains, and what it found missing."""

    project: Project
    runs: list[Run]
    compare: tuple[Run, Run] | None = None
    missing: list[str] = field(default_factory=list)
    chain_heads: dict[str, str] = field(default_factory=dict)
    newest: Any = None
    passage_ids: set[int] = field(default_factory=set)
    package_id: str = ""
    manifest_bytes: bytes = b""
    hints: dict[int, dict[str, dict]] = field(default_factory=dict)  # run → case → claim hints

    # --- the files ---------------------------------------------------------------------------

    def cases(self) -> Iterator[dict]:
        ids = Response.objects.filter(run__in=self.runs).values("expectation_id")
        for row in (
            Expectation.objects.filter(pk__in=ids)
            .order_by("case__case_id", "version")
            .values_list(
                "case__case_id",
                "version",
                "query",
                "query_id",
                "required_facts",
                "relevant_refs",
                "known_gaps",
                "sha256",
            )  # fmt: skip
            .iterator(chunk_size=CHUNK)
        ):
            case_id, version, query, query_id, facts, relevant, gaps, digest = row
            yield {
                "case_id": case_id, "expectation_version": version, "query": query,
                "query_id": query_id or None, "required_facts": facts, "relevant_refs": relevant,
                "known_gaps": gaps, "expectation_sha256": digest,
            }  # fmt: skip

    def passages(self) -> Iterator[dict]:
        used = Passage.objects.filter(pk__in=self.passage_ids)
        bad = []
        for p in (
            used.select_related("snapshot")
            .order_by("snapshot__name", "ref")
            .iterator(chunk_size=CHUNK)
        ):
            if text_sha256(p.text) != p.sha256:
                bad.append(f"{p.snapshot.name} {p.ref} (row {p.pk})")
                continue
            yield {
                "snapshot": p.snapshot.name, "ref": p.ref, "doc_id": p.doc_id,
                "version": p.version, "chunk_id": p.chunk_id, "text": p.text, "sha256": p.sha256,
                "locator": {"title": p.title, "url": p.url, "anchor": p.anchor,
                            "context_before": p.context_before, "context_after": p.context_after},
                "version_status": p.version_status, "superseded_by": p.superseded_by or None,
            }  # fmt: skip
        if bad:
            raise AuditExportError(
                "passage text no longer matches its stored SHA-256: " + "; ".join(bad[:20])
            )

    def responses(self, run: Run) -> Iterator[dict]:
        citations = Lockstep(
            Citation.objects.filter(response__run=run)
            .order_by("response__position", "position")
            .values_list(
                "response__position", "marker", "passage__ref", "start", "end", "passage_id"
            )  # fmt: skip
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
                "trace",
            )  # fmt: skip
            .iterator(chunk_size=CHUNK)
        ):
            if trace is None:
                self.missing.append(f"runs/{run.run_id}: trace of case {case_id}")
            cited = []
            for _, marker, ref, start, end, passage_id in citations.take(position):
                self.passage_ids.add(passage_id)
                cited.append({"marker": marker, "ref": ref, "start": start, "end": end})
            yield {
                "case_id": case_id, "expectation_version": version, "answer_id": answer_id or None,
                "text": text, "abstained": abstained, "citations": cited,
                "trace": trace,  # decoded by the field, exactly as imported
            }  # fmt: skip

    def retrieval(self, run: Run) -> Iterator[dict]:
        for case_id, rank, ref, score, filters, passage_id in (
            Retrieval.objects.filter(response__run=run)
            .order_by("response__position", "rank")
            .values_list(
                "response__case__case_id", "rank", "passage__ref", "score", "filters", "passage_id"
            )  # fmt: skip
            .iterator(chunk_size=CHUNK)
        ):
            self.passage_ids.add(passage_id)
            yield {
                "case_id": case_id, "rank": rank, "ref": ref, "score": score,
                "filters": filters,
            }  # fmt: skip

    def revisions(self) -> Iterator[dict]:
        """Every claim and verdict revision, each chain in seq order, re-sealed and checked.

        Read as plain rows (no model objects, no joins beyond the claim's identity): this
        file is most of an export's rows.
        """
        for run in self.runs:
            order = ("claim__response__position", "claim__position", "seq")
            claims = (
                ClaimRevision.objects.filter(claim__response__run=run)
                .order_by(*order)
                .values(*IDENTITY, *CLAIM_FIELDS)
                .iterator(chunk_size=CHUNK)
            )
            verdicts = (
                VerdictRevision.objects.filter(claim__response__run=run)
                .order_by(*order)
                .values(*IDENTITY, *VERDICT_FIELDS_DB, "supersedes__seq")
                .iterator(chunk_size=CHUNK)
            )
            chain, seq, previous = None, 0, None
            for kind, row in _merge_by_claim(claims, verdicts):
                identity = {
                    "project": self.project.slug, "run_id": run.run_id,
                    "case_id": row["claim__response__case__case_id"],
                    "claim_id": row["claim__key"],
                }  # fmt: skip
                key = "/".join(identity.values())
                if key != chain:
                    chain, seq, previous = key, 0, None
                document = _document(kind, row, identity)
                table = "cards_claimrevision" if kind == "claim" else "cards_verdictrevision"
                where = f"{key} revision {row['seq']} (row {row['pk']} of {table})"
                if row["seq"] != seq + 1 or row["prev_sha256"] != previous:
                    raise AuditExportError(f"broken revision chain at {where}")
                if seal(document) != row["sha256"]:
                    raise AuditExportError(f"revision content does not match its hash at {where}")
                seq, previous = row["seq"], row["sha256"]
                self.chain_heads[key] = row["sha256"]
                if self.newest is None or row["created_at"] > self.newest:
                    self.newest = row["created_at"]
                yield {**document, "sha256": row["sha256"]}

    def collect_claim_passages(self) -> None:
        """Passages a claim cites although its response neither retrieved nor cited them."""
        for run in self.runs:
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
                self.passage_ids.update(
                    Passage.objects.filter(
                        snapshot_id=run.snapshot_id, ref__in=ordered[start : start + CHUNK]
                    ).values_list("pk", flat=True)
                )

    def metrics(self, run: Run) -> Iterator[bytes]:
        """metrics/RUN.json, streamed: the canonical JSON of `run_metrics`, built response by
        response (keys sorted: per_response, run, run_id, verdicts_from). The claims'
        pre-check hints are kept for the cards, nothing else."""
        source = Source()
        totals = Totals()
        hints = self.hints.setdefault(run.pk, {})
        yield b'{"per_response":['
        for i, (figures, _) in enumerate(iter_response_figures(run=run, source=source)):
            totals.add(figures)
            if figures["prechecks"]["claims"]:
                hints[figures["case_id"]] = figures["prechecks"]["claims"]
            yield (b"," if i else b"") + canonical_json(to_json(figures))
        yield b'],"run":' + canonical_json(to_json(totals.result()))
        yield b',"run_id":' + canonical_json(run.run_id)
        yield b',"verdicts_from":' + canonical_json(source.label) + b"}\n"

    def cards(self) -> Iterator[dict]:
        """One row per claim, current state, with the exact text of each attached passage.

        Texts are fetched per batch of cards, so memory does not grow with the run.
        """
        for run in self.runs:
            batch: list[dict] = []
            for row in self._card_rows(run):
                batch.append(row)
                if len(batch) >= CARD_BATCH:
                    yield from _with_texts(run, batch)
                    batch = []
            yield from _with_texts(run, batch)

    def _card_rows(self, run: Run) -> Iterator[dict]:
        """Cards in lockstep with their verdicts; citations still as refs."""
        hints = self.hints.get(run.pk, {})
        verdicts = Lockstep(
            ((row[0], row[1]), *row[2:])
            for row in VerdictRevision.objects.filter(claim__response__run=run)
            .order_by("claim__response__position", "claim__position", "-seq")
            .values_list(
                "claim__response__position",
                "claim__position",
                "annotator",
                "origin",
                "association",
                "support",
                "contradicts",
                "reason",
                "diagnosis",
                "note",
                "created_at",
            )  # fmt: skip
            .iterator(chunk_size=CHUNK)
        )
        previous = None
        for row in (
            ClaimRevision.objects.filter(claim__response__run=run)
            .order_by("claim__response__position", "claim__position", "-seq")
            .values_list(
                "claim__response__position",
                "claim__position",
                "claim__key",
                "claim__response__case__case_id",
                "text",
                "kind",
                "withdrawn",
                "spans",
                "citations",
                "facts",
                "gaps",
            )  # fmt: skip
            .iterator(chunk_size=CHUNK)
        ):
            position = (row[0], row[1])
            if position == previous:
                continue  # an older revision of the same claim
            previous = position
            _, _, key, case_id, text, kind, withdrawn, spans, cited, facts, gaps = row
            verdict = _current_verdict(verdicts.take(position))
            if verdict is None and not withdrawn:
                self.missing.append(f"cards: {run.run_id}/{case_id}/{key} was never judged")
            yield {
                "run_id": run.run_id, "snapshot": run.snapshot.name, "case_id": case_id,
                "claim_id": key, "text": text, "kind": kind, "withdrawn": withdrawn,
                "spans": spans,
                "citations": cited,
                "facts": facts, "gaps": gaps,
                **_verdict_fields(verdict),
                "prechecks": hints.get(case_id, {}).get(key, []),
            }  # fmt: skip


IDENTITY = ("claim__response__position", "claim__position", "claim_id",
        "claim__response__case__case_id", "claim__key")  # fmt: skip
COMMON_FIELDS = (
    "pk",
    "seq",
    "annotator",
    "origin",
    "reason",
    "created_at",
    "prev_sha256",
    "sha256",
)
CLAIM_FIELDS = (*COMMON_FIELDS, "text", "kind", "spans", "citations", "facts", "gaps", "withdrawn")
VERDICT_FIELDS_DB = (
    *COMMON_FIELDS, "association", "support", "contradicts", "diagnosis", "citation_relevance",
    "note", "stated_at",
)  # fmt: skip


def _merge_by_claim(claims: Iterator[dict], verdicts: Iterator[dict]) -> Iterator[tuple]:
    """Interleave the two ordered streams into each claim's single chain (by seq)."""

    def keyed(rows, kind):
        for row in rows:
            position = (row["claim__response__position"], row["claim__position"], row["seq"])
            yield position, kind, row

    for _, kind, row in heapq.merge(
        keyed(claims, "claim"), keyed(verdicts, "verdict"), key=lambda item: item[0]
    ):
        yield kind, row


def _document(kind: str, row: dict, identity: dict) -> dict:
    common = {
        "seq": row["seq"], "annotator": row["annotator"], "origin": row["origin"],
        "reason": row["reason"], "created_at": row["created_at"],
        "prev_sha256": row["prev_sha256"],
    }  # fmt: skip
    if kind == "claim":
        return claim_revision_document(
            **identity, **common, text=row["text"], kind=row["kind"], spans=row["spans"],
            citations=row["citations"], facts=row["facts"], gaps=row["gaps"],
            withdrawn=row["withdrawn"],
        )  # fmt: skip
    return verdict_revision_document(
        **identity, **common, association=row["association"], support=row["support"],
        contradicts=row["contradicts"], diagnosis=row["diagnosis"],
        citation_relevance=row["citation_relevance"], note=row["note"],
        stated_at=row["stated_at"], supersedes=row["supersedes__seq"],
    )  # fmt: skip


VERDICT_FIELDS = (
    "annotator", "origin", "association", "support", "contradicts", "reason", "diagnosis", "note",
    "created_at",
)  # fmt: skip


def _current_verdict(rows: list[tuple]) -> dict | None:
    """Adjudicated, else the newest reviewer verdict, else the newest imported judgement."""
    for origin in (Origin.ADJUDICATION, Origin.REVIEW, Origin.IMPORTED):
        for row in rows:  # newest first
            if row[2] == origin:
                return dict(zip(VERDICT_FIELDS, row[1:], strict=True))
    return None


def _verdict_fields(verdict: dict | None) -> dict:
    if verdict is None:
        return dict.fromkeys(
            (
                "association",
                "support",
                "contradicts",
                "reason",
                "diagnosis",
                "note",
                "reviewer",
                "origin",
                "judged_at",
            )  # fmt: skip
        )
    return {
        "association": verdict["association"], "support": verdict["support"],
        "contradicts": verdict["contradicts"], "reason": verdict["reason"],
        "diagnosis": verdict["diagnosis"] or None, "note": verdict["note"] or None,
        "reviewer": verdict["annotator"], "origin": verdict["origin"],
        "judged_at": rfc3339(verdict["created_at"]),
    }  # fmt: skip


CARD_COLUMNS = (
    "run_id", "case_id", "claim_id", "kind", "withdrawn", "text", "spans", "citations",
    "citation_texts", "association", "support", "contradicts", "reason", "diagnosis", "facts",
    "gaps", "prechecks", "reviewer", "origin", "judged_at", "note",
)  # fmt: skip


CARD_BATCH = 500


def _with_texts(run: Run, batch: list[dict]) -> Iterator[dict]:
    refs = sorted({ref for row in batch for ref in row["citations"]})
    texts = {
        ref: (text, digest)
        for ref, text, digest in Passage.objects.filter(
            snapshot_id=run.snapshot_id, ref__in=refs
        ).values_list("ref", "text", "sha256")
    }
    for row in batch:
        row["citations"] = [
            {
                "ref": ref,
                "text": texts.get(ref, (None, None))[0],
                "sha256": texts.get(ref, (None, None))[1],
            }
            for ref in row["citations"]
        ]
        yield row


def _cards_and_csv(rows: Iterable[dict], spool: IO[bytes]) -> Iterator[bytes]:
    """cards.jsonl chunks; the same rows go to cards.csv in a spool. The cards are built once."""
    text = io.TextIOWrapper(spool, encoding="utf-8", newline="", write_through=True)
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(CARD_COLUMNS)

    def also_to_csv() -> Iterator[dict]:
        for row in rows:
            writer.writerow(_csv_row(row))
            yield row

    yield from _lines(also_to_csv(), CARD_BATCH)
    text.detach()  # leave the spool open for reading


def _csv_row(row: dict) -> list:
    flat = {
        **row,
        "spans": " ".join(f"{a}-{b}" for a, b in row["spans"]),
        "citations": " ".join(c["ref"] for c in row["citations"]),
        "citation_texts": "\n---\n".join(c["text"] or "" for c in row["citations"]),
        "facts": " ".join(row["facts"]),
        "gaps": " ".join(row["gaps"]),
        "prechecks": " ".join(row["prechecks"]),
    }
    return ["" if flat[c] is None else flat[c] for c in CARD_COLUMNS]


def _spooled(spool: IO[bytes]) -> Iterator[bytes]:
    spool.seek(0)
    while chunk := spool.read(256 * 1024):
        yield chunk


def export_stream(package: Package, out: IO[bytes] | None = None) -> Iterator[bytes]:
    """Write the package; yields zip bytes as they are made (or writes them to `out`)."""
    sink = _Sink(out)
    archive = zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6)
    writer = _Writer(archive)

    def emit(path: str, chunks: Iterable[bytes]) -> Iterator[bytes]:
        for _ in writer.file(path, chunks):
            data = sink.drain()
            if data:
                yield data

    try:
        yield from _write(package, emit, writer)
    except BaseException:
        # Close the half-written zip now (its bytes are thrown away), so that nothing
        # tries to finish it later on a closed file.
        with contextlib.suppress(Exception):
            archive.close()
        raise
    archive.writestr(_zip_info("manifest.json"), package.manifest_bytes)
    archive.close()
    data = sink.drain()
    if data:
        yield data


def _write(package: Package, emit, writer: _Writer) -> Iterator[bytes]:
    runs = package.runs
    for run in runs:
        if set(run.run_id) <= {"."}:
            raise AuditExportError(f"run id {run.run_id!r} cannot name a folder of the package")
    package.collect_claim_passages()
    # The order is fixed: fixture files come after the runs that name their passages.
    yield from emit("README.txt", [README.encode("utf-8")])
    yield from emit("verify.py", [(HERE / "verify.py").read_bytes()])
    yield from emit("schema/bundle.schema.json", [SCHEMA_PATH.read_bytes()])
    yield from emit("schema/cards.schema.json", [_line(CARDS_SCHEMA)])
    for run in runs:
        meta = {
            "run_id": run.run_id, "label": run.label, "created_at": rfc3339(run.created_at),
            "collection_snapshot": run.snapshot.name, "system": run.system,
            "locale": run.locale or None, "baseline_run_id": run.baseline_run_id or None,
            "notes": run.notes or None, "imported_at": rfc3339(run.imported_at),
            "source_name": run.source_name or None, "source_sha256": run.source_sha256 or None,
        }  # fmt: skip
        yield from emit(f"runs/{run.run_id}/run.json", [_line(meta)])
        yield from emit(f"runs/{run.run_id}/responses.jsonl", _lines(package.responses(run)))
        yield from emit(f"runs/{run.run_id}/retrieval.jsonl", _lines(package.retrieval(run)))
    yield from emit("fixture/cases.jsonl", _lines(package.cases()))
    yield from emit("fixture/passages.jsonl", _lines(package.passages()))
    # The figures come before the cards: writing them collects the pre-check hints.
    for run in runs:
        yield from emit(f"metrics/{run.run_id}.json", package.metrics(run))
    with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024) as spool:
        yield from emit("cards/cards.jsonl", _cards_and_csv(package.cards(), spool))
        yield from emit("cards/cards.csv", _spooled(spool))
    yield from emit("cards/revisions.jsonl", _lines(package.revisions()))
    if package.compare:
        a, b = package.compare
        comparison = compare_runs(run_a=a, run_b=b, source=Source()).as_json()
        yield from emit(f"replay/{a.run_id}__{b.run_id}.json", [_line(comparison)])
    manifest = {
        "format": FORMAT,
        "generator": GENERATOR,
        "project": package.project.slug,
        "runs": [run.run_id for run in runs],
        "compare": [package.compare[0].run_id, package.compare[1].run_id]
        if package.compare
        else None,
        "created_at": rfc3339(package.newest),
        "files": writer.entries,
        "chain_heads": package.chain_heads,
        "missing": sorted(set(package.missing)),
    }
    manifest["manifest_sha256"] = hashlib.sha256(canonical_json(manifest)).hexdigest()
    manifest_bytes = _line(manifest)
    package.package_id = hashlib.sha256(manifest_bytes).hexdigest()
    package.manifest_bytes = manifest_bytes


README = """Evidence Review audit package (evidence-audit/1)

What is here
  manifest.json               every other file with its size and SHA-256, the chain heads,
                              and missing[]: what the application did not have
  verify.py                   checks all of it with the Python standard library:
                                python3 verify.py THIS.zip [--id PACKAGE_ID]
  schema/                     the bundle format the runs came in; the shape of card rows
  fixture/cases.jsonl         each case: query, required facts, relevant refs, known gaps
  fixture/passages.jsonl      every passage an exported response retrieved or cited, as imported
  runs/RUN/run.json           run metadata as imported
  runs/RUN/responses.jsonl    each answer as shown, its citations, abstained flag and trace
  runs/RUN/retrieval.jsonl    the ranked retrieval output
  cards/cards.jsonl, .csv     one row per claim: its current verdict with the exact passage text
  cards/revisions.jsonl       every claim and verdict revision, each claim's chain in order,
                              with prev_sha256 and sha256 (canonical JSON, keys sorted)
  metrics/RUN.json            the run's figures (metrics.md), verdicts from the default source
  replay/A__B.json            the comparison of two runs, when one was asked for

What verify.py proves, and what it does not
  It proves the files are those the manifest lists, unchanged, that every passage text
  matches its hash and that every revision chain is intact. A verdict is a person's
  judgement on the visible evidence, not a guarantee of truth. A package rebuilt whole,
  hashes included, is detected only against the package id (the SHA-256 of manifest.json)
  recorded when it was exported: pass it with --id.
"""

CARDS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "One row of cards/cards.jsonl (evidence-audit/1)",
    "type": "object",
    "required": [
        "run_id",
        "snapshot",
        "case_id",
        "claim_id",
        "text",
        "kind",
        "citations",
        "support",
        "reason",
        "prechecks",
    ],  # fmt: skip
    "properties": {
        "run_id": {"type": "string"},
        "snapshot": {"type": "string"},
        "case_id": {"type": "string"},
        "claim_id": {"type": "string"},
        "text": {"type": "string"},
        "kind": {"enum": ["factual", "abstention"]},
        "withdrawn": {"type": "boolean"},
        "spans": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "citations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "ref": {"type": "string"},
                    "text": {"type": ["string", "null"]},
                    "sha256": {"type": ["string", "null"]},
                },
            },
        },
        "facts": {"type": "array", "items": {"type": "string"}},
        "gaps": {"type": "array", "items": {"type": "string"}},
        "association": {"enum": ["attached", "missing", None]},
        "support": {"enum": ["supported", "partial", "unsupported", "not_assessable", None]},
        "contradicts": {"type": ["boolean", "null"]},
        "reason": {"type": ["string", "null"]},
        "diagnosis": {"type": ["string", "null"]},
        "note": {"type": ["string", "null"]},
        "reviewer": {"type": ["string", "null"]},
        "origin": {"enum": ["review", "adjudication", "imported", None]},
        "judged_at": {"type": ["string", "null"]},
        "prechecks": {"type": "array", "items": {"type": "string"}},
    },
}
