"""cards/cards.jsonl and cards/cards.csv: one row per claim, its current state and verdict.

The verdict is the one the package's figures count for the claim (`Package.source`,
chosen by cards.metrics), so a card and metrics/RUN.json never tell two stories.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import SimpleNamespace
from typing import IO

from audit.package import CHUNK, Package
from audit.zipstream import lines
from cards.blind import sightings
from cards.metrics import Lockstep
from cards.models import ClaimRevision, VerdictRevision
from cards.verdicts import NO_CONSENSUS, counted
from evidence.canonical import rfc3339
from evidence.fields import as_text, decoded
from evidence.models import Passage
from evidence.rows import rows_by_key
from evidence.spreadsheet import csv_line, spreadsheet_cell
from replay.models import Run

# Cards whose passage texts are fetched in one query: memory does not grow with the run.
CARD_BATCH = 500
CARD_COLUMNS = (
    "run_id", "case_id", "claim_id", "kind", "withdrawn", "text", "spans", "citations",
    "citation_texts", "association", "support", "contradicts", "reason", "diagnosis", "facts",
    "gaps", "prechecks", "reviewer", "origin", "judged_at", "note",
)  # fmt: skip
# A verdict's columns, as cards.verdicts reads them (annotator, origin, support) and the
# card shows them.
VERDICT_COLUMNS = (
    "annotator", "origin", "association", "support", "contradicts", "reason", "diagnosis",
    "note", "created_at",
)  # fmt: skip
VERDICT_FIELDS = (
    "association", "support", "contradicts", "reason", "diagnosis", "note", "reviewer", "origin",
    "judged_at",
)  # fmt: skip


def card_rows(*, package: Package) -> Iterator[dict]:
    """One row per claim, current state, with the exact text of each attached passage."""
    for run in package.runs:
        batch: list[dict] = []
        for row in _cards_of(package=package, run=run):
            batch.append(row)
            if len(batch) >= CARD_BATCH:
                yield from _with_texts(run, batch)
                batch = []
        yield from _with_texts(run, batch)


def _cards_of(*, package: Package, run: Run) -> Iterator[dict]:
    """Cards in lockstep with their verdicts; citations still as refs."""
    hints = package.hints.get(run.pk, {})
    snapshot = run.snapshot.name
    # Consensus counts each annotator's blind label in a blind project, as the figures do.
    clock = sightings(run=run)
    verdicts = Lockstep(
        ((response, claim), _Verdict(**dict(zip(VERDICT_COLUMNS, rest, strict=True))))
        for response, claim, *rest in VerdictRevision.objects.filter(claim__response__run=run)
        .order_by("claim__response__position", "claim__position", "-seq")
        .values_list("claim__response__position", "claim__position", *VERDICT_COLUMNS)
        .iterator(chunk_size=CHUNK)
    )
    previous = None
    for (
        response, claim, key, response_id, case_id, text, kind, withdrawn, spans, citations,
        facts, gaps,
    ) in (
        ClaimRevision.objects.filter(claim__response__run=run)
        .order_by("claim__response__position", "claim__position", "-seq")
        .values_list(
            "claim__response__position", "claim__position", "claim__key",
            "claim__response_id", "claim__response__case__case_id", "text", "kind",
            "withdrawn", as_text("spans"), as_text("citations"), as_text("facts"),
            as_text("gaps"),
        )
        .iterator(chunk_size=CHUNK)
    ):  # fmt: skip
        position = (response, claim)
        if position == previous:
            continue  # an older revision of the same claim
        previous = position
        claim_verdicts = [verdict for _, verdict in verdicts.take(position)]
        chosen = counted(claim_verdicts, package.source, sighted=clock.of(response_id))
        if chosen is None and not withdrawn:
            name = f"cards: {run.run_id}/{case_id}/{key}"
            package.missing.append(
                f"{name} has no verdict from {package.source.label}"
                if claim_verdicts
                else f"{name} was never judged"
            )
        yield {
            "run_id": run.run_id,
            "snapshot": snapshot,
            "case_id": case_id,
            "claim_id": key,
            "text": text,
            "kind": kind,
            "withdrawn": withdrawn,
            "spans": decoded(spans),
            "citations": decoded(citations),
            "facts": decoded(facts),
            "gaps": decoded(gaps),
            **_verdict_fields(chosen),
            "prechecks": hints.get(case_id, {}).get(key, []),
        }


class _Verdict(SimpleNamespace):
    """A verdict row with the attributes cards.verdicts reads (annotator, origin, support)."""


def _verdict_fields(chosen: _Verdict | str | None) -> dict:
    """The card's verdict fields: all null without a verdict; only the label without a
    consensus (no one verdict stands for it)."""
    if chosen is None:
        return dict.fromkeys(VERDICT_FIELDS)
    if chosen == NO_CONSENSUS:
        return {**dict.fromkeys(VERDICT_FIELDS), "support": NO_CONSENSUS}
    verdict = vars(chosen)
    return {
        "association": verdict["association"],
        "support": verdict["support"],
        "contradicts": verdict["contradicts"],
        "reason": verdict["reason"],
        "diagnosis": verdict["diagnosis"] or None,
        "note": verdict["note"] or None,
        "reviewer": verdict["annotator"],
        "origin": verdict["origin"],
        "judged_at": rfc3339(verdict["created_at"]),
    }


def _with_texts(run: Run, batch: list[dict]) -> Iterator[dict]:
    """The batch with each cited ref replaced by the ref, its passage text and its SHA-256."""
    refs = sorted({ref for row in batch for ref in row["citations"]})
    # One parameter for the batch's refs, one index probe each (evidence.rows): a query of
    # a thousand `IN` parameters cost more to build and split than to run.
    cited = {
        ref: {"ref": ref, "text": text, "sha256": digest}
        for ref, text, digest in rows_by_key(
            Passage._meta.db_table, "ref", refs, ("ref", "text", "sha256"),
            where=("snapshot_id", run.snapshot_id),
        )
    }  # fmt: skip
    for row in batch:
        row["citations"] = [
            cited.get(ref) or {"ref": ref, "text": None, "sha256": None}
            for ref in row["citations"]
        ]
        yield row


def cards_and_csv(rows: Iterable[dict], spool: IO[bytes]) -> Iterator[bytes]:
    """cards.jsonl chunks; the same rows go to cards.csv in a spool, a batch of lines at a
    time. The cards are built once."""
    spool.write(csv_line(list(CARD_COLUMNS)).encode("utf-8"))
    pending: list[str] = []

    def also_to_csv() -> Iterator[dict]:
        for row in rows:
            pending.append(csv_line(_csv_row(row)))
            if len(pending) >= CARD_BATCH:
                spool.write("".join(pending).encode("utf-8"))
                pending.clear()
            yield row

    # Plain: texts, booleans and null, and the JSON columns of the revisions that
    # cards/revisions.jsonl checks against their seals (which hold no other types); a
    # package whose revisions do not match stops before its manifest (audit.export).
    yield from lines(also_to_csv(), CARD_BATCH, plain=True)
    spool.write("".join(pending).encode("utf-8"))


def _csv_row(row: dict) -> list[str]:
    flat = {
        **row,
        "spans": " ".join(f"{a}-{b}" for a, b in row["spans"]),
        "citations": " ".join(c["ref"] for c in row["citations"]),
        "citation_texts": "\n---\n".join(c["text"] or "" for c in row["citations"]),
        "facts": " ".join(row["facts"]),
        "gaps": " ".join(row["gaps"]),
        "prechecks": " ".join(row["prechecks"]),
    }
    return [spreadsheet_cell(flat[c]) for c in CARD_COLUMNS]


def spooled(spool: IO[bytes]) -> Iterator[bytes]:
    """The spool's bytes from the start, in chunks."""
    spool.seek(0)
    while chunk := spool.read(256 * 1024):
        yield chunk
