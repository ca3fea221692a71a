"""Canonical JSON and hashing, shared by import, the revision chains and the audit export."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any


def canonical_json(value: Any) -> bytes:
    """Keys sorted, no spaces, non-ASCII kept as UTF-8: the bytes that get hashed."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def text_sha256(text: str) -> str:
    """SHA-256 of the UTF-8 bytes of a text, without any normalisation."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rfc3339(moment: datetime | None) -> str | None:
    """UTC, with microseconds: one spelling per instant, so hashes are stable."""
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
