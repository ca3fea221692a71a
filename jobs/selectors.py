"""Reads of jobs: one job as its page shows it, a project's recent jobs."""

from __future__ import annotations

from django.http import Http404

from evidence.models import Project
from jobs.models import Job
from jobs.progress import read_progress


def job_for(*, project: Project, code: str) -> Job:
    """The project's job `code`, with its live counters while it runs; 404 if none."""
    job = Job.objects.filter(project=project, code=code).select_related("requested_by").first()
    if job is None:
        raise Http404("No such job.")
    return with_progress(job)


def project_jobs(*, project: Project, kind: str | None = None, limit: int = 20) -> list[Job]:
    """The project's newest jobs (of one kind), with live counters for those running."""
    jobs = Job.objects.filter(project=project).select_related("requested_by")
    if kind is not None:
        jobs = jobs.filter(kind=kind)
    return [with_progress(job) for job in jobs[:limit]]


def with_progress(job: Job) -> Job:
    """The counters the worker last wrote, while the row holds those of the start."""
    if job.state == Job.State.RUNNING and (progress := read_progress(str(job.code))):
        counts, _ = progress
        job.bytes_read = counts.bytes_read
        job.lines_read = counts.lines_read
        job.cases_stored = counts.cases_stored
    return job
