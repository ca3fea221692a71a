"""The side-by-side comparison of two runs."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from cards.annotators import roster_of
from cards.blind import require_unblinded
from cards.metrics import Source
from cards.models import Diagnosis
from cards.oversight import imported_offer
from compare.comparison import compare_runs_cached
from compare.rows import filter_pairs, metadata_rows, pair_rows, summary_band
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from replay.models import Run

PAIRS_PER_PAGE = 20


@require_GET
def run_compare(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    require_unblinded(membership)
    project = membership.project
    runs = list(Run.objects.filter(project=project).select_related("snapshot").order_by("run_id"))
    by_id = {run.run_id: run for run in runs}
    run_b = by_id.get(request.GET.get("b", ""))
    run_a = by_id.get(request.GET.get("a", "")) or (
        by_id.get(run_b.baseline_run_id) if run_b is not None else None
    )
    context = {"project": project, "membership": membership, "runs": runs, "a": run_a, "b": run_b}
    if run_a is None or run_b is None:
        return render(request, "compare/compare.html", context)
    roster = roster_of(runs=[run_a, run_b])
    source = Source.parse(request.GET.get("source"), roster=roster)
    comparison = compare_runs_cached(run_a=run_a, run_b=run_b, source=source)
    shown = filter_pairs(comparison.pairs, request.GET.get("show", "all"))
    page = Paginator(shown, PAIRS_PER_PAGE).get_page(request.GET.get("page"))
    context |= {
        "comparison": comparison,
        "source": source,
        "offer": imported_offer(runs=[run_a, run_b], roster=roster, source=source),
        "show": request.GET.get("show", "all"),
        "page": page,
        "rows": [pair_rows(pair, source) for pair in page.object_list],
        "summary": summary_band(comparison),
        "metadata": metadata_rows(run_a, run_b),
        "annotators": roster.names,
        "diagnosis_codes": Diagnosis.values,
        "figure_rows": [
            (name, comparison.metrics_a["micro"][name], comparison.metrics_b["micro"][name], diff)
            for name, diff in comparison.difference().items()
        ],
    }
    return render(request, "compare/compare.html", context)
