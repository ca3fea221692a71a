"""Writes of the API app: tokens made, revoked and used."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models.functions import Now
from django.utils import timezone
from django.utils.translation import gettext

from api.models import ApiToken
from api.tokens import digest_of, new_prefix, new_token

NAME_MAX = ApiToken._meta.get_field("name").max_length
# A token's last use is written at most this often: a pipeline polling every second would
# otherwise turn every read of the API into a write.
LAST_USED_PRECISION = timedelta(minutes=1)


def token_create(*, user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new token of `user`: its row, and the token itself, which exists only in this answer."""
    name = name.strip()
    if len(name) > NAME_MAX:
        raise ValidationError(
            gettext("A token's name has at most %(max)d characters.") % {"max": NAME_MAX}
        )
    for _attempt in range(5):
        prefix = new_prefix()
        token = new_token(prefix)
        try:
            with transaction.atomic():
                row = ApiToken.objects.create(
                    user=user, name=name, prefix=prefix, digest=digest_of(token)
                )
        except IntegrityError:  # the 32-bit prefix of another token: draw again
            continue
        return row, token
    raise RuntimeError("five token prefixes in a row were taken")


def token_revoke(*, token: ApiToken) -> str:
    """Refuse `token` from now on (its row stays, to show when it was made and used)."""
    if token.revoked_at is None:
        ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=Now())
    return gettext("Token %(token)s revoked.") % {"token": token}


def tokens_revoke_all(*, user: AbstractBaseUser) -> int:
    """Revoke every token of `user`; how many were still valid."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=Now())


def token_used(*, token: ApiToken) -> None:
    """Note that `token` was used now, unless that was noted less than a minute ago."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
