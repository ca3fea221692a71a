"""The side-by-side comparison of two runs."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from cards.blind import require_unblinded
from cards.models import Diagnosis
from cards.run_state import roster_for
from cards.verdicts import Source
from compare.pages import compared_page, comparison_state
from compare.rows import metadata_rows
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from replay.models import Run


@require_GET
def run_compare(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    require_unblinded(membership)
    project = membership.project
    runs = list(
        Run.objects.filter(project=project)
        .select_related("snapshot", "project")
        .order_by("run_id")
    )
    by_id = {run.run_id: run for run in runs}
    run_b = by_id.get(request.GET.get("b", ""))
    run_a = by_id.get(request.GET.get("a", "")) or (
        by_id.get(run_b.baseline_run_id) if run_b is not None else None
    )
    context = {"project": project, "membership": membership, "runs": runs, "a": run_a, "b": run_b}
    if run_a is None or run_b is None:
        return render(request, "compare/compare.html", context)
    state = comparison_state(run_a=run_a, run_b=run_b)
    roster = roster_for(runs=[run_a, run_b], state=state)
    source = Source.parse(request.GET.get("source"), roster=roster)
    show = request.GET.get("show", "all")
    compared = compared_page(
        run_a=run_a, run_b=run_b, roster=roster, source=source, state=state, show=show,
        page_number=request.GET.get("page"),
    )  # fmt: skip
    context |= {
        "comparison": compared.summary,
        "source": source,
        "offer": compared.summary.offer,
        "show": show,
        "page": compared.page,
        "rows": compared.rows,
        "summary": compared.summary.band,
        "metadata": metadata_rows(run_a, run_b),
        "annotators": roster.names,
        "diagnoses": Diagnosis.choices,
        "figure_rows": compared.summary.figure_rows,
    }
    return render(request, "compare/compare.html", context)
