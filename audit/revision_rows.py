"""cards/revisions.jsonl: every claim and verdict revision, re-sealed and checked on export."""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from audit.package import CHUNK, AuditExportError, Package, anchored_head_gone
from cards.chain import claim_revision_document, seal, verdict_revision_document
from cards.models import ClaimRevision, VerdictRevision

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
# Oldest first (audit-package.md); revisions of one instant (an import) claim by claim, each
# in chain order. Sorted by the database, so memory does not grow with the revisions.
ORDER = ("created_at", "claim_id", "seq")


def revision_rows(*, package: Package) -> Iterator[dict]:
    """Every claim and verdict revision, oldest first, re-sealed and checked chain by chain.

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
    claims = (
        ClaimRevision.objects.filter(claim__response__run__in=runs)
        .order_by(*ORDER)
        .values(*IDENTITY, *CLAIM_FIELDS)
        .iterator(chunk_size=CHUNK)
    )
    verdicts = (
        VerdictRevision.objects.filter(claim__response__run__in=runs)
        .order_by(*ORDER)
        .values(*IDENTITY, *VERDICT_FIELDS)
        .iterator(chunk_size=CHUNK)
    )
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


def _merged(claims: Iterator[dict], verdicts: Iterator[dict]) -> Iterator[tuple[str, dict]]:
    """The two tables' rows as one stream in ORDER: the chains span both tables."""

    def keyed(rows: Iterator[dict], kind: str) -> Iterator[tuple]:
        for row in rows:
            yield tuple(row[name] for name in ORDER), kind, row

    for _, kind, row in heapq.merge(
        keyed(claims, "claim"), keyed(verdicts, "verdict"), key=lambda item: item[0]
    ):
        yield kind, row


def _checked(package: Package, heads: dict, kind: str, row: dict) -> dict:
    """The row as written to the file, after checking its link and re-sealing its document."""
    seq, previous = heads.get(row["claim_id"], (0, None))
    if row["seq"] != seq + 1 or row["prev_sha256"] != previous:
        raise AuditExportError(f"broken revision chain at {_where(package, kind, row)}")
    identity = _identity(package, row)
    document = _document(kind, row, identity)
    if seal(document) != row["sha256"]:
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
    return {**document, "sha256": row["sha256"]}


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
