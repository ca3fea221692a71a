"""Claims and their append-only claim and verdict revisions, chained by hashes.

Every claim has one chain: its claim revisions and verdict revisions together,
numbered by `seq` in the order they were stored (1, 2, 3, … across both
tables), each carrying the SHA-256 of the previous one. Rows are never updated
or deleted; a change of mind is a new revision with a reason.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _

from replay.models import Response, Run


class Support(models.TextChoices):
    SUPPORTED = "supported", _("Supported")
    PARTIAL = "partial", _("Partial")
    UNSUPPORTED = "unsupported", _("Unsupported")
    NOT_ASSESSABLE = "not_assessable", _("Not assessable")


class Association(models.TextChoices):
    ATTACHED = "attached", _("Attached")
    MISSING = "missing", _("Missing")


class Relevance(models.TextChoices):
    NECESSARY = "necessary", _("Necessary")
    REDUNDANT = "redundant", _("Redundant")
    IRRELEVANT = "irrelevant", _("Irrelevant")


class Diagnosis(models.TextChoices):
    """What a reviewer may record, limited to the visible evidence (metrics.md)."""

    EXPECTED_PASSAGE_NOT_RETRIEVED = (
        "expected_passage_not_retrieved",
        _("Expected passage not retrieved"),
    )
    QUALIFIER_DROPPED = "qualifier_dropped", _("Qualifier dropped")
    CITATION_CONFLICTS = "citation_conflicts", _("Citation conflicts")
    SUPPORTING_PASSAGE_NOT_CITED = (
        "supporting_passage_not_cited",
        _("Supporting passage not cited"),
    )
    LOCATOR_DRIFT = "locator_drift", _("Locator drift")
    NOT_IN_COLLECTION = "not_in_collection", _("Not in collection")


class ClaimKind(models.TextChoices):
    FACTUAL = "factual", _("Factual")
    ABSTENTION = "abstention", _("Abstention")


class Origin(models.TextChoices):
    REVIEW = "review", _("Review")
    ADJUDICATION = "adjudication", _("Adjudication")
    IMPORTED = "imported", _("Imported")


def _author_matches_origin() -> Q:
    # A local person has a user account; an imported annotator (another tool, a
    # judge model) has only a name and must never pass for a local reviewer.
    return (Q(origin=Origin.IMPORTED) & Q(author__isnull=True)) | (
        ~Q(origin=Origin.IMPORTED) & Q(author__isnull=False)
    )


class Claim(models.Model):
    """The stable identity of one atomic claim inside a response."""

    response = models.ForeignKey(
        Response,
        models.PROTECT,
        related_name="claims",
        # Its unique constraint starts with this column: no index of its own to keep.
        db_index=False,
    )
    key = models.CharField(max_length=100, help_text="claim_id from the bundle, or assigned here.")
    position = models.PositiveIntegerField()
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["response", "key"], name="cards_claim_unique_key"),
        ]

    def __str__(self) -> str:
        return self.key


class ClaimRevision(models.Model):
    claim = models.ForeignKey(
        Claim,
        models.PROTECT,
        related_name="revisions",
        # Its unique constraint starts with this column: no index of its own to keep.
        db_index=False,
    )
    seq = models.PositiveIntegerField(help_text="Position in the claim's chain.")
    text = models.TextField()
    kind = models.CharField(max_length=12, choices=ClaimKind.choices, default=ClaimKind.FACTUAL)
    spans = models.JSONField(default=list)  # [[start, end], …] in the response text
    citations = models.JSONField(default=list)  # refs attached to the claim
    facts = models.JSONField(default=list)  # fact_ids of the expectation
    gaps = models.JSONField(default=list)  # gap_ids of the expectation
    withdrawn = models.BooleanField(default=False)
    reason = models.TextField(blank=True, default="")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+"
    )
    annotator = models.CharField(max_length=200)
    origin = models.CharField(max_length=12, choices=Origin.choices)
    created_at = models.DateTimeField()  # set before hashing, so the hash covers it
    # null for the first revision of a chain, as the audit format says (not "").
    prev_sha256 = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    sha256 = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["claim", "seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["claim", "seq"], name="cards_claimrevision_unique_seq"
            ),
            models.CheckConstraint(
                condition=Q(seq__gte=1), name="cards_claimrevision_seq_positive"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=ClaimKind.values), name="cards_claimrevision_valid_kind"
            ),
            models.CheckConstraint(
                condition=Q(origin__in=[Origin.REVIEW, Origin.IMPORTED]),
                name="cards_claimrevision_valid_origin",
            ),
            models.CheckConstraint(
                condition=_author_matches_origin(),
                name="cards_claimrevision_author_matches_origin",
            ),
            models.CheckConstraint(
                condition=~Q(text=""), name="cards_claimrevision_text_not_empty"
            ),
            models.CheckConstraint(
                condition=Q(withdrawn=False) | Q(reason__regex=r"\S"),
                name="cards_claimrevision_reason_when_withdrawn",
            ),
            models.CheckConstraint(
                condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="cards_claimrevision_sha256_hex"
            ),
        ]

    def __str__(self) -> str:
        return f"claim revision {self.seq}"


class VerdictRevision(models.Model):
    claim = models.ForeignKey(
        Claim,
        models.PROTECT,
        related_name="verdicts",
        # Its unique constraint starts with this column: no index of its own to keep.
        db_index=False,
    )
    seq = models.PositiveIntegerField(help_text="Position in the claim's chain.")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+"
    )
    annotator = models.CharField(max_length=200)
    origin = models.CharField(max_length=12, choices=Origin.choices)
    association = models.CharField(max_length=10, choices=Association.choices)
    support = models.CharField(max_length=16, choices=Support.choices)
    contradicts = models.BooleanField(default=False)
    reason = models.TextField()
    diagnosis = models.CharField(max_length=40, choices=Diagnosis.choices, blank=True, default="")
    citation_relevance = models.JSONField(default=dict)  # {ref: necessary|redundant|irrelevant}
    note = models.TextField(blank=True, default="")
    stated_at = models.DateTimeField(
        null=True, blank=True, help_text="`at` of an imported judgement."
    )
    supersedes = models.ForeignKey("self", models.PROTECT, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField()  # set before hashing, so the hash covers it
    # null for the first revision of a chain, as the audit format says (not "").
    prev_sha256 = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    sha256 = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["claim", "seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["claim", "seq"], name="cards_verdictrevision_unique_seq"
            ),
            models.CheckConstraint(
                condition=Q(seq__gte=1), name="cards_verdictrevision_seq_positive"
            ),
            models.CheckConstraint(
                condition=Q(origin__in=Origin.values), name="cards_verdictrevision_valid_origin"
            ),
            models.CheckConstraint(
                condition=_author_matches_origin(),
                name="cards_verdictrevision_author_matches_origin",
            ),
            models.CheckConstraint(
                condition=Q(support__in=Support.values), name="cards_verdictrevision_valid_support"
            ),
            models.CheckConstraint(
                condition=Q(association__in=Association.values),
                name="cards_verdictrevision_valid_association",
            ),
            models.CheckConstraint(
                condition=Q(diagnosis="") | Q(diagnosis__in=Diagnosis.values),
                name="cards_verdictrevision_valid_diagnosis",
            ),
            # The written reason is the point of a verdict: blank or whitespace is refused.
            models.CheckConstraint(
                condition=Q(reason__regex=r"\S"), name="cards_verdictrevision_reason_not_blank"
            ),
            models.CheckConstraint(
                condition=Q(contradicts=False) | Q(support=Support.UNSUPPORTED),
                name="cards_verdictrevision_contradicts_only_unsupported",
            ),
            models.CheckConstraint(
                condition=Q(sha256__regex=r"^[0-9a-f]{64}$"),
                name="cards_verdictrevision_sha256_hex",
            ),
        ]

    def __str__(self) -> str:
        return f"verdict revision {self.seq}"


class ResponseReview(models.Model):
    """Marks a response's decomposition complete (or reopens it); the newest row counts."""

    response = models.ForeignKey(Response, models.PROTECT, related_name="reviews")
    complete = models.BooleanField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+"
    )
    annotator = models.CharField(max_length=200)
    origin = models.CharField(max_length=12, choices=Origin.choices)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=_author_matches_origin(),
                name="cards_responsereview_author_matches_origin",
            ),
        ]
        indexes = [
            # "Is this response's decomposition complete?": newest row (highest id) per response.
            models.Index(fields=["response", "-id"], name="cards_review_latest_idx"),
        ]

    def __str__(self) -> str:
        return "complete" if self.complete else "reopened"


