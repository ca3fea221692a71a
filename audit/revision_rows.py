"""cards/revisions.jsonl: every claim and verdict revision, re-sealed and checked on export."""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterator

from audit.package import CHUNK, AuditExportError, Package, anchored_head_gone
from cards.chain import claim_revision_document, verdict_revision_document
from cards.models import ClaimRevision, VerdictRevision
from evidence.canonical import canonical_json, unchecked_json
from evidence.fields import as_text, decoded_plain

IDENTITY = (
    "claim_id", "claim__response__run__run_id", "claim__response__case__case_id", "claim__key",
)  # fmt: skip
COMMON_FIELDS = (
    "pk", "seq", "annotator", "origin", "reason", "created_at", "prev_sha256", "sha256",
)  # fmt: skip
CLAIM_FIELDS = (*COMMON_FIELDS, "text", "kind", "spans", "citations", "facts", "gaps", "withdrawn")
VERDICT_FIELDS = (
    *COMMON_FIELDS, "association", "support", "contradicts", "diagnosis", "citation_relevance",
    "note", "stated_at", "supersedes__seq",
)  # fmt: skip
# The JSON columns, read as text and decoded once per distinct value (evidence.fields).
JSON_FIELDS = {
    "claim": ("spans", "citations", "facts", "gaps"),
    "verdict": ("citation_relevance",),
}
# Oldest first (audit-package.md); revisions of one instant (an import) claim by claim, each
# in chain order. Sorted by the database, so memory does not grow with the revisions.
ORDER = ("created_at", "claim_id", "seq")
BATCH = 500  # lines per chunk of the file


def revision_chunks(*, package: Package) -> Iterator[bytes]:
    """cards/revisions.jsonl in chunks of lines (`_sealed_line`)."""
    buffer = []
    for line in revision_rows(package=package):
        buffer.append(line)
        if len(buffer) >= BATCH:
            yield b"".join(buffer)
            buffer.clear()
    if buffer:
        yield b"".join(buffer)


def revision_rows(*, package: Package) -> Iterator[bytes]:
    """Every claim and verdict revision, oldest first, re-sealed and checked chain by chain:
    each one's line of the file (canonical JSON and `\\n`), as UTF-8.

    The chains are interleaved: what is kept of each is its last seq and hash, so memory
    grows with the number of claims, not of revisions. A revision dated before the one it
    follows (a clock set back between two saves) waits for it and is listed right after
    it, so every chain reads in order; one whose predecessor never comes (deleted from the
    database) stops the export. Read as plain rows (no model objects): this file is most of
    an export's rows.

    Each head the anchors hold for a chain written here must be met in it (audit.anchors):
    then it is sealed under the chain's new head, which the anchors keep instead. A chain
    rewritten after the anchors were checked, as the export ran, is refused here.
    """
    runs = package.runs
    claims = _rows(ClaimRevision, runs, CLAIM_FIELDS, JSON_FIELDS["claim"])
    verdicts = _rows(VerdictRevision, runs, VERDICT_FIELDS, JSON_FIELDS["verdict"])
    heads: dict[int, tuple[int, str]] = {}  # claim → seq and sha256 of its last row written
    waiting: dict[int, dict[int, tuple[str, dict]]] = {}  # claim → seq → row, out of time order
    for kind, row in _merged(claims, verdicts):
        claim = row["claim_id"]
        if row["seq"] > heads.get(claim, (0, ""))[0] + 1:
            waiting.setdefault(claim, {})[row["seq"]] = (kind, row)
            continue
        yield _checked(package, heads, kind, row)
        later = waiting.get(claim)
        while later and heads[claim][0] + 1 in later:
            yield _checked(package, heads, *later.pop(heads[claim][0] + 1))
        if later == {}:
            del waiting[claim]
    for later in waiting.values():  # a predecessor never came: the chain is broken there
        kind, row = later[min(later)]
        raise AuditExportError(f"broken revision chain at {_where(package, kind, row)}")
    for chain in sorted(package.chain_heads):
        if unmet := package.anchored_heads.get(chain):
            raise anchored_head_gone(chain, *min(unmet.items()))


