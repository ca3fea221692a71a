"""Reads of the replay app: runs by project."""

from __future__ import annotations

from django.http import Http404

from evidence.models import Project
from replay.models import Run


def run_for_project(*, project: Project, run_id: str) -> Run:
    run = Run.objects.select_related("snapshot").filter(project=project, run_id=run_id).first()
    if run is None:
        raise Http404("No such run.")
    run.project = project  # already loaded by the caller's membership check
    return run
