"""A run's figures: the dashboard, its agreement panel, and its CSV and JSON downloads."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from cards.agreement import agreement_for
from cards.blind import require_unblinded
from cards.dashboard import (
    WIDTH,
    case_rows,
    figures_csv,
    interval_rows,
    page_figures,
    precheck_counts,
    retrieval_table,
    sample_size_help,
    verdict_bar,
    verdict_counts,
)
from cards.metrics import Source, kept_run_metrics
from cards.oversight import imported_offer
from cards.run_state import kept, roster_for, runs_state
from cards.verdicts import LABELS
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from replay.selectors import run_for_project

CASES_PER_PAGE = 50


def _fraction(raw: str | None, default: float, low: float, high: float) -> float:
    try:
        value = float(raw) / 100 if raw else default
    except ValueError:
        return default
    return value if low <= value <= high else default


@require_GET
def run_figures(
    request: HtmxHttpRequest, slug: str, run_id: str, fmt: str = "html"
) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    require_unblinded(membership)
    run = run_for_project(project=membership.project, run_id=run_id)
    state = runs_state(runs=[run], scope="figures")
    roster = roster_for(runs=[run], state=state)
    source = Source.parse(request.GET.get("source"), roster=roster)
    if fmt == "html":
        figures = page_figures(run=run, source=source, state=state)
    else:
        figures = kept_run_metrics(run=run, source=source, state=state)
    if fmt == "json":
        response = JsonResponse(
            figures.as_json(), json_dumps_params={"ensure_ascii": False, "indent": 1}
        )
        response["Content-Disposition"] = f'attachment; filename="{run.run_id}-figures.json"'
        return response
    if fmt == "csv":
        response = HttpResponse(figures_csv(figures), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{run.run_id}-figures.csv"'
        return response
    annotators = roster.names
    # The agreement panel is its own URL, loaded after the page (it reads every verdict of
    # the run when its state is new); annotators chosen in a link to the page are kept.
    chosen = [a for a in request.GET.getlist("annotator") if a in annotators]
    agreement_url = reverse("run_agreement", args=[membership.project.slug, run.run_id])
    if chosen:
        agreement_url += "?" + urlencode([("annotator", name) for name in chosen])
    helper = sample_size_help(
        margin=_fraction(request.GET.get("margin"), 0.05, 0.005, 0.5),
        confidence=_fraction(request.GET.get("confidence"), 0.95, 0.5, 0.999),
        current_n=figures.totals["claims"],
    )
    context = {
        "project": membership.project,
        "membership": membership,
        "run": run,
        "figures": figures,
        "source": source,
        # Nobody here judged the run: say so, and offer the imported verdicts in one click.
        "offer": kept(
            state=state,
            part=f"offer:{source.key}",
            compute=lambda: imported_offer(
                runs=[run], roster=roster, source=source, upto=state.verdicts_upto
            ),
        ),
        "annotators": annotators,
        "agreement_url": agreement_url,
        "bar": verdict_bar(figures),
        "verdict_counts": verdict_counts(figures),
        "intervals": interval_rows(figures),
        "retrieval": retrieval_table(figures),
        # 10,000 cases make a page nobody reads: the per-case table is paginated.
        "cases": Paginator(case_rows(figures), CASES_PER_PAGE).get_page(request.GET.get("page")),
        "prechecks": precheck_counts(figures),
        "helper": helper,
        "width": WIDTH,
    }
    template = (
        "cards/figures.html#sample-size"
        if request.htmx and request.GET.get("helper")
        else "cards/figures.html"
    )
    return render(request, template, context)


@require_GET
def run_agreement(request: HtmxHttpRequest, slug: str, run_id: str) -> HttpResponse:
    """The figures page's agreement panel: the panel itself for HTMX, else a page of it."""
    membership = membership_for(user=request.user, slug=slug)
    require_unblinded(membership)
    run = run_for_project(project=membership.project, run_id=run_id)
    state = runs_state(runs=[run], scope="figures")
    roster = roster_for(runs=[run], state=state)
    annotators = roster.names
    chosen = [a for a in request.GET.getlist("annotator") if a in annotators]
    context = {
        "project": membership.project,
        "membership": membership,
        "run": run,
        "annotators": annotators,
        "agreement": agreement_for(run=run, annotators=chosen, roster=roster, state=state),
        "labels": LABELS,
    }
    template = "cards/agreement.html#agreement" if request.htmx else "cards/agreement.html"
    return render(request, template, context)
