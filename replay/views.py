"""Pages of the replay app: a run and one of its cases."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from cards.agreement import annotators_of
from cards.metrics import Source
from cards.models import Diagnosis
from cards.views import BLIND_FIGURES, blind_for
from evidence.http import HtmxHttpRequest
from evidence.selectors import membership_for
from evidence.views import forbidden
from replay.audit.export import AuditExportError, export_stream
from replay.audit.services import audit_package, audit_record
from replay.compare_view import (
    filter_pairs,
    metadata_rows,
    pair_rows,
    summary_band,
)
from replay.comparison import compare_runs_cached
from replay.drift import drifted_refs
from replay.models import AuditExport, Run
from replay.selectors import responses_for_run, run_for_project


@require_GET
def run_detail(request: HtmxHttpRequest, slug: str, run_id: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    run = run_for_project(project=membership.project, run_id=run_id)
    responses = list(responses_for_run(run=run))
    return render(
        request,
        "replay/run.html",
        {
            "project": membership.project,
            "membership": membership,
            "run": run,
            "responses": responses,
        },
    )


logger = logging.getLogger(__name__)
PAIRS_PER_PAGE = 20


@require_GET
def run_compare(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    project = membership.project
    if blind_for(membership):
        raise PermissionDenied(BLIND_FIGURES)
    runs = list(Run.objects.filter(project=project).select_related("snapshot").order_by("run_id"))
    by_id = {run.run_id: run for run in runs}
    run_b = by_id.get(request.GET.get("b", ""))
    run_a = by_id.get(request.GET.get("a", "")) or (
        by_id.get(run_b.baseline_run_id) if run_b is not None else None
    )
    context = {"project": project, "membership": membership, "runs": runs, "a": run_a, "b": run_b}
    if run_a is None or run_b is None:
        return render(request, "replay/compare.html", context)
    source = Source.parse(request.GET.get("source"))
    comparison = compare_runs_cached(run_a=run_a, run_b=run_b, source=source)
    shown = filter_pairs(comparison.pairs, request.GET.get("show", "all"))
    page = Paginator(shown, PAIRS_PER_PAGE).get_page(request.GET.get("page"))
    context |= {
        "comparison": comparison,
        "source": source,
        "show": request.GET.get("show", "all"),
        "page": page,
        "rows": [pair_rows(pair, source) for pair in page.object_list],
        "summary": summary_band(comparison),
        "metadata": metadata_rows(run_a, run_b),
        "annotators": annotators_of(run=run_a),
        "diagnosis_codes": Diagnosis.values,
        "figure_rows": [
            (name, comparison.metrics_a["micro"][name], comparison.metrics_b["micro"][name], diff)
            for name, diff in comparison.difference().items()
        ],
    }
    return render(request, "replay/compare.html", context)


@require_GET
def project_drift(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    return render(
        request,
        "replay/drift.html",
        {
            "project": membership.project,
            "membership": membership,
            "refs": drifted_refs(project=membership.project),
        },
    )


@require_GET
def audit_export(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    project = membership.project
    if not membership.can_lead:
        return forbidden(request, project, "export audit packages")
    runs = list(Run.objects.filter(project=project).order_by("run_id"))
    if request.GET.get("download"):
        compare = [request.GET.get("a"), request.GET.get("b")]
        try:
            package = audit_package(
                slug=slug,
                run_ids=request.GET.getlist("run") or None,
                compare=compare if all(compare) else None,
            )
        except LookupError as exc:
            messages.error(request, str(exc))
            return redirect("audit_export", slug)
        return StreamingHttpResponse(
            _streamed(package, request.user),
            content_type="application/zip",
            headers={"Content-Disposition": f'attachment; filename="audit-{slug}.zip"'},
        )
    return render(
        request,
        "replay/audit.html",
        {
            "project": project,
            "membership": membership,
            "runs": runs,
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
