"""A lead unblinds a case, or a whole run, of a project that reviews blind."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_POST

from cards.selectors import review_page
from cards.services.reviews import unblinding_create
from cards.views.lead import lead_run_action
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from evidence.models import Role
from replay.models import Run
from replay.selectors import run_for_project


@require_POST
def case_unblind(request: HtmxHttpRequest, slug: str, run_id: str, case_id: str) -> HttpResponse:
    membership = membership_for(
        user=request.user, slug=slug, role=Role.LEAD, action=gettext_lazy("unblind a case")
    )
    run = run_for_project(project=membership.project, run_id=run_id)
    response = run.responses.filter(case__case_id=case_id).first()
    if response is None:
        raise Http404("No such case in this run.")
    status = 200
    try:
        done = unblinding_create(run=run, lead=request.user, response=response)
    except ValidationError as exc:
        status = 400
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(
            request,
            gettext("%(case)s unblinded: its reviewers now see each other's verdicts.")
            % {"case": case_id}
            if done
            else gettext("%(case)s was already unblinded.") % {"case": case_id},
        )
    url = reverse("case_detail", args=[slug, run_id, case_id])
    if not request.htmx:
        return redirect(url)
    # The lead's own page does not change (a lead sees every verdict): only its status row.
    page = review_page(run=run, case_id=case_id, membership=membership, whole=[])
    context = {
        "project": membership.project, "run": run, "membership": membership, "page": page,
        "response": page.response, "partial_messages": True,
    }  # fmt: skip
    return render(request, "cards/review.html#status", context, status=status)


@require_POST
def run_unblind(request: HtmxHttpRequest, slug: str, run_id: str) -> HttpResponse:
    def unblind(run: Run) -> str:
        if unblinding_create(run=run, lead=request.user):
            return gettext(
                "%(run)s unblinded: the reviewers of every case now see each other's verdicts."
            ) % {"run": run_id}
        return gettext("%(run)s was already unblinded.") % {"run": run_id}

    return lead_run_action(
        request, slug, run_id, action=gettext_lazy("unblind a run"), act=unblind, then="run_detail"
    )
