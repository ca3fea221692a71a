"""API tokens as text: how one is made, read from a header and hashed. No database here."""

from __future__ import annotations

import hashlib
import re
import secrets

# 32 bits that find the row, 256 bits of secret that prove it.
TOKEN = re.compile(r"evr_(?P<prefix>[0-9a-f]{8})_[A-Za-z0-9_-]{43}")
BEARER = re.compile(r"Bearer +(?P<token>\S+) *", re.IGNORECASE)


def new_token(prefix: str) -> str:
    return f"evr_{prefix}_{secrets.token_urlsafe(32)}"


def new_prefix() -> str:
    return secrets.token_hex(4)


def digest_of(token: str) -> str:
    """SHA-256, not a password hash: the secret has 256 random bits, so a leaked digest
    cannot be guessed back, and a slow hash would cost its time on every request."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def token_from_header(value: str) -> str | None:
    """The token of an `Authorization: Bearer …` header, when it has a token's shape."""
    bearer = BEARER.fullmatch(value)
    if bearer is None or TOKEN.fullmatch(bearer["token"]) is None:
        return None
    return bearer["token"]


def prefix_of(token: str) -> str:
    match = TOKEN.fullmatch(token)
    assert match is not None, "a token checked by token_from_header"
    return match["prefix"]
