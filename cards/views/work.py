"""A reviewer's flow: My work, the next case in my queue (and the skip), Submit and next."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from cards.queue import WorkItem, case_response, next_in_queue, work_page
from cards.services.reviews import response_submit
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from evidence.models import Membership
from replay.models import Response
from replay.selectors import run_for_project


@require_GET
def my_work(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    membership = membership_for(user=request.user, slug=slug)
    work = work_page(
        membership=membership,
        run_id=request.GET.get("run") or None,
        status=request.GET.get("status") or None,
        page=request.GET.get("page"),
    )
    return render(
        request,
        "cards/work.html",
        {"project": membership.project, "membership": membership, "work": work},
    )


def queue_url(slug: str, after: Response | None = None) -> str:
    """The queue link; from a case it carries that case, so the next one is after it (a skip)."""
    url = reverse("queue_next", args=[slug])
    if after is None:
        return url
    return f"{url}?{urlencode({'run': after.run.run_id, 'case': after.case.case_id})}"


def _case_url(slug: str, item: WorkItem) -> str:
    return reverse("case_detail", args=[slug, item.run_id, item.case_id])


def _after(membership: Membership, params: QueryDict) -> Response | None:
    """The case the reviewer comes from (?run=…&case=…), if it is one of the project's."""
    run_id, case_id = params.get("run"), params.get("case")
    if not run_id or not case_id:
        return None
    return (
        Response.objects.select_related("run", "case")
        .filter(run__project=membership.project, run__run_id=run_id, case__case_id=case_id)
        .first()
    )


@require_GET
def queue_next(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Open my next case that is not done, after the one I come from: skipping marks nothing."""
    membership = membership_for(user=request.user, slug=slug)
    after = _after(membership, request.GET)
    item = next_in_queue(membership=membership, after=after)
    if item is None:
        return render(
            request,
            "cards/queue_empty.html",
            {"project": membership.project, "membership": membership},
        )
    if after is not None and item.response_id == after.pk:
        messages.info(request, gettext("No other case waits in your queue: this is the last one."))
    return redirect(_case_url(slug, item))


@require_POST
def case_submit(request: HtmxHttpRequest, slug: str, run_id: str, case_id: str) -> HttpResponse:
    """Submit and next: mark my work on this case complete, then open my next case."""
    membership = membership_for(user=request.user, slug=slug)
    run = run_for_project(project=membership.project, run_id=run_id)
    response = case_response(run=run, case_id=case_id)
    try:
        response_submit(response=response, author=request.user)
    except ValidationError as exc:
        refusal = "; ".join(exc.messages)
        if request.htmx:
            context = {"project": membership.project, "run": run, "response": response}
            context["submit_error"] = refusal
            return render(request, "cards/review.html#submit", context, status=400)
        messages.error(request, refusal)
        return redirect(reverse("case_detail", args=[slug, run_id, case_id]))
    messages.success(
        request, gettext("Case %(case)s of %(run)s submitted.") % {"case": case_id, "run": run_id}
    )
    item = next_in_queue(membership=membership, after=response)
    # An empty queue: the queue page says so (it finds nothing either).
    url = queue_url(slug, response) if item is None else _case_url(slug, item)
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
