"""The API's reads (docs/api.md): projects, runs, a run's figures and agreement, comparisons.

Each checks access as its page does (evidence.access, cards.blind), and serves the JSON
that the command of cli.md prints, built by the same function (cards.reports,
compare.reports).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import BadRequest
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from api.http import api_get, json_answer
from api.openapi import document
from api.params import source_of
from cards.blind import require_unblinded
from cards.progress import runs_for_project
from cards.reports import run_agreement_json, run_metrics_json
from compare.reports import comparison_json
from evidence.access import membership_for
from evidence.selectors import memberships_for_user
from replay.selectors import run_for_project


# Public: the document says what the API accepts, which the repository says anyway.
@login_not_required
@require_GET
def openapi(request: HttpRequest) -> JsonResponse:
    return json_answer(document())


@api_get
def projects(request: HttpRequest) -> JsonResponse:
    memberships = memberships_for_user(user=request.user)
    return json_answer(
        {
            "projects": [
                {"slug": m.project.slug, "name": m.project.name, "role": m.role}
                for m in memberships
            ]
        }
    )


@api_get
def runs(request: HttpRequest, slug: str) -> JsonResponse:
    """The project page's runs, newest import first."""
    project = membership_for(user=request.user, slug=slug).project
    return json_answer(
        {
            "project": project.slug,
            "runs": [
                {
                    "run_id": run.run_id,
                    "label": run.label,
                    "created_at": run.created_at.isoformat(),
                    "imported_at": run.imported_at.isoformat(),
                    "baseline_run_id": run.baseline_run_id or None,
                    "snapshot": run.snapshot.name,
                    "responses": run.response_count,
                    "reviewed": run.reviewed_count,
                    "claims": run.claim_count,
                }
                for run in runs_for_project(project=project)
            ],
        }
    )


@api_get
def run_metrics(request: HttpRequest, slug: str, run_id: str) -> JsonResponse:
    """`run_metrics RUN_ID [--annotator NAME | --consensus]`; the figures page's rules."""
    membership = membership_for(user=request.user, slug=slug)
    require_unblinded(membership)
    run = run_for_project(project=membership.project, run_id=run_id)
    annotator, consensus = source_of(request)
    return json_answer(run_metrics_json(run=run, annotator=annotator, consensus=consensus))


@api_get
def run_agreement(request: HttpRequest, slug: str, run_id: str) -> JsonResponse:
    """`run_agreement RUN_ID [--annotators A B …]`; the figures page's rules."""
    membership = membership_for(user=request.user, slug=slug)
    require_unblinded(membership)
    run = run_for_project(project=membership.project, run_id=run_id)
    annotators = [name for name in request.GET.getlist("annotators") if name]
    return json_answer(run_agreement_json(run=run, annotators=annotators))


@api_get
def compare(request: HttpRequest, slug: str) -> JsonResponse:
    """`compare_runs RUN_A RUN_B [--annotator NAME | --consensus]`; the compare page's rules."""
    membership = membership_for(user=request.user, slug=slug)
    require_unblinded(membership)
    run_ids = request.GET.get("a"), request.GET.get("b")
    if not all(run_ids):
        raise BadRequest("Name both runs: ?a=RUN_A&b=RUN_B (A before, B after).")
    run_a, run_b = (run_for_project(project=membership.project, run_id=r) for r in run_ids)
    annotator, consensus = source_of(request)
    return json_answer(
        comparison_json(run_a=run_a, run_b=run_b, annotator=annotator, consensus=consensus)
    )
