"""What the jobs app records: each import or export a lead asked for, and how it went."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from evidence.models import Project


class Job(models.Model):
    """One bundle import or audit export, run by a worker; the page and the API read this row.

    Whichever task backend runs it, a job's state lives here. While it runs, its live
    counters and heartbeat are a file beside its upload (`jobs.progress`): on SQLite an
    import's transaction holds the only write lock from its first line to its last.
    """

    class Kind(models.TextChoices):
        IMPORT = "import", _("Bundle import")
        EXPORT = "export", _("Audit export")

    class State(models.TextChoices):
        QUEUED = "queued", pgettext_lazy("job state", "Queued")
        RUNNING = "running", pgettext_lazy("job state", "Running")
        DONE = "done", pgettext_lazy("job state", "Done")
        FAILED = "failed", pgettext_lazy("job state", "Failed")

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    kind = models.CharField(max_length=10, choices=Kind)
    project = models.ForeignKey(Project, models.PROTECT, related_name="jobs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+"
    )
    state = models.CharField(max_length=10, choices=State, default=State.QUEUED)
    # What was asked: an import's file name and check boxes, an export's runs, pair, source.
    options = models.JSONField(default=dict)
    # The upload's size as sent, when known: the import's per cent is bytes_read of it.
    size_bytes = models.BigIntegerField(null=True, blank=True)
    bytes_read = models.BigIntegerField(default=0)
    lines_read = models.BigIntegerField(default=0)
    cases_stored = models.BigIntegerField(default=0)
    errors = models.JSONField(default=list)  # `line N: …`, as the import reports them
    result = models.JSONField(default=dict)  # the import's summary, the package's id
    # The package an export wrote, under JOBS_DIR; empty until it is written.
    file_name = models.CharField(max_length=100, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=100, blank=True)  # host:pid that ran it
    created_at = models.DateTimeField(db_default=Now())
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=["done", "failed"], finished_at__isnull=False)
                | Q(state__in=["queued", "running"], finished_at__isnull=True),
                name="jobs_job_finished_when_over",
            ),
            models.CheckConstraint(
                condition=Q(bytes_read__gte=0, lines_read__gte=0, cases_stored__gte=0),
                name="jobs_job_progress_not_negative",
            ),
        ]
        indexes = [
            # A project's jobs, newest first (the jobs page, the upload page's recent imports).
            models.Index(fields=["project", "-created_at"], name="jobs_job_project_recent"),
            # The sweep: running jobs whose worker stopped beating.
            models.Index(fields=["state"], condition=Q(state="running"), name="jobs_job_running"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.code} ({self.state})"

    @property
    def active(self) -> bool:
        return self.state in {self.State.QUEUED, self.State.RUNNING}

    @property
    def percent(self) -> int | None:
        """How much of the upload was read, when its size is known."""
        if not self.size_bytes:
            return None
        return min(100, self.bytes_read * 100 // self.size_bytes)
