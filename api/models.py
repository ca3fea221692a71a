"""What the API app records: its users' tokens, of which only a hash is kept."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now


class ApiToken(models.Model):
    """A user's key to the API (docs/security.md, "API tokens").

    The token is `evr_PREFIX_SECRET`; the prefix finds the row and is shown to tell tokens
    apart, the SHA-256 of the whole token proves it. The token itself is shown once, when
    it is made, and stored nowhere. A revoked token keeps its row, so that its owner's
    page still says when it was made, last used and revoked.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=8)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(db_default=Now())
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            # Every API request finds its token by prefix (this constraint's index).
            models.UniqueConstraint(fields=["prefix"], name="api_apitoken_unique_prefix"),
            models.CheckConstraint(
                condition=Q(prefix__regex=r"^[0-9a-f]{8}$"), name="api_apitoken_prefix_hex"
            ),
            models.CheckConstraint(
                condition=Q(digest__regex=r"^[0-9a-f]{64}$"), name="api_apitoken_digest_hex"
            ),
        ]

    def __str__(self) -> str:
        return f"evr_{self.prefix}_…"

    @property
    def active(self) -> bool:
        return self.revoked_at is None