class Assignment(models.Model):
    """A lead asks a reviewer to review one response (a case of a run)."""

    response = models.ForeignKey(Response, models.CASCADE, related_name="assignments")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.CASCADE, related_name="assignments"
    )
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["response", "reviewer"], name="cards_assignment_unique_reviewer"
            ),
        ]
        indexes = [
            # The queue: "my assignments", in run and case order.
            models.Index(fields=["reviewer", "response"], name="cards_assignment_queue_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer} on response {self.response_id}"


class Unblinding(models.Model):
    """A lead lets the reviewers of one case (or of a whole run) see each other's verdicts.

    Append-only: what a reviewer could see, and from when, decides which of their
    verdicts were blind (cards.blind), so an unblinding is never taken back.
    """

    run = models.ForeignKey(Run, models.PROTECT, related_name="unblindings")
    # Null: every case of the run.
    response = models.ForeignKey(
        Response, models.PROTECT, null=True, blank=True, related_name="unblindings"
    )
    author = models.ForeignKey(settings.AUTH_USER_MODEL, models.PROTECT, related_name="+")
    # Set by the service from the same clock as the verdicts' created_at, which it is
    # compared with; the database default is only a fallback.
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        indexes = [
            # "Since when may reviewers see others' verdicts on this run's cases?"
            models.Index(fields=["run", "response"], name="cards_unblinding_run_idx"),
        ]

    def __str__(self) -> str:
        return f"unblinded {self.response or self.run}"


class ClaimTally(models.Model):
    """What the default-source figures read of one claim, kept current by every write.

    Derived, not append-only: each claim and verdict write rewrites its claim's row under
    the claim lock it already holds, in its transaction (cards.services.tallies), so saves
    on different claims of one response never wait for each other. A response's figures
    are a GROUP BY over these rows (cards.metrics.stored_run_figures); a test recomputes
    every row from the revisions and compares (tests/cards/test_tallies.py).
    """

    claim = models.OneToOneField(Claim, models.CASCADE, primary_key=True, related_name="tally")
    # Its index (run, response) starts with this column: no index of its own to keep.
    run = models.ForeignKey(Run, models.CASCADE, related_name="+", db_index=False)
    response = models.ForeignKey(Response, models.CASCADE, related_name="+")
    current = models.BooleanField(help_text="The newest revision is not withdrawn.")
    kind = models.CharField(max_length=12, choices=ClaimKind.choices)
    # The default source's label (adjudicated, else newest review); "" while unreviewed.
    support = models.CharField(max_length=16, blank=True)
    # The chosen verdict's association, else the claim's default one (cards.rules).
    attached = models.BooleanField()
    diagnosis = models.CharField(max_length=40, blank=True)
    # Relevance labels of the chosen verdict on the claim's own citations: how many, and
    # how many `necessary` or `redundant` (citation precision).
    judged_citations = models.PositiveIntegerField(default=0)
    useful_citations = models.PositiveIntegerField(default=0)
    facts = models.JSONField(default=list)  # fact_ids of the newest revision
    gaps = models.JSONField(default=list)  # gap_ids of the newest revision
    # The claim's pre-check codes (cards.prechecks.claim_prechecks): they read its newest
    # revision and evidence that never changes after import.
    hints = models.JSONField(default=list)

    class Meta:
        indexes = [
            # A run's figures: its claim rows, grouped by response.
            models.Index(fields=["run", "response"], name="cards_claimtally_run_idx"),
        ]

    def __str__(self) -> str:
        return f"tally of claim {self.claim_id}"


class ResponseTally(models.Model):
    """What a response's figures need besides its claims: stored at import, `reviewed`
    kept current by every review mark. Retrieval never changes after import."""

    response = models.OneToOneField(
        Response, models.CASCADE, primary_key=True, related_name="tally"
    )
    # Its index (run, response) starts with this column: no index of its own to keep.
    run = models.ForeignKey(Run, models.CASCADE, related_name="+", db_index=False)
    reviewed = models.BooleanField()
    fact_ids = models.JSONField(default=list)  # required facts of the expectation
    gap_ids = models.JSONField(default=list)  # known gaps of the expectation
    # The response's retrieval figures, [[name, value], …] in order (jsonb loses key order).
    retrieval = models.JSONField(default=list)
    # Its response pre-checks but drift, [[code, details], …] in order, and the refs its
    # markers cite, in order: whether they drifted is asked when the figures are read, as
    # another snapshot of the project may arrive at any time.
    hints = models.JSONField(default=list)
    cited_refs = models.JSONField(default=list)

    class Meta:
        indexes = [
            # A run's figures, in response order.
            models.Index(fields=["run", "response"], name="cards_responsetally_run_idx"),
        ]

    def __str__(self) -> str:
        return f"tally of response {self.response_id}"


class RunTally(models.Model):
    """A run's retrieval totals, summed once at import (they never change after)."""

    run = models.OneToOneField(Run, models.CASCADE, primary_key=True, related_name="tally")
    retrieval = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"tally of run {self.run_id}"
