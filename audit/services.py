"""Choosing what an audit package holds, and recording each export's package id."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from audit.anchors import anchor_append
from audit.models import AuditExport
from audit.package import Package
from cards.annotators import roster_of
from cards.verdicts import Source
from evidence.models import Project
from replay.models import Run


def audit_package(
    *,
    slug: str,
    run_ids: list[str] | None = None,
    compare: list[str] | None = None,
    source: str | None = None,
) -> Package:
    """The runs asked for (every run by default), the compared pair, and the verdict source
    (a label as `Source.parse` reads it, names resolved among these runs' annotators);
    LookupError names a project or run that does not exist."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise LookupError(f"project {slug!r} does not exist")
    runs = Run.objects.filter(project=project).select_related("snapshot").order_by("run_id")
    by_id = {run.run_id: run for run in runs}
    wanted = list(dict.fromkeys(run_ids or by_id))
    for run_id in [*wanted, *(compare or [])]:
        if run_id not in by_id:
            raise LookupError(f"run {run_id!r} does not exist in project {slug!r}")
    pair = None
    if compare:
        pair = (by_id[compare[0]], by_id[compare[1]])
        wanted = list(dict.fromkeys([*wanted, *compare]))
    chosen = [by_id[r] for r in sorted(wanted)]
    return Package(
        project=project,
        runs=chosen,
        compare=pair,
        source=Source.parse(source, roster=roster_of(runs=chosen)),
    )


def audit_record(*, package: Package, user: AbstractBaseUser | None) -> AuditExport:
    """Keep the package id (the one thing that detects a package forged whole later) in the
    database, and its signed anchor outside it (audit.anchors)."""
    record = AuditExport.objects.create(
        project=package.project,
        package_id=package.package_id,
        runs=[run.run_id for run in package.runs],
        compare=[r.run_id for r in package.compare] if package.compare else [],
        exported_by=user if user is not None and user.pk else None,
    )
    anchor_append(package=package)
    return record
