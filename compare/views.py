"""The side-by-side comparison of two runs."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from cards.blind import require_unblinded
from cards.models import Diagnosis
from cards.run_state import roster_for
from cards.verdicts import Source
from compare.pages import compared_page, compared_summary, comparison_state
from compare.rows import metadata_rows
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from replay.models import Run


@require_GET
def run_compare(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The page: a page of pairs, with the summary when it is known (else loaded after)."""
    return _compare(request, slug, summary_now=False)


@require_GET
def run_compare_summary(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The summary of the page (the band, the figures of both runs, the offer of imported
    verdicts): the fragment for HTMX, else the page with it, compared now if need be."""
    return _compare(request, slug, summary_now=True)


def _compare(request: HtmxHttpRequest, slug: str, *, summary_now: bool) -> HttpResponse:
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
    if summary_now and request.htmx:
        summary = compared_summary(
            run_a=run_a, run_b=run_b, roster=roster, source=source, state=state
        )
        context |= _summary_context(summary, source)
        return render(request, "compare/compare.html#summary", context)
    compared = compared_page(
        run_a=run_a, run_b=run_b, roster=roster, source=source, state=state, show=show,
        page_number=request.GET.get("page"),
    )  # fmt: skip
    summary = compared.summary
    if summary is None and summary_now:
        summary = compared_summary(
            run_a=run_a, run_b=run_b, roster=roster, source=source, state=state
        )
    # The same choices (the runs, the source, the filter, the page): without JavaScript,
    # the link opens this page with its summary.
    choices = {"a": run_a.run_id, "b": run_b.run_id, "source": source.label} | {
        name: request.GET[name] for name in ("show", "page") if name in request.GET
    }
    context |= {
        "compared": True,
        "source": source,
        "show": show,
        "page": compared.page,
        "rows": compared.rows,
        "metadata": metadata_rows(run_a, run_b),
        "annotators": roster.names,
        "diagnoses": Diagnosis.choices,
        "summary_url": reverse("run_compare_summary", args=[project.slug])
        + f"?{urlencode(choices)}",
    }
    if summary is not None:
        context |= _summary_context(summary, source)
    return render(request, "compare/compare.html", context)


def _summary_context(summary, source: Source) -> dict:
    return {
        "comparison": summary,
        "source": source,
        "offer": summary.offer,
        "summary": summary.band,
        "figure_rows": summary.figure_rows,
    }
