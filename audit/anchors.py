"""Anchors outside the database: what survives whoever owns the tables.

A table owner or superuser can go around the append-only triggers (TRUNCATE, or
`session_replication_role = replica` and then UPDATE or DELETE) and re-seal the chains they
edited: the database alone then agrees with itself. Two things it does not hold catch it:

- a key (HMAC-SHA256) that signs each package's id and chain heads: `anchor.json`, the last
  member of the package, which `verify.py --key KEYFILE` checks offline;
- the project's anchors files under AUDIT_ANCHOR_DIR (audit.anchor_log): each export adds
  its package id and the chain heads that changed. Before the next export, every package id
  must still be recorded in AuditExport and each chain's anchored head must still be a
  revision of that chain; the export then re-reads each chain it writes link by link and
  meets its anchored head there (audit.revision_rows), so that head is sealed under the new
  one, which is anchored in its place.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from audit.anchor_log import (
    ANCHOR_FORMAT,
    checkpoint_write,
    key_id,
    line_append,
    log_path,
    signature,
    state_for_appending,
    state_read,
)
from audit.models import AuditExport
from audit.package import CHUNK, AuditExportError, Package, anchored_head_gone
from cards.models import ClaimRevision, VerdictRevision
from evidence.canonical import canonical_json

MIN_KEY_BYTES = 32
# Heads looked up per query (SQLite's bound on parameters may be lower: see _stored_heads).
LOOKUP = 2000
DEFAULT_KEY_FILE = Path(settings.BASE_DIR) / "var" / "audit-signing.key"


def signing_key() -> bytes:
    """The key: AUDIT_SIGNING_KEY, else the contents of AUDIT_SIGNING_KEY_FILE (surrounding
    whitespace stripped, as verify.py reads it), else a development key generated once."""
    if settings.AUDIT_SIGNING_KEY:
        key = settings.AUDIT_SIGNING_KEY.strip().encode("utf-8")
        where = "AUDIT_SIGNING_KEY"
    else:
        path = Path(settings.AUDIT_SIGNING_KEY_FILE or DEFAULT_KEY_FILE)
        if not settings.AUDIT_SIGNING_KEY_FILE and not path.exists():
            _generate(path)
        try:
            key = path.read_bytes().strip()
        except OSError as exc:
            raise ImproperlyConfigured(
                f"AUDIT_SIGNING_KEY_FILE {path}: cannot read it: {exc.strerror}"
            ) from None
        where = f"AUDIT_SIGNING_KEY_FILE {path}"
    if len(key) < MIN_KEY_BYTES:
        raise ImproperlyConfigured(f"{where}: the key is shorter than {MIN_KEY_BYTES} bytes")
    return key


def _generate(path: Path) -> None:
    """A random key readable by its owner only; O_EXCL, so two first exports agree on one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(handle, "w") as file:
        file.write(secrets.token_hex(32) + "\n")


def anchor_document(*, package: Package, key: bytes) -> dict:
    """anchor.json: the package id and chain heads, signed. Same data and key, same bytes."""
    body = {
        "format": ANCHOR_FORMAT,
        "project": package.project.slug,
        "package_id": package.package_id,
        "chain_heads": package.chain_heads,
        "key_id": key_id(key),
    }
    signed = {**body, "hmac_sha256": signature(key, body)}
    # Like manifest_sha256: any byte changed is found without the key (only the key finds a
    # forger who recomputes this).
    return {**signed, "anchor_sha256": hashlib.sha256(canonical_json(signed)).hexdigest()}


def anchor_file(slug: str) -> Path:
    """The project's log (its checkpoint is beside it)."""
    return log_path(slug)


def anchor_append(*, package: Package) -> None:
    """Add the package's id and the heads that changed to its project's log, and checkpoint.

    A package already anchored whose heads changed nothing adds no line: exporting the same
    data again costs no bytes.
    """
    slug = package.project.slug
    key = signing_key()
    with state_for_appending(slug, key) as (state, log):
        heads = state.changed(package.chain_heads, after=package.anchored_at)
        if heads or package.package_id not in set(state.packages):
            line_append(
                slug=slug, key=key, state=state, log=log, package_id=package.package_id,
                heads=heads, after=package.anchored_at,
            )  # fmt: skip
        if not state.from_checkpoint:
            checkpoint_write(slug=slug, key=key, state=state)


def anchors_check(*, package: Package) -> None:
    """Refuse the export when the database lost what an earlier export anchored.

    Raises AuditExportError with one line naming the package id no longer recorded, or the
    claim (project/run/case/claim) whose anchored head is gone. Costs the checkpoint, the
    log's lines after it, one query of the project's package ids and one indexed lookup
    per anchored head: never the history of exports. Leaves on the package the heads its
    chains must meet (`anchored_heads`) and the line it checked (`anchored_at`).
    """
    state = state_read(package.project.slug, signing_key())
    package.anchored_at = state.lines
    if not state.lines:
        return
    recorded = set(
        AuditExport.objects.filter(project=package.project)
        .values_list("package_id", flat=True)
        .iterator(chunk_size=CHUNK)
    )
    for package_id in dict.fromkeys(state.packages):
        if package_id not in recorded:
            raise AuditExportError(
                f"package {package_id} was exported but is no longer recorded in the "
                f"database (its AuditExport row was deleted)"
            )
    wanted = state.wanted()
    stored = _stored_heads(package, [head for heads in wanted.values() for head in heads])
    for chain in sorted(wanted):
        for head, package_id in sorted(wanted[chain].items()):
            if (chain, head) not in stored:
                raise anchored_head_gone(chain, head, package_id)
    package.anchored_heads = wanted


def _stored_heads(package: Package, heads: list[str]) -> set[tuple[str, str]]:
    """(chain, sha256) of the project's stored revisions among `heads`: the sha256 index.

    Verdicts first: a chain's head is usually its newest verdict, so the claim revisions
    are asked only for the heads not found there.
    """
    slug = package.project.slug
    names = ("claim__response__run__run_id", "claim__response__case__case_id", "claim__key")
    found: set[tuple[str, str]] = set()
    size = min(LOOKUP, connection.features.max_query_params or LOOKUP)
    for model in (VerdictRevision, ClaimRevision):
        rest = heads
        heads = []
        for start in range(0, len(rest), size):
            batch = set(rest[start : start + size])
            rows = (
                model.objects.filter(
                    claim__response__run__project=package.project, sha256__in=batch
                )
                .order_by()
                .values_list(*names, "sha256")
            )
            for run_id, case_id, key, digest in rows:
                found.add((f"{slug}/{run_id}/{case_id}/{key}", digest))
                batch.discard(digest)
            heads.extend(batch)
    return found
