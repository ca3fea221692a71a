"""Reads of jobs: one job as its page shows it, a project's recent jobs, an export's file."""

from __future__ import annotations

from pathlib import Path

from django.http import Http404

from evidence.models import Project
from jobs.models import Job
from jobs.progress import package_path, read_progress


def job_for(*, project: Project, code: str) -> Job:
    """The project's job `code`, with its live counters while it runs; 404 if none."""
    job = Job.objects.filter(project=project, code=code).select_related("requested_by").first()
    if job is None:
        raise Http404("No such job.")
    job.project = project  # the caller's, already read: no query for it
    return with_progress(job)


def job_package(*, project: Project, code: str) -> tuple[Job, Path]:
    """The project's export `code` and its package file; 404 until the package is written
    (an import, an export queued, running or failed, a file removed since)."""
    job = job_for(project=project, code=code)
    if job.kind != Job.Kind.EXPORT or job.state != Job.State.DONE:
        raise Http404("This job made no package (yet).")
    path = package_path(str(job.code))
    if not path.exists():
        raise Http404("The package file is gone.")
    return job, path


def package_name(job: Job) -> str:
    """The name a downloaded package is saved under: its project and package id."""
    return f"audit-{job.project.slug}-{job.result['package_id'][:12]}.zip"


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
