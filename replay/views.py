"""Pages of the replay app: a run and one of its cases."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evidence.http import HtmxHttpRequest
from evidence.selectors import membership_for
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
