"""Anchors outside the database: what survives whoever owns the tables.

A table owner or superuser can go around the append-only triggers (TRUNCATE, or
`session_replication_role = replica` and then UPDATE or DELETE) and re-seal the chains they
edited: the database alone then agrees with itself. Two things it does not hold catch it:

- a key (HMAC-SHA256) that signs each package's id and chain heads: `anchor.json`, the last
  member of the package, which `verify.py --key KEYFILE` checks offline;
- one append-only file per project under AUDIT_ANCHOR_DIR, where every export appends its
  signed anchor. Before the next export, every chain head ever exported must still be a
  revision of its claim (so an ancestor of, or equal to, the current head: the export then
  checks the chain link by link) and every package id must still be recorded in AuditExport.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from audit.models import AuditExport
from audit.package import CHUNK, AuditExportError, Package
from cards.models import ClaimRevision, VerdictRevision
from evidence.canonical import canonical_json

FORMAT = "evidence-audit-anchor/1"
MIN_KEY_BYTES = 32
SEALS = ("hmac_sha256", "anchor_sha256")  # what the signature does not cover
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


def key_id(key: bytes) -> str:
    """Names the key without revealing it: a verifier with another key says so."""
    return hashlib.sha256(b"evidence-audit key id\n" + key).hexdigest()[:16]


def signature(key: bytes, body: dict) -> str:
    return hmac.new(key, canonical_json(body), hashlib.sha256).hexdigest()


def anchor_document(*, package: Package, key: bytes) -> dict:
    """anchor.json: the package id and chain heads, signed. Same data and key, same bytes."""
    body = {
        "format": FORMAT,
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
    return Path(settings.AUDIT_ANCHOR_DIR) / f"{slug}.jsonl"


def anchor_append(*, package: Package) -> None:
    """Append the package's anchor to its project's file, whole, under a lock, on disk."""
    path = anchor_file(package.project.slug)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = canonical_json(anchor_document(package=package, key=signing_key())) + b"\n"
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        os.write(handle, data)
        os.fsync(handle)
    finally:
        os.close(handle)


def anchors_check(*, package: Package) -> None:
    """Refuse the export when the database lost what an earlier export anchored.

    Raises AuditExportError with one line naming the claim (project/run/case/claim) whose
    exported head is gone, or the package id no longer recorded. Memory grows with the heads
    ever exported, not with the revisions: those are streamed.
    """
    slug = package.project.slug
    wanted: dict[str, dict[str, str]] = {}  # chain → head → package id that exported it
    packages: list[str] = []
    for anchor in _anchors(slug):
        packages.append(anchor["package_id"])
        for chain, head in anchor["chain_heads"].items():
            wanted.setdefault(chain, {}).setdefault(head, anchor["package_id"])
    if not packages:
        return
    recorded = set(
        AuditExport.objects.filter(project=package.project, package_id__in=set(packages))
        .values_list("package_id", flat=True)
        .iterator(chunk_size=CHUNK)
    )
    for package_id in packages:
        if package_id not in recorded:
            raise AuditExportError(
                f"package {package_id} was exported but is no longer recorded in the "
                f"database (its AuditExport row was deleted)"
            )
    for chain, digest in _stored_revisions(package):
        heads = wanted.get(chain)
        if heads and heads.pop(digest, None) is not None and not heads:
            del wanted[chain]
    if wanted:
        chain = min(wanted)
        head, package_id = min(wanted[chain].items())
        raise AuditExportError(
            f"claim {chain}: revision {head[:12]}… exported in package {package_id[:12]}… is "
            f"no longer in its chain (truncated, shortened or edited since)"
        )


def _anchors(slug: str) -> Iterator[dict]:
    """The project's anchors, each one's signature checked with the key."""
    path = anchor_file(slug)
    try:
        file = path.open("rb")
    except FileNotFoundError:
        return
    key = signing_key()
    with file:
        for number, raw in enumerate(file, start=1):
            where = f"anchor file {path}:{number}"
            try:
                anchor = json.loads(raw)
                body = {k: v for k, v in anchor.items() if k not in SEALS}
                signed = hmac.compare_digest(signature(key, body), anchor["hmac_sha256"])
            except (ValueError, KeyError, TypeError):
                raise AuditExportError(f"{where}: not an anchor") from None
            if anchor.get("key_id") != key_id(key):
                raise AuditExportError(f"{where}: signed with another key")
            if not signed or anchor.get("project") != slug:
                raise AuditExportError(f"{where}: its signature does not match (edited)")
            yield anchor


def _stored_revisions(package: Package) -> Iterator[tuple[str, str]]:
    """(chain, sha256) of every claim and verdict revision of the project, as stored."""
    slug = package.project.slug
    names = ("claim__response__run__run_id", "claim__response__case__case_id", "claim__key")
    for model in (ClaimRevision, VerdictRevision):
        rows = (
            model.objects.filter(claim__response__run__project=package.project)
            .values_list(*names, "sha256")
            .iterator(chunk_size=CHUNK)
        )
        for run_id, case_id, key, digest in rows:
            yield f"{slug}/{run_id}/{case_id}/{key}", digest
