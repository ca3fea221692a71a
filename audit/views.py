"""The audit page: a lead downloads a package and sees every package id exported."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_GET

from audit.anchors import anchors_check
from audit.export import AuditExportError, export_stream
from audit.models import AuditExport
from audit.selectors import project_annotators
from audit.services import audit_package, audit_record
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from evidence.models import Role
from replay.models import Run

logger = logging.getLogger(__name__)


@require_GET
def audit_export(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(
        user=request.user, slug=slug, role=Role.LEAD, action=gettext_lazy("export audit packages")
    )
    project = membership.project
    runs = list(Run.objects.filter(project=project).order_by("run_id"))
    if request.GET.get("download"):
        compare = [request.GET.get("a"), request.GET.get("b")]
        try:
            package = audit_package(
                slug=slug,
                run_ids=request.GET.getlist("run") or None,
                compare=compare if all(compare) else None,
                source=request.GET.get("source"),
            )
            # Before the download starts: a refusal then comes back as a message, not a cut.
            anchors_check(package=package)
            package.anchors_checked = True
        except LookupError as exc:
            messages.error(request, str(exc))
            return redirect("audit_export", slug)
        except AuditExportError as exc:
            logger.warning("audit export of %s refused: %s", slug, exc)
            messages.error(request, gettext("Export refused: %(why)s") % {"why": exc})
            return redirect("audit_export", slug)
        return StreamingHttpResponse(
            _streamed(package, request.user),
            content_type="application/zip",
            headers={"Content-Disposition": f'attachment; filename="audit-{slug}.zip"'},
        )
    return render(
        request,
        "audit/audit.html",
        {
            "project": project,
            "membership": membership,
            "runs": runs,
            "annotators": project_annotators(project=project),
            "exports": AuditExport.objects.filter(project=project).select_related("exported_by")[
                :50
            ],
        },
    )


def _streamed(package, user):
    """Bytes as they are made: the browser shows the download's progress from the start.

    An integrity failure found mid-way cuts the stream: the zip then has no manifest,
    so it cannot pass verification, and no package id is recorded for it.
    """
    try:
        yield from export_stream(package)
    except AuditExportError:
        logger.exception("audit export of %s refused", package.project.slug)
        raise
    audit_record(package=package, user=user)
