"""The anchors files of a project: an append-only log and its signed checkpoint.

`AUDIT_ANCHOR_DIR/PROJECT.jsonl`, the log: one signed line per export that anchored
something new, holding the package id and only the chain heads that changed since the
export's check, numbered and linked to the line before it by its SHA-256.
`AUDIT_ANCHOR_DIR/PROJECT.checkpoint.json`: what the log adds up to (`State`), signed,
with where the log ended when it was written and that last line's SHA-256. Reading the
anchors costs the checkpoint plus the lines after it, never the whole history; the
checkpoint is rewritten at every append. Without a checkpoint the log is read whole once
(so a log written before the checkpoint existed, one full anchor per line, still reads).

What a chain's heads mean: every head in the state must still be a stored revision of its
chain. A line of an export that checked the state at line A replaces the heads its chain
had at lines ≤ A: that export met each of them in its chain while it re-read the chain
link by link (audit.revision_rows), so each is an ancestor of the new head, sealed under
it. A head added after line A (another export, at the same time) stays beside it.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.conf import settings

from audit.package import AuditExportError
from evidence.canonical import canonical_json

ANCHOR_FORMAT = "evidence-audit-anchor/1"  # anchor.json, and each line of a log before /2
LINE_FORMAT = "evidence-audit-anchor-log/2"
CHECKPOINT_FORMAT = "evidence-audit-anchor-checkpoint/2"
SEALS = ("hmac_sha256", "anchor_sha256")  # what the signature does not cover


def key_id(key: bytes) -> str:
    """Names the key without revealing it: a verifier with another key says so."""
    return hashlib.sha256(b"evidence-audit key id\n" + key).hexdigest()[:16]


def signature(key: bytes, body: dict) -> str:
    return hmac.new(key, canonical_json(body), hashlib.sha256).hexdigest()


def signed(key: bytes, body: dict) -> dict:
    body = {**body, "key_id": key_id(key)}
    return {**body, "hmac_sha256": signature(key, body)}


def log_path(slug: str) -> Path:
    return Path(settings.AUDIT_ANCHOR_DIR) / f"{slug}.jsonl"


def checkpoint_path(slug: str) -> Path:
    return Path(settings.AUDIT_ANCHOR_DIR) / f"{slug}.checkpoint.json"


@dataclass
class State:
    """What a project's log adds up to, up to its line `lines`."""

    lines: int = 0
    size: int = 0  # bytes of the log read
    last_offset: int = 0  # where its last line starts
    last_sha256: str | None = None  # and that line's SHA-256
    packages: list[str] = field(default_factory=list)  # the package id of each line
    # chain → [[head, line that anchored it], …]: one head, unless two exports crossed.
    heads: dict[str, list[list[Any]]] = field(default_factory=dict)
    from_checkpoint: bool = False  # and no line after it
    new_lines: bool = False  # lines of LINE_FORMAT read: no full anchor may follow them

    def wanted(self) -> dict[str, dict[str, str]]:
        """chain → head → the id of the package that anchored it."""
        return {
            chain: {head: self.packages[line - 1] for head, line in entries}
            for chain, entries in self.heads.items()
        }

    def changed(self, chain_heads: dict[str, str], *, after: int) -> dict[str, str]:
        """The heads of `chain_heads` a line written after the check at line `after` holds."""
        return {
            chain: head
            for chain, head in chain_heads.items()
            if _folded(self.heads.get(chain, []), head, after, self.lines + 1)
            != self.heads.get(chain)
        }


def _folded(entries: list[list[Any]], head: str, after: int, line: int) -> list[list[Any]]:
    """A chain's heads once `head` is anchored by `line`, from an export that checked `after`."""
    kept = [entry for entry in entries if entry[1] > after or entry[0] == head]
    if all(entry[0] != head for entry in kept):
        kept.append([head, line])
    return kept


# --- reading ----------------------------------------------------------------------------------


