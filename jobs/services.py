"""Queuing imports and exports as jobs, and recording how each one went."""

from __future__ import annotations

import os
import shutil
import socket
import time
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import OperationalError, transaction
from django.tasks import TaskResultStatus
from django.utils import timezone
from django.utils.translation import gettext_lazy
from django_tasks_db.models import DBTaskResult

from audit.services import audit_package
from evidence.logs import request_id
from evidence.models import Project
from jobs.models import Job
from jobs.progress import Counts, package_path, progress_path, read_progress, upload_path

State = Job.State

# On SQLite a running import holds the only write lock until it ends: a job queued meanwhile
# waits busy_timeout (5 s) and is refused. (On PostgreSQL: the database is down.) The pages
# and the API say this when queuing raises OperationalError.
BUSY = gettext_lazy(
    "The database did not take the job (busy with another import, or unreachable): "
    "nothing was queued. Try again in a moment."
)


def import_queue(
    *,
    project: Project,
    user: AbstractBaseUser | None,
    upload: UploadedFile,
    dry_run: bool = False,
    new_expectation_versions: bool = False,
    source_format: str = "bundle",
    run_id: str = "",
    snapshot: str = "",
) -> Job:
    """Keep the uploaded bundle under JOBS_DIR and queue its import; the job as it is now.

    A file of another format (`ingest.convert.FORMATS`: Ragas, ALCE, jsonl-simple) is kept
    as it came and converted by the task, so its problems name its own records; `run_id`
    names the converted run (default: from the file's name), `snapshot` its collection
    snapshot (default: the format's name). A bundle names both itself.

    The file is copied before the job exists, so a worker never sees a job without
    its bundle; the job and its task are written in one transaction, so a queued job
    is never lost between the two. (With the immediate backend of the tests, the job
    has run when this returns.)
    """
    from jobs.tasks import import_run  # the tasks call these services

    job = Job(
        kind=Job.Kind.IMPORT,
        project=project,
        requested_by=_user(user),
        size_bytes=upload.size,
        options={
            "source_name": upload.name or "",
            "dry_run": dry_run,
            "new_expectation_versions": new_expectation_versions,
            "source_format": source_format,
            "run_id": run_id,
            "snapshot": snapshot,
            "request_id": request_id.get(),
        },
    )
    target = upload_path(str(job.code))
    upload.seek(0)
    with target.open("wb") as out:
        shutil.copyfileobj(upload, out, 1024 * 1024)
    try:
        with transaction.atomic():
            job.save()
            queued = import_run.enqueue(code=str(job.code))
            Job.objects.filter(pk=job.pk).update(task_id=queued.id)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    job.refresh_from_db()
    return job


def export_queue(
    *,
    project: Project,
    user: AbstractBaseUser | None,
    run_ids: list[str] | None = None,
    compare: list[str] | None = None,
    source: str | None = None,
) -> Job:
    """Queue an audit export; LookupError names a run that does not exist, before queuing."""
    from jobs.tasks import export_run

    audit_package(slug=project.slug, run_ids=run_ids, compare=compare, source=source)
    with transaction.atomic():
        job = Job.objects.create(
            kind=Job.Kind.EXPORT,
            project=project,
            requested_by=_user(user),
            options={
                "runs": run_ids or [],
                "compare": compare or [],
                "source": source,
                "request_id": request_id.get(),
            },
        )
        queued = export_run.enqueue(code=str(job.code))
        Job.objects.filter(pk=job.pk).update(task_id=queued.id)
    job.refresh_from_db()
    return job


class JobGivenUp(Exception):
    """The sweep failed this job while its worker still ran: the worker must store nothing."""


def job_start(*, code: str) -> Job | None:
    """Mark a queued job running in this process; None when it is not queued any more."""
    started = Job.objects.filter(code=code, state=State.QUEUED).update(
        state=State.RUNNING,
        started_at=timezone.now(),
        worker=f"{socket.gethostname()}:{os.getpid()}"[:100],
    )
    if not started:
        return None
    return Job.objects.select_related("project", "requested_by").get(code=code)


