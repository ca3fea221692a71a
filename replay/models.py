"""Runs of a RAG system, their responses, ranked retrieval and citations. Never updated."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Now
from django.urls import reverse

from evidence.fields import VerbatimJSONField
from evidence.models import Case, Expectation, Passage, Project, Snapshot


class Run(models.Model):
    """One system configuration answering a fixed set of cases, imported from one bundle."""

    project = models.ForeignKey(Project, models.PROTECT, related_name="runs")
    run_id = models.CharField(max_length=100)
    label = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(help_text="When the run was generated (from the bundle).")
    snapshot = models.ForeignKey(Snapshot, models.PROTECT, related_name="runs")
    system = VerbatimJSONField(default=dict)
    locale = models.CharField(max_length=35, blank=True, default="")
    baseline_run_id = models.CharField(max_length=100, blank=True, default="")
    notes = models.TextField(blank=True, default="")
    source_name = models.CharField(max_length=300, blank=True, default="")
    source_sha256 = models.CharField(max_length=64, blank=True, default="")
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+"
    )
    imported_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            # Runs are never overwritten or extended: a replay is a new run_id.
            models.UniqueConstraint(fields=["project", "run_id"], name="replay_run_unique_id"),
            models.CheckConstraint(
                condition=Q(run_id__regex=r"^[A-Za-z0-9._:-]{1,100}$"), name="replay_run_valid_id"
            ),
        ]

    def __str__(self) -> str:
        return self.run_id

    def get_absolute_url(self) -> str:
        return reverse("run_detail", args=[self.project.slug, self.run_id])

    @property
    def title(self) -> str:
        return self.label or self.run_id


class Response(models.Model):
    """One answer of a run to one case, exactly as shown to the user."""

    run = models.ForeignKey(
        Run,
        models.PROTECT,
        related_name="responses",
        # Its unique constraint starts with this column: no index of its own to keep.
        db_index=False,
    )
    case = models.ForeignKey(Case, models.PROTECT, related_name="responses")
    expectation = models.ForeignKey(Expectation, models.PROTECT, related_name="responses")
    position = models.PositiveIntegerField(help_text="Order of the response in its bundle.")
    answer_id = models.CharField(max_length=200, blank=True, default="")
    text = models.TextField(blank=True)
    abstained = models.BooleanField(default=False)
    trace = VerbatimJSONField(null=True, blank=True)  # null when the bundle gave none

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "case"], name="replay_response_unique_case"),
            models.UniqueConstraint(
                fields=["run", "position"], name="replay_response_unique_position"
            ),
            models.CheckConstraint(
                condition=~Q(text="") | Q(abstained=True),
                name="replay_response_text_unless_abstained",
            ),
        ]

    def __str__(self) -> str:
        return f"response {self.position}"


class Retrieval(models.Model):
    """One row of the ranked list the retriever returned for a response."""

    response = models.ForeignKey(
        Response,
        models.PROTECT,
        related_name="retrieved",
        # Its unique constraint starts with this column: no index of its own to keep.
        db_index=False,
    )
    rank = models.PositiveIntegerField()
    passage = models.ForeignKey(Passage, models.PROTECT, related_name="+")
    score = models.FloatField(null=True, blank=True)
    # The same score as the bundle's JSON number (`1` stays 1, not 1.0; an integer keeps all
    # its digits), for the audit package; null for rows imported before it was kept.
    score_as_imported = VerbatimJSONField(null=True, blank=True)
    filters = VerbatimJSONField(null=True, blank=True)

    class Meta:
        ordering = ["rank"]
        constraints = [
            models.UniqueConstraint(
                fields=["response", "rank"], name="replay_retrieval_unique_rank"
            ),
            models.CheckConstraint(
                condition=Q(rank__gte=1), name="replay_retrieval_rank_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"rank {self.rank}"


class Citation(models.Model):
    """A citation marker shown to the user, pointing at a declared passage."""

    response = models.ForeignKey(
        Response,
        models.PROTECT,
        related_name="citations",
        # Its unique constraint starts with this column: no index of its own to keep.
        db_index=False,
    )
    position = models.PositiveIntegerField()
    marker = models.CharField(max_length=200)
    passage = models.ForeignKey(Passage, models.PROTECT, related_name="+")
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(
                fields=["response", "position"], name="replay_citation_unique_position"
            ),
            models.CheckConstraint(
                condition=(Q(start__isnull=True) & Q(end__isnull=True))
                | (Q(start__isnull=False) & Q(end__isnull=False) & Q(start__lte=F("end"))),
                name="replay_citation_offsets_ordered",
            ),
        ]

    def __str__(self) -> str:
        return self.marker
