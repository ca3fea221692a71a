"""A reviewer's flow: My work, the next case in my queue (and the skip), Submit and next."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from cards.queue import work_page
from evidence.access import membership_for
from evidence.http import HtmxHttpRequest


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
