"""The upload page: a lead imports a bundle from the browser."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from evidence.models import Role
from ingest.convert import converted_file, default_run_id
from ingest.forms import BUNDLE, BundleUploadForm
from ingest.services import BundleInvalid, bundle_import, limits_from_settings


@require_http_methods(["GET", "POST"])
def bundle_upload(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(
        user=request.user, slug=slug, role=Role.LEAD, action=gettext_lazy("import runs")
    )
    project = membership.project
    posted = request.method == "POST"  # bound even when the upload was cut off
    form = BundleUploadForm(
        request.POST if posted else None,
        request.FILES if posted else None,
        refused=getattr(request, "upload_refused", ""),
    )
    problems: list[str] = []
    summary = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            upload = form.cleaned_data["bundle"]
            fmt = form.cleaned_data["source_format"]
            try:
                stream = upload.file
                if fmt != BUNDLE:  # converted first; its problems name the file's records
                    stream = converted_file(
                        fmt=fmt,
                        source=upload.file,
                        run_id=form.cleaned_data["run_id"] or default_run_id(upload.name, fmt),
                        limits=limits_from_settings(),
                    )
                summary = bundle_import(
                    stream=stream,
                    project_slug=project.slug,
                    user=request.user,
                    source_name=upload.name,
                    dry_run=form.cleaned_data["dry_run"],
                    new_expectation_versions=form.cleaned_data["new_expectation_version"],
                )
            except BundleInvalid as exc:
                problems = exc.lines()
                status = 400
            else:
                if not summary.dry_run:
                    messages.success(
                        request,
                        gettext(
                            "Imported run %(run)s: %(responses)s responses, %(claims)s claims."
                        )
                        % {
                            "run": summary.run_id,
                            "responses": summary.responses,
                            "claims": summary.claims,
                        },
                    )
                    url = f"/p/{project.slug}/runs/{summary.run_id}/"
                    if request.htmx:
                        return HttpResponseClientRedirect(url)
                    return redirect(url)
        else:
            status = 400
    context = {
        "project": project,
        "membership": membership,
        "form": form,
        "problems": problems,
        "summary": summary,
    }
    template = "ingest/upload.html#result" if request.htmx else "ingest/upload.html"
    return render(request, template, context, status=status)
