"""The tasks a worker runs (`manage.py db_worker`): one import, one export, each a job.

Thin, as commands are: each marks its job running, calls the app that does the work
with a progress callback, and records the outcome. A task that finds its job not
queued (swept, or run already) does nothing.
"""

from __future__ import annotations

import os
from typing import IO

from django.db import transaction
from django.tasks import task

from audit.export import AuditExportError, export_stream
from audit.services import audit_package, audit_record
from ingest.convert import Origins, converted_file, default_run_id
from ingest.forms import BUNDLE
from ingest.services import BundleInvalid, ImportSummary, bundle_import, limits_from_settings
from jobs.progress import Heartbeat, package_path, upload_path
from jobs.services import JobGivenUp, job_fail, job_finish, job_start


@task
def import_run(*, code: str) -> None:
    job = job_start(code=code)
    if job is None:
        return
    options = job.options
    path = upload_path(code)
    try:
        with Heartbeat(code) as heartbeat:

            def done_with_the_run(summary: ImportSummary) -> None:
                # In the import's transaction: the run and its job's "done" are stored
                # together, or, when the sweep gave the job up as "failed, nothing was
                # stored" (this worker was silent too long), neither is.
                heartbeat.counts.cases_stored = summary.responses
                if not job_finish(job=job, counts=heartbeat.counts, result=summary.as_dict()):
                    raise JobGivenUp(code)

            origins = None
            try:
                with path.open("rb") as stream:
                    bundle, origins = _converted(stream, options)
                    with bundle:
                        summary = bundle_import(
                            stream=bundle,
                            project_slug=job.project.slug,
                            user=job.requested_by,
                            source_name=options["source_name"],
                            dry_run=options["dry_run"],
                            new_expectation_versions=options["new_expectation_versions"],
                            progress=heartbeat.import_progress,
                            before_commit=done_with_the_run,
                        )
            except BundleInvalid as exc:
                # The user never saw a converted bundle: its lines are named by record.
                refused = exc if origins is None else origins.placed(exc)
                job_fail(job=job, counts=heartbeat.counts, errors=refused.lines())
                return
            except JobGivenUp:
                return  # rolled back; the job already says why
            except BaseException as exc:
                # SystemExit included: a worker told twice to stop ends the task here, and
                # the transaction is rolled back; the job must not stay "running".
                job_fail(job=job, counts=heartbeat.counts, errors=[_stopped(exc)])
                raise
            if summary.dry_run:  # rolled back by design: no transaction to finish in
                heartbeat.counts.cases_stored = 0
                job_finish(job=job, counts=heartbeat.counts, result=summary.as_dict())
    finally:
        path.unlink(missing_ok=True)


@task
def export_run(*, code: str) -> None:
    job = job_start(code=code)
    if job is None:
        return
    options = job.options
    target = package_path(code)
    partial = target.with_suffix(".partial")
    with Heartbeat(code) as heartbeat:
        try:
            package = audit_package(
                slug=job.project.slug,
                run_ids=options["runs"] or None,
                compare=options["compare"] or None,
                source=options["source"],
            )
            with partial.open("wb") as out:
                for _ in export_stream(package, _Counted(out, heartbeat)):
                    pass
            result = {"package_id": package.package_id, "runs": [r.run_id for r in package.runs]}
            # The job's "done", the package's record and anchor, and the file under its name
            # together: when the sweep gave the job up meanwhile ("failed", its worker silent
            # too long), none of them. On PostgreSQL the update locks the job's row, so a
            # sweep arriving now waits and then finds the job done.
            with transaction.atomic():
                if not job_finish(
                    job=job, counts=heartbeat.counts, result=result, file_name=target.name
                ):
                    raise JobGivenUp(code)
                audit_record(package=package, user=job.requested_by)
                os.replace(partial, target)
        except JobGivenUp:
            partial.unlink(missing_ok=True)
            return  # the job already says why
        except (LookupError, AuditExportError) as exc:
            partial.unlink(missing_ok=True)
            job_fail(job=job, counts=heartbeat.counts, errors=[f"Export refused: {exc}"])
            return
        except BaseException as exc:
            partial.unlink(missing_ok=True)
            target.unlink(missing_ok=True)  # renamed, then its COMMIT failed: not done
            job_fail(job=job, counts=heartbeat.counts, errors=[_stopped(exc)])
            raise


class _Counted:
    """A package file that tells the heartbeat how many bytes reached it."""

    def __init__(self, out: IO[bytes], heartbeat: Heartbeat):
        self.out = out
        self.heartbeat = heartbeat

    def write(self, data: bytes) -> int:
        self.heartbeat.wrote(len(data))
        return self.out.write(data)

    def flush(self) -> None:
        self.out.flush()


def _converted(stream: IO[bytes], options: dict) -> tuple[IO[bytes], Origins | None]:
    """The uploaded file as a bundle: as it is, or converted from another format (its
    problems are `ConversionInvalid`, a `BundleInvalid`, naming the file's own records),
    with where each converted line came from."""
    fmt = options.get("source_format", BUNDLE)
    if fmt == BUNDLE:
        return stream, None
    run_id = options.get("run_id") or default_run_id(options["source_name"], fmt)
    return converted_file(
        fmt=fmt,
        source=stream,
        run_id=run_id,
        snapshot=options.get("snapshot", ""),  # absent from jobs queued before it was asked
        limits=limits_from_settings(),
    )


def _stopped(exc: BaseException) -> str:
    if isinstance(exc, SystemExit | KeyboardInterrupt):
        return "The worker was stopped during this job; nothing was stored. Start it again."
    return f"The job failed ({type(exc).__name__}: {exc}); nothing was stored."