def state_read(slug: str, key: bytes) -> State:
    """The project's state, read under a shared lock (an append waits for it)."""
    path = log_path(slug)
    log = _open(path, "rb")
    if log is None and checkpoint_path(slug).exists():
        log = _open(path, "rb")  # a first export may have written both since we looked
    if log is None:
        if checkpoint_path(slug).exists():
            raise AuditExportError(
                f"anchor file {path} is missing, but its checkpoint {checkpoint_path(slug)} "
                "is there (the file was deleted)"
            )
        return State()
    with log:
        fcntl.flock(log.fileno(), fcntl.LOCK_SH)
        return _state(slug, key, log)


@contextmanager
def state_for_appending(slug: str, key: bytes) -> Iterator[tuple[State, IO[bytes]]]:
    """The project's state and its log open for appending, under an exclusive lock."""
    path = log_path(slug)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o640)
    with os.fdopen(handle, "a+b") as log:
        fcntl.flock(log.fileno(), fcntl.LOCK_EX)
        yield _state(slug, key, log), log


def _open(path: Path, mode: str) -> IO[bytes] | None:
    try:
        return path.open(mode)
    except FileNotFoundError:
        return None


def _state(slug: str, key: bytes, log: IO[bytes]) -> State:
    """The checkpoint, checked against the log, and the log's lines after it folded in."""
    path = log_path(slug)
    size = os.fstat(log.fileno()).st_size
    state = _checkpoint(slug, key)
    if state is None:
        state = State()
    elif size < state.size:
        raise AuditExportError(
            f"anchor file {path}: {size} bytes, but its checkpoint records {state.size} "
            "(lines were removed, or the file replaced)"
        )
    elif state.lines:
        log.seek(state.last_offset)
        raw = log.readline()
        if (
            len(raw) != state.size - state.last_offset
            or hashlib.sha256(raw).hexdigest() != state.last_sha256
        ):
            where = f"anchor file {path}:{state.lines}"
            _signed(slug, key, raw, where)  # an edit is refused as one
            raise AuditExportError(
                f"anchor file {path}:{state.lines}: not the line its checkpoint records "
                "(the file was rewritten)"
            )
    log.seek(state.size)
    offset = state.size
    for raw in log:
        number = state.lines + 1
        anchor = _line(slug, key, state, raw, number)
        if anchor["format"] == ANCHOR_FORMAT:
            _fold_anchor(state, anchor, number)
        else:
            _fold_line(state, anchor, number)
        state.lines, state.last_offset, state.last_sha256 = (
            number, offset, hashlib.sha256(raw).hexdigest(),
        )  # fmt: skip
        offset += len(raw)
        state.size = offset
        state.from_checkpoint = False
    return state


def _checkpoint(slug: str, key: bytes) -> State | None:
    path = checkpoint_path(slug)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    where = f"anchor checkpoint {path}"
    try:
        document = json.loads(raw)
        body = {k: v for k, v in document.items() if k != "hmac_sha256"}
        valid = hmac.compare_digest(signature(key, body), document["hmac_sha256"])
        if document.get("key_id") != key_id(key):
            raise AuditExportError(f"{where}: signed with another key")
        if not valid or document.get("project") != slug:
            raise AuditExportError(f"{where}: its signature does not match (edited)")
        if document["format"] != CHECKPOINT_FORMAT:
            raise ValueError
        state = State(
            lines=document["lines"], size=document["bytes"],
            last_offset=document["last_offset"], last_sha256=document["last_sha256"],
            packages=document["packages"], heads=document["heads"],
            from_checkpoint=True, new_lines=True,
        )  # fmt: skip
    except (ValueError, KeyError, TypeError, AttributeError):
        raise AuditExportError(f"{where}: not a checkpoint") from None
    if len(state.packages) != state.lines:
        raise AuditExportError(f"{where}: not a checkpoint")
    return state