def job_finish(*, job: Job, counts: Counts, result: dict[str, Any], file_name: str = "") -> bool:
    """Done, with what it made; False when the sweep had already given the job up.

    Called inside the transaction that stores the job's work (an import's), the update
    is the check and the lock at once: it finds the row still running and owned by this
    worker, or it returns False and the caller rolls its work back (`JobGivenUp`). On
    PostgreSQL a sweep arriving meanwhile waits for the row and then finds it done.
    """
    return _end(job, State.DONE, counts, result=result, file_name=file_name)


def job_fail(*, job: Job, counts: Counts, errors: list[str]) -> bool:
    """Failed, with why (an import's `line N:` problems); nothing was stored."""
    return _end(job, State.FAILED, counts, errors=errors)


def _end(job: Job, state: str, counts: Counts, **fields: Any) -> bool:
    # The worker too: only the attempt that started the job may end it.
    ended = Job.objects.filter(pk=job.pk, state=State.RUNNING, worker=job.worker).update(
        state=state,
        finished_at=timezone.now(),
        bytes_read=counts.bytes_read,
        lines_read=counts.lines_read,
        cases_stored=counts.cases_stored if state == State.DONE else 0,
        **fields,
    )
    return bool(ended)


def jobs_sweep(*, project: Project | None = None) -> int:
    """Fail the running jobs whose worker stopped beating (killed, or its machine gone).

    Their transaction died with the worker's connection, so nothing of them is stored;
    what the worker left is cleared: its upload, counters and half-written package in
    JOBS_DIR, and django-tasks-db's row of its task, ended as failed (`WorkerLost`).
    A job is given up once it has not beaten for JOB_STALE_SECONDS (many heartbeats).
    Only reads until it finds one: on SQLite an import elsewhere may hold the write lock,
    and then the sweep waits for another time.
    """
    running = Job.objects.filter(state=State.RUNNING)
    if project is not None:
        running = running.filter(project=project)
    cutoff = time.time() - settings.JOB_STALE_SECONDS
    stale = []
    for job in running.only("code", "started_at", "task_id"):
        progress = read_progress(str(job.code))
        beat = progress[1] if progress else job.started_at.timestamp()
        if beat < cutoff:
            stale.append(job)
    swept = 0
    for job in stale:
        seen = timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS)
        why = (
            "The worker stopped during this job (no heartbeat since before "
            f"{seen:%Y-%m-%d %H:%M:%S} UTC); nothing was stored. Start it again."
        )
        try:
            with transaction.atomic():
                ended = Job.objects.filter(pk=job.pk, state=State.RUNNING).update(
                    state=State.FAILED, finished_at=timezone.now(), cases_stored=0, errors=[why]
                )
                if ended:
                    _task_given_up(job.task_id, why)
        except OperationalError:
            return swept  # SQLite: another import holds the write lock; next time
        swept += ended
        # What a killed worker leaves in JOBS_DIR: the upload, the counters, half a package.
        upload_path(str(job.code)).unlink(missing_ok=True)
        progress_path(str(job.code)).unlink(missing_ok=True)
        package_path(str(job.code)).with_suffix(".partial").unlink(missing_ok=True)
    return swept


class WorkerLost(Exception):
    """What a swept job's task row failed of (`exception_class_path`): its worker died."""


def _task_given_up(task_id: str, why: str) -> None:
    """End django-tasks-db's row of a swept job's task as failed: a worker killed mid-task
    leaves it RUNNING forever, and the queue is watched through that table (docs/deploy.md).
    Only a row still running: a worker that ended it has the last word."""
    try:
        pk = uuid.UUID(task_id)
    except ValueError:
        return  # another backend's id (the tests' immediate one): no row of ours
    DBTaskResult.objects.filter(pk=pk, status=TaskResultStatus.RUNNING).update(
        status=TaskResultStatus.FAILED,
        finished_at=timezone.now(),
        exception_class_path=f"{WorkerLost.__module__}.{WorkerLost.__qualname__}",
        traceback=f"{WorkerLost.__qualname__}: {why}\n",
        return_value=None,
    )


def _user(user: AbstractBaseUser | None) -> AbstractBaseUser | None:
    return user if user is not None and user.pk else None
