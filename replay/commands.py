"""Helpers for management commands that name a run (cli.md's exit statuses)."""

from __future__ import annotations

from django.core.management.base import CommandError

from evidence.selectors import ProjectChoiceError, project_for_command
from replay.models import Run


def find_run(slug: str | None, run_id: str) -> Run:
    """`--project` (or the only project) and RUN_ID: usage errors exit 2, a missing run 1."""
    try:
        project = project_for_command(slug=slug)
    except ProjectChoiceError as exc:
        raise CommandError(str(exc), returncode=2) from None
    run = (
        Run.objects.filter(project=project, run_id=run_id)
        .select_related("project", "snapshot")
        .first()
    )
    if run is None:
        raise CommandError(f"run {run_id!r} does not exist in project {project.slug!r}")
    return run