def _line(slug: str, key: bytes, state: State, raw: bytes, number: int) -> dict:
    """Line `number` of the log, its signature and its place checked."""
    where = f"anchor file {log_path(slug)}:{number}"
    anchor = _signed(slug, key, raw, where)
    try:
        if anchor["format"] == ANCHOR_FORMAT and not state.new_lines:
            _shape(anchor["package_id"], anchor["chain_heads"])
            return anchor
        if anchor["format"] != LINE_FORMAT:
            raise ValueError
        _shape(anchor["package_id"], anchor["heads"])
        place = (anchor["line"], anchor["prev_sha256"])
        after = anchor["after"]
        if type(after) is not int or not 0 <= after < anchor["line"]:
            raise ValueError
    except (ValueError, KeyError, TypeError, AttributeError):
        raise AuditExportError(f"{where}: not an anchor") from None
    if place != (number, state.last_sha256):
        raise AuditExportError(f"{where}: out of place (a line before it removed or moved)")
    return anchor


def _signed(slug: str, key: bytes, raw: bytes, where: str) -> dict:
    """A line of the log, its signature checked (its place is the caller's)."""
    try:
        anchor = json.loads(raw)
        body = {k: v for k, v in anchor.items() if k not in SEALS}
        valid = hmac.compare_digest(signature(key, body), anchor["hmac_sha256"])
    except (ValueError, KeyError, TypeError, AttributeError):
        raise AuditExportError(f"{where}: not an anchor") from None
    if anchor.get("key_id") != key_id(key):
        raise AuditExportError(f"{where}: signed with another key")
    if not valid or anchor.get("project") != slug:
        raise AuditExportError(f"{where}: its signature does not match (edited)")
    return anchor


def _shape(package_id: Any, heads: Any) -> None:
    if not isinstance(package_id, str) or not isinstance(heads, dict):
        raise TypeError
    if not all(isinstance(h, str) for h in heads.values()):
        raise TypeError


def _fold_anchor(state: State, anchor: dict, number: int) -> None:
    """A full anchor, as each line was before the checkpoint: it replaces no head.

    Those exports did not check that the heads they replaced were in the chains they read,
    so every head they anchored stays until a chain's next export meets it there.
    """
    state.packages.append(anchor["package_id"])
    for chain, head in anchor["chain_heads"].items():
        entries = state.heads.setdefault(chain, [])
        if all(entry[0] != head for entry in entries):
            entries.append([head, number])


def _fold_line(state: State, anchor: dict, number: int) -> None:
    state.new_lines = True
    state.packages.append(anchor["package_id"])
    for chain, head in anchor["heads"].items():
        state.heads[chain] = _folded(state.heads.get(chain, []), head, anchor["after"], number)


# --- writing ----------------------------------------------------------------------------------


def line_append(
    *, slug: str, key: bytes, state: State, log: IO[bytes], package_id: str,
    heads: dict[str, str], after: int,
) -> None:  # fmt: skip
    """Append one line to the log (whole, on disk) and fold it into `state`."""
    anchor = signed(
        key,
        {
            "format": LINE_FORMAT, "project": slug, "line": state.lines + 1, "after": after,
            "prev_sha256": state.last_sha256, "package_id": package_id, "heads": heads,
        },
    )  # fmt: skip
    raw = canonical_json(anchor) + b"\n"
    log.write(raw)
    log.flush()
    os.fsync(log.fileno())
    _fold_line(state, anchor, state.lines + 1)
    state.lines += 1
    state.last_offset, state.size = state.size, state.size + len(raw)
    state.last_sha256 = hashlib.sha256(raw).hexdigest()
    state.from_checkpoint = False


def checkpoint_write(*, slug: str, key: bytes, state: State) -> None:
    """Replace the checkpoint with `state`, atomically (another name, then a rename)."""
    path = checkpoint_path(slug)
    document = signed(
        key,
        {
            "format": CHECKPOINT_FORMAT, "project": slug, "lines": state.lines,
            "bytes": state.size, "last_offset": state.last_offset,
            "last_sha256": state.last_sha256, "packages": state.packages, "heads": state.heads,
        },
    )  # fmt: skip
    partial = path.with_name(f".{path.name}.partial")
    with partial.open("wb") as out:
        out.write(canonical_json(document) + b"\n")
        out.flush()
        os.fsync(out.fileno())
    os.chmod(partial, 0o640)
    os.replace(partial, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)  # the rename itself on disk
    finally:
        os.close(folder)
    state.from_checkpoint = True
