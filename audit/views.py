"""The audit page: a lead chooses what a package holds and sees every package id exported.

The package itself is made by a job (jobs/, above this app): the form posts there.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET

from audit.models import AuditExport
from audit.selectors import project_annotators
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from evidence.models import Role
from replay.models import Run


@require_GET
def audit_export(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(
        user=request.user, slug=slug, role=Role.LEAD, action=gettext_lazy("export audit packages")
    )
    project = membership.project
    return render(
        request,
        "audit/audit.html",
        {
            "project": project,
            "membership": membership,
            "runs": Run.objects.filter(project=project).order_by("run_id"),
            "annotators": project_annotators(project=project),
            "exports": AuditExport.objects.filter(project=project).select_related("exported_by")[
                :50
            ],
        },
    )
