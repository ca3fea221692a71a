"""A lead's background work: the upload page, the audit export's POST, each job's page."""

from __future__ import annotations

from django.contrib import messages
from django.db import OperationalError
from django.http import FileResponse, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from evidence.models import Membership, Role
from ingest.forms import BundleUploadForm
from jobs.models import Job
from jobs.selectors import job_for, job_package, package_name, project_jobs
from jobs.services import BUSY, export_queue, import_queue, jobs_sweep


def _lead(request: HtmxHttpRequest, slug: str, action: str) -> Membership:
    return membership_for(user=request.user, slug=slug, role=Role.LEAD, action=action)


@require_http_methods(["GET", "POST"])
def bundle_upload(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = _lead(request, slug, gettext_lazy("import runs"))
    project = membership.project
    posted = request.method == "POST"  # bound even when the upload was cut off
    form = BundleUploadForm(
        request.POST if posted else None,
        request.FILES if posted else None,
        refused=getattr(request, "upload_refused", ""),
    )
    job = None
    problem = ""
    status = 200
    if posted:
        if form.is_valid():
            try:
                job = import_queue(
                    project=project,
                    user=request.user,
                    upload=form.cleaned_data["bundle"],
                    dry_run=form.cleaned_data["dry_run"],
                    new_expectation_versions=form.cleaned_data["new_expectation_version"],
                    source_format=form.cleaned_data["source_format"],
                    run_id=form.cleaned_data["run_id"],
                    snapshot=form.cleaned_data["snapshot"],
                )
            except OperationalError:
                problem, status = BUSY, 503
            else:
                if not request.htmx:
                    return redirect("job_detail", project.slug, job.code)
        else:
            status = 400
    else:
        jobs_sweep(project=project)
    context = {
        "project": project,
        "membership": membership,
        "form": form,
        "job": job,
        "problem": problem,
        "jobs": project_jobs(project=project, kind=Job.Kind.IMPORT, limit=10),
    }
    template = "jobs/upload.html#result" if request.htmx else "jobs/upload.html"
    return render(request, template, context, status=status)


@require_POST
def export_start(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = _lead(request, slug, gettext_lazy("export audit packages")).project
    a, b = request.POST.get("a"), request.POST.get("b")
    try:
        job = export_queue(
            project=project,
            user=request.user,
            run_ids=request.POST.getlist("run") or None,
            compare=[a, b] if a and b else None,
            source=request.POST.get("source"),
        )
    except (LookupError, OperationalError) as exc:
        problem, status = (str(exc), 400) if isinstance(exc, LookupError) else (BUSY, 503)
        if request.htmx:
            return render(request, "jobs/job.html#refused", {"problem": problem}, status=status)
        messages.error(request, gettext("Export refused: %(why)s") % {"why": problem})
        return redirect("audit_export", slug)
    if request.htmx:
        return render(request, "jobs/job.html#status", {"project": project, "job": job})
    return redirect("job_detail", project.slug, job.code)


@require_GET
def job_detail(request: HtmxHttpRequest, slug: str, code: str) -> HttpResponse:
    project = _lead(request, slug, gettext_lazy("see imports and exports")).project
    jobs_sweep(project=project)
    context = {"project": project, "job": job_for(project=project, code=code)}
    template = "jobs/job.html#status" if request.htmx else "jobs/job.html"
    return render(request, template, context)


@require_GET
def job_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = _lead(request, slug, gettext_lazy("see imports and exports")).project
    jobs_sweep(project=project)
    return render(
        request,
        "jobs/list.html",
        {"project": project, "jobs": project_jobs(project=project, limit=50)},
    )


@require_GET
def job_download(request: HtmxHttpRequest, slug: str, code: str) -> HttpResponse:
    project = _lead(request, slug, gettext_lazy("export audit packages")).project
    job, path = job_package(project=project, code=code)
    return FileResponse(
        path.open("rb"),
        as_attachment=True,
        filename=package_name(job),
        content_type="application/zip",
    )
