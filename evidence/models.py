"""Projects, frozen collection snapshots, passages and case expectations."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _


class AssignmentMode(models.TextChoices):
    MANUAL = "manual", _("By hand")
    ROUND_ROBIN = "round_robin", _("Round-robin")
    RANDOM = "random", _("Random")


MAX_REVIEWERS_PER_CASE = 10


class Project(models.Model):
    AssignmentMode = AssignmentMode

    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=200)
    blind_review = models.BooleanField(
        default=False,
        help_text="A reviewer sees others' verdicts on a case only once they have marked their "
        "own review of it complete, or a lead unblinds it.",
    )
    # When blind review was last switched on; null when it has been on from the start.
    # Before it, reviewers could see every verdict (cards.blind reads it).
    blind_since = models.DateTimeField(null=True, blank=True)
    reviewers_per_case = models.PositiveSmallIntegerField(default=1)
    assignment = models.CharField(
        max_length=12, choices=AssignmentMode.choices, default=AssignmentMode.MANUAL
    )
    created_at = models.DateTimeField(db_default=Now())
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(reviewers_per_case__gte=1)
                & Q(reviewers_per_case__lte=MAX_REVIEWERS_PER_CASE),
                name="evidence_project_reviewers_per_case_range",
            ),
            models.CheckConstraint(
                condition=Q(assignment__in=AssignmentMode.values),
                name="evidence_project_valid_assignment",
            ),
        ]

    def __str__(self) -> str:
        return self.slug


class Role(models.TextChoices):
    REVIEWER = "reviewer", _("Reviewer")
    LEAD = "lead", _("Lead")
    ADMIN = "admin", _("Admin")


class VersionStatus(models.TextChoices):
    CURRENT = "current", _("Current")
    SUPERSEDED = "superseded", _("Superseded")
    UNKNOWN = "unknown", _("Unknown")


class Membership(models.Model):
    Role = Role

    project = models.ForeignKey(Project, models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.REVIEWER)
    # Chosen on the settings page: round-robin and random assignment deal cases to these.
    in_rotation = models.BooleanField(default=False)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "user"], name="evidence_membership_unique_user"
            ),
            models.CheckConstraint(
                condition=Q(role__in=Role.values), name="evidence_membership_valid_role"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} as {self.role}"

    @property
    def can_lead(self) -> bool:
        return self.role in {self.Role.LEAD, self.Role.ADMIN}


class Snapshot(models.Model):
    """A frozen collection (`collection_snapshot`) that a run's retriever searched."""

    project = models.ForeignKey(Project, models.PROTECT, related_name="snapshots")
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], name="evidence_snapshot_unique_name"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Passage(models.Model):
    """One retrievable chunk, exactly as the generator saw it. Never updated."""

    VersionStatus = VersionStatus

    snapshot = models.ForeignKey(
        Snapshot,
        models.PROTECT,
        related_name="passages",
        # Its unique constraint starts with this column: no index of its own to keep.
        db_index=False,
    )
    ref = models.CharField(max_length=600)
    doc_id = models.CharField(max_length=200)
    version = models.CharField(max_length=200)
    chunk_id = models.CharField(max_length=200)
    text = models.TextField()
    sha256 = models.CharField(max_length=64)
    title = models.CharField(max_length=1000, blank=True, default="")
    url = models.CharField(max_length=2000, blank=True, default="")
    anchor = models.CharField(max_length=500, blank=True, default="")
    context_before = models.TextField(blank=True, default="")
    context_after = models.TextField(blank=True, default="")
    version_status = models.CharField(
        max_length=12, choices=VersionStatus.choices, default=VersionStatus.UNKNOWN
    )
    superseded_by = models.CharField(max_length=600, blank=True, default="")
    # The number tokens of `text` (cards.prechecks.NUMBER), space-separated, computed
    # once at import: the number pre-check then never needs to load passage texts.
    numbers = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            # Inside one snapshot a ref has exactly one text.
            models.UniqueConstraint(
                fields=["snapshot", "ref"], name="evidence_passage_unique_ref"
            ),
            models.CheckConstraint(
                condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="evidence_passage_sha256_hex"
            ),
            models.CheckConstraint(condition=~Q(text=""), name="evidence_passage_text_not_empty"),
            models.CheckConstraint(
                condition=Q(version_status__in=VersionStatus.values),
                name="evidence_passage_valid_version_status",
            ),
        ]
        indexes = [
            # Drift: "the same ref in the project's other snapshots" (pre-check, import summary).
            models.Index(fields=["ref"], name="evidence_passage_ref_idx"),
        ]

    def __str__(self) -> str:
        return self.ref

    @property
    def short_hash(self) -> str:
        return self.sha256[:12]


class Case(models.Model):
    """A question of the frozen test set; stable across replays by `case_id`."""

    project = models.ForeignKey(
        Project,
        models.PROTECT,
        related_name="cases",
        # Its unique constraint starts with this column: no index of its own to keep.
        db_index=False,
    )
    case_id = models.CharField(max_length=100)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "case_id"], name="evidence_case_unique_id"),
        ]

    def __str__(self) -> str:
        return self.case_id


class Expectation(models.Model):
    """What a careful reviewer expects for a case, fixed before generation. Never updated.

    A changed expectation is a new version; comparisons across versions say so.
    """

    case = models.ForeignKey(
        Case,
        models.PROTECT,
        related_name="expectations",
        # Its unique constraint starts with this column: no index of its own to keep.
        db_index=False,
    )
    version = models.PositiveIntegerField()
    query = models.TextField()
    query_id = models.CharField(max_length=200, blank=True, default="")
    required_facts = models.JSONField(default=list)  # [{fact_id, text, evidence: [ref]}]
    relevant_refs = models.JSONField(default=list)  # effective list: given, else fact evidence
    known_gaps = models.JSONField(default=list)  # [{gap_id, text}]
    sha256 = models.CharField(max_length=64)  # of the canonical expectation, see ingest.bundle
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["case", "version"], name="evidence_expectation_unique_version"
            ),
            models.UniqueConstraint(
                fields=["case", "sha256"], name="evidence_expectation_unique_content"
            ),
            models.CheckConstraint(
                condition=Q(version__gte=1), name="evidence_expectation_version_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"expectation v{self.version}"

    @property
    def fact_ids(self) -> list[str]:
        return [fact["fact_id"] for fact in self.required_facts]

    @property
    def gap_ids(self) -> list[str]:
        return [gap["gap_id"] for gap in self.known_gaps]