def _rows(model, runs, fields: tuple[str, ...], json_fields: tuple[str, ...]) -> Iterator[dict]:
    """The table's rows in ORDER, as `values()` gives them, the JSON columns decoded; `plain`
    says whether those hold only the types orjson writes as json.dumps does (the other
    columns are texts, integers, booleans and null, and times written as texts)."""
    texts = {f"{name}_text": as_text(name) for name in json_fields}
    for row in (
        model.objects.filter(claim__response__run__in=runs)
        .order_by(*ORDER)
        .values(*IDENTITY, *(name for name in fields if name not in json_fields), **texts)
        .iterator(chunk_size=CHUNK)
    ):
        plain = True
        for name in json_fields:
            row[name], plain_value = decoded_plain(row.pop(f"{name}_text"))
            plain = plain and plain_value
        row["plain"] = plain
        yield row


def _merged(claims: Iterator[dict], verdicts: Iterator[dict]) -> Iterator[tuple[str, dict]]:
    """The two tables' rows as one stream in ORDER: the chains span both tables."""

    def keyed(rows: Iterator[dict], kind: str) -> Iterator[tuple]:
        for row in rows:
            yield tuple(row[name] for name in ORDER), kind, row

    for _, kind, row in heapq.merge(
        keyed(claims, "claim"), keyed(verdicts, "verdict"), key=lambda item: item[0]
    ):
        yield kind, row


def _checked(package: Package, heads: dict, kind: str, row: dict) -> bytes:
    """The row's line in the file, after checking its link and re-sealing its document."""
    seq, previous = heads.get(row["claim_id"], (0, None))
    if row["seq"] != seq + 1 or row["prev_sha256"] != previous:
        raise AuditExportError(f"broken revision chain at {_where(package, kind, row)}")
    identity = _identity(package, row)
    line = _sealed_line(_document(kind, row, identity), row["sha256"], plain=row["plain"])
    if line is None:
        raise AuditExportError(
            f"revision content does not match its hash at {_where(package, kind, row)}"
        )
    heads[row["claim_id"]] = (row["seq"], row["sha256"])
    chain = "/".join(identity.values())
    package.chain_heads[chain] = row["sha256"]
    if anchored := package.anchored_heads.get(chain):
        anchored.pop(row["sha256"], None)
    if package.newest is None or row["created_at"] > package.newest:
        package.newest = row["created_at"]
    return line


def _sealed_line(document: dict, digest: str, *, plain: bool) -> bytes | None:
    """The file's line for a revision whose document (what its seal hashes, cards.chain)
    hashes to `digest`: the document's canonical JSON with `sha256` added, and `\n`; None
    for a document that no longer hashes to its seal.

    A document of plain types (`evidence.canonical.is_plain`, known from its JSON columns)
    is written by orjson directly, without the walk over its values that canonical_json
    makes (a third of the file's time); bytes that hash to the seal are those that were
    sealed. Any other document, or one whose fast bytes do not hash to it, is written by
    canonical_json before it is declared changed.
    """
    sealed = unchecked_json(document) if plain else None
    if sealed is not None and hashlib.sha256(sealed).hexdigest() == digest:
        line = unchecked_json({**document, "sha256": digest})
        if line is not None:  # it wrote the document, so it writes it with one more text
            return line + b"\n"
    if hashlib.sha256(canonical_json(document)).hexdigest() != digest:
        return None
    return canonical_json({**document, "sha256": digest}) + b"\n"


def _identity(package: Package, row: dict) -> dict:
    """The claim as the chain names it (cards.chain): no database ids."""
    return {
        "project": package.project.slug,
        "run_id": row["claim__response__run__run_id"],
        "case_id": row["claim__response__case__case_id"],
        "claim_id": row["claim__key"],
    }


def _where(package: Package, kind: str, row: dict) -> str:
    chain = "/".join(_identity(package, row).values())
    table = "cards_claimrevision" if kind == "claim" else "cards_verdictrevision"
    return f"{chain} revision {row['seq']} (row {row['pk']} of {table})"


def _document(kind: str, row: dict, identity: dict) -> dict:
    """The document the revision's hash seals (cards.chain), rebuilt from the stored row."""
    common = {
        "seq": row["seq"],
        "annotator": row["annotator"],
        "origin": row["origin"],
        "reason": row["reason"],
        "created_at": row["created_at"],
        "prev_sha256": row["prev_sha256"],
    }
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
