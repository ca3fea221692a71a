"""Writing an audit package (evidence-audit/1): a deterministic, streamed zip.

Every file is produced in a fixed order with fixed zip timestamps and
canonical JSON, so exporting the same stored data twice gives the same bytes.
Rows are streamed from the database straight into the zip, so memory does not
grow with the number of cases. Before a row is written its hash is recomputed
from the database: a passage whose text no longer matches its SHA-256, or a
revision whose chain is broken (someone went around the triggers), stops the
export and is named.

The members come from their own modules: `run_rows` (runs/), `fixture_rows`
(fixture/), `figures` (metrics/, replay/), `card_rows` and `revision_rows`
(cards/), `manifest` (manifest.json, README.txt, the cards schema); `zipstream`
writes them.
"""

from __future__ import annotations

import hashlib
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from audit.anchors import anchor_document, anchors_check, signing_key
from audit.card_rows import card_rows, cards_and_csv, spooled
from audit.figures import comparison, metrics_chunks
from audit.fixture_rows import case_rows, collect_claim_passages, passage_rows
from audit.manifest import CARDS_SCHEMA, README, manifest_bytes
from audit.package import AuditExportError, Package
from audit.revision_rows import revision_chunks
from audit.run_rows import response_rows, retrieval_rows, run_meta
from audit.zipstream import ZipStream, line, lines
from ingest.bundle import SCHEMA_PATH

__all__ = ["AuditExportError", "Package", "export_stream"]

HERE = Path(__file__).resolve().parent


def export_stream(package: Package, out: IO[bytes] | None = None) -> Iterator[bytes]:
    """Write the package; yields zip bytes as they are made (or writes them to `out`).

    First the anchors of earlier exports are checked (audit.anchors). When it ends,
    `package.package_id` is the package's id and the zip's last members are manifest.json
    and anchor.json (the id and chain heads, signed); an AuditExportError leaves a zip
    without manifest, which cannot pass verification.
    """
    if not package.anchors_checked:
        anchors_check(package=package)
        package.anchors_checked = True
    key = signing_key()  # before any byte: a missing key is a configuration error, not a cut
    zip_stream = ZipStream(out)
    try:
        yield from _members(package, zip_stream)
        package.manifest_bytes = manifest_bytes(package=package, files=zip_stream.entries)
    except BaseException as exc:
        zip_stream.abandon()
        # The readers that stopped hold server-side cursors (PostgreSQL's `.iterator()`):
        # free them now, inside the caller's transaction, not whenever the traceback is
        # collected (by then the transaction may be gone, and closing them fails).
        traceback.clear_frames(exc.__traceback__)
        raise
    package.package_id = hashlib.sha256(package.manifest_bytes).hexdigest()
    anchor = line(anchor_document(package=package, key=key))
    if data := zip_stream.close(
        ("manifest.json", package.manifest_bytes), ("anchor.json", anchor)
    ):
        yield data


def _members(package: Package, zip_stream: ZipStream) -> Iterator[bytes]:
    """Every member but the manifest, in the package's fixed order."""
    member = zip_stream.member
    for run in package.runs:
        if set(run.run_id) <= {"."}:
            raise AuditExportError(f"run id {run.run_id!r} cannot name a folder of the package")
    collect_claim_passages(package=package)
    # The order is fixed: fixture files come after the runs that name their passages.
    yield from member("README.txt", [README.encode("utf-8")])
    yield from member("verify.py", [(HERE / "verify.py").read_bytes()])
    yield from member("schema/bundle.schema.json", [SCHEMA_PATH.read_bytes()])
    yield from member("schema/cards.schema.json", [line(CARDS_SCHEMA)])
    for run in package.runs:
        folder = f"runs/{run.run_id}"
        yield from member(f"{folder}/run.json", [line(run_meta(run=run))])
        yield from member(
            f"{folder}/responses.jsonl", lines(response_rows(package=package, run=run))
        )
        yield from member(
            f"{folder}/retrieval.jsonl", lines(retrieval_rows(package=package, run=run))
        )
    yield from member("fixture/cases.jsonl", lines(case_rows(package=package)))
    # Text columns only: plain (evidence.canonical.canonical_lines).
    yield from member("fixture/passages.jsonl", lines(passage_rows(package=package), plain=True))
    # The figures come before the cards: writing them collects the pre-check hints.
    for run in package.runs:
        yield from member(f"metrics/{run.run_id}.json", metrics_chunks(package=package, run=run))
    with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024) as spool:
        yield from member("cards/cards.jsonl", cards_and_csv(card_rows(package=package), spool))
        yield from member("cards/cards.csv", spooled(spool))
    yield from member("cards/revisions.jsonl", revision_chunks(package=package))
    if package.compare:
        a, b = package.compare
        figures = comparison(package=package, run_a=a, run_b=b)
        yield from member(f"replay/{a.run_id}__{b.run_id}.json", [line(figures)])
