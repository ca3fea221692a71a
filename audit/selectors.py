"""Reads of the audit page."""

from __future__ import annotations

from cards.models import Origin, VerdictRevision
from evidence.models import Project


def project_annotators(*, project: Project) -> list[str]:
    """Everyone whose verdicts a package can show by name (`annotator:NAME`); adjudications are
    not an annotator's (metrics.md)."""
    return list(
        VerdictRevision.objects.filter(claim__response__run__project=project)
        .exclude(origin=Origin.ADJUDICATION)
        .order_by("annotator")
        .values_list("annotator", flat=True)
        .distinct()
    )
