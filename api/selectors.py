"""Reads of the API app: a user's tokens, and the token a request carries."""

from __future__ import annotations

import hmac

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.http import Http404

from api.models import ApiToken
from api.tokens import digest_of, prefix_of


def tokens_for_user(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


def token_of_user(*, user: AbstractBaseUser, prefix: str) -> ApiToken:
    """One of the user's own tokens: anyone else's is as absent as one never made (404)."""
    token = ApiToken.objects.filter(user=user, prefix=prefix).first()
    if token is None:
        raise Http404("No such token.")
    return token


def valid_token(*, token: str) -> ApiToken | None:
    """The row of `token` (as token_from_header gives it) with its user, in one query;
    None when it was never issued, is revoked, or its user may no longer log in."""
    row = (
        ApiToken.objects.select_related("user")
        .filter(prefix=prefix_of(token), revoked_at__isnull=True)
        .first()
    )
    # Constant time: how long the comparison took must not say how much of a digest matched.
    if row is None or not hmac.compare_digest(row.digest, digest_of(token)):
        return None
    return row if row.user.is_active else None
