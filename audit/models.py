"""What the audit app records: the id of every package exported."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from evidence.models import Project


class AuditExport(models.Model):
    """The id (manifest SHA-256) of every audit package exported. Never updated."""

    project = models.ForeignKey(Project, models.PROTECT, related_name="audit_exports")
    package_id = models.CharField(max_length=64)
    runs = models.JSONField(default=list)
    compare = models.JSONField(default=list)
    exported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+"
    )
    exported_at = models.DateTimeField(db_default=Now())

    class Meta:
        # The table keeps the name it had when the model lived in `replay`.
        db_table = "replay_auditexport"
        ordering = ["-exported_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(package_id__regex=r"^[0-9a-f]{64}$"),
                name="replay_auditexport_package_id_hex",
            ),
        ]

    def __str__(self) -> str:
        return self.package_id
