"""A reviewer's flow: My work, the next case in my queue (and the skip), Submit and next."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from cards.queue import WorkItem, next_in_queue, work_page
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest
from evidence.models import Membership
from replay.models import Response


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
        messages.info(request, "No other case waits in your queue: this is the last one.")
    return redirect(_case_url(slug, item))
