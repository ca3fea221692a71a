"""The API's background work (docs/api.md): upload a bundle, ask for an audit package, follow
each job, download its package.

As on the pages (jobs.views): only a lead queues or follows a job, a reviewer gets 403 and
an outsider 404. A write answers 202 with the job as it is then and its URL in `Location`;
a pipeline polls that URL until `state` is `done` or `failed`.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import BadRequest
from django.db import OperationalError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse

from api.http import ApiError, api_get, api_post, body_upload, json_answer
from api.params import flag_of, run_id_of, source_label
from evidence.access import membership_for
from evidence.models import Project, Role
from ingest.convert import SNAPSHOT_CHARS, snapshot_name
from ingest.forms import BUNDLE, FORMAT_CHOICES
from jobs.models import Job
from jobs.selectors import job_for, job_package, package_name
from jobs.services import BUSY, export_queue, import_queue, jobs_sweep

FORMATS = [value for value, _label in FORMAT_CHOICES]
# The body's type, and the name the run records as its source (a body has no file name).
# Either may hold either: the import reads gzip by its first bytes, as the upload page does.
BODY_NAMES = {
    "application/x-ndjson": "api-upload.jsonl",
    "application/gzip": "api-upload.jsonl.gz",
}
UNSUPPORTED = (
    "Send the bundle as the request's body with Content-Type: application/x-ndjson "
    "(JSON Lines) or application/gzip (gzip-compressed JSON Lines)."
)


def _lead(request: HttpRequest, slug: str, action: str) -> Project:
    return membership_for(user=request.user, slug=slug, role=Role.LEAD, action=action).project


@api_post
def imports(request: HttpRequest, slug: str) -> JsonResponse:
    """The upload page as one request: the body is the file, the check boxes are parameters."""
    project = _lead(request, slug, "import runs")
    source_format = request.GET.get("format", BUNDLE)
    if source_format not in FORMATS:
        raise BadRequest(f"format is one of {', '.join(FORMATS)}.")
    run_id = request.GET.get("run_id")
    try:
        snapshot = snapshot_name(request.GET.get("snapshot", ""))
    except ValueError:
        raise BadRequest(
            f"snapshot holds at most {SNAPSHOT_CHARS} characters, none a control character."
        ) from None
    options = {
        "dry_run": flag_of(request, "dry_run"),
        "new_expectation_versions": flag_of(request, "new_expectation_versions"),
        "source_format": source_format,
        "run_id": "" if run_id is None else run_id_of(run_id, "run_id"),
        "snapshot": snapshot,
    }
    name = BODY_NAMES.get(request.content_type or "")
    if name is None:
        raise ApiError(415, UNSUPPORTED)
    upload = body_upload(request, name=name, limit=settings.BUNDLE_UPLOAD_MAX_BYTES)
    try:
        job = import_queue(project=project, user=request.user, upload=upload, **options)
    except OperationalError:
        raise ApiError(503, str(BUSY)) from None
    finally:
        upload.close()  # import_queue kept its own copy under JOBS_DIR
    return _queued(job)


@api_post
def audit_packages(request: HttpRequest, slug: str) -> JsonResponse:
    """`export_audit` as a job: `runs` (default: every run), `compare` A then B, `source`."""
    project = _lead(request, slug, "export audit packages")
    runs = [run_id_of(r, "runs") for r in request.GET.getlist("runs")]
    compare = [run_id_of(r, "compare") for r in request.GET.getlist("compare")]
    if compare and len(compare) != 2:
        raise BadRequest(
            "compare names two runs: compare=RUN_A&compare=RUN_B (A before, B after)."
        )
    try:
        job = export_queue(
            project=project,
            user=request.user,
            run_ids=runs or None,
            compare=compare or None,
            source=source_label(request),
        )
    except LookupError as exc:
        raise Http404(f"No such run: {exc}.") from None
    except OperationalError:
        raise ApiError(503, str(BUSY)) from None
    return _queued(job)


@api_get
def job_status(request: HttpRequest, slug: str, code: str) -> JsonResponse:
    project = _lead(request, slug, "see imports and exports")
    jobs_sweep(project=project)  # a job whose worker died reads as failed, as on its page
    return json_answer(job_json(job_for(project=project, code=code)))


@api_get
def job_download(request: HttpRequest, slug: str, code: str) -> HttpResponse:
    """The export's package, the bytes `export_audit` writes for the same choice; 404 until
    the job is done."""
    project = _lead(request, slug, "export audit packages")
    job, path = job_package(project=project, code=code)
    download = FileResponse(path.open("rb"), as_attachment=True, filename=package_name(job))
    download["Content-Type"] = "application/zip"
    return download


def _queued(job: Job) -> JsonResponse:
    answer = json_answer(job_json(job), status=202)
    answer["Location"] = _job_url(job)
    return answer


def job_json(job: Job) -> dict:
    """A job as the API shows it: what was asked, how far it got, what it made or why not."""
    slug, result = job.project.slug, job.result
    imported = job.kind == Job.Kind.IMPORT and job.state == Job.State.DONE
    exported = job.kind == Job.Kind.EXPORT and job.state == Job.State.DONE
    return {
        "code": str(job.code),
        "kind": job.kind,
        "state": job.state,
        "project": slug,
        "requested_by": job.requested_by.get_username() if job.requested_by else None,
        "options": job.options,
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "progress": {
            "size_bytes": job.size_bytes,
            "bytes_read": job.bytes_read,
            "lines_read": job.lines_read,
            "cases_stored": job.cases_stored,
            "percent": job.percent,
        },
        "errors": job.errors,
        "result": result,
        "links": {
            "self": _job_url(job),
            "page": reverse("job_detail", args=[slug, job.code]),
            "metrics": reverse("api_run_metrics", args=[slug, result["run_id"]])
            if imported and not result.get("dry_run")
            else None,
            "package": reverse("api_job_package", args=[slug, job.code]) if exported else None,
        },
    }


def _job_url(job: Job) -> str:
    return reverse("api_job", args=[job.project.slug, job.code])
