"""The floor pages of the review benchmark, and the URLconf that mounts them.

What any page of the app costs at least: the same middleware (sessions, login
required, CSRF, CSP, messages, htmx), three simple queries and a response of a
chosen size made of autoescaped passage text rendered by the template engine.
The review page is compared with `floor_page` and the verdict save with
`floor_save` (the same three queries, the middle one locking the claim, the
last one an INSERT, committed) in the same run, on the same server.
"""

from __future__ import annotations

import json

from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from cards.models import Claim
from config.urls import urlpatterns as project_urlpatterns
from evidence.models import Membership, Passage
from replay.models import Run

FLOOR = engines["django"].from_string(
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{{ run.run_id }}'
    '</title></head>\n<body hx-headers=\'{"X-CSRFToken": "{{ csrf_token }}"}\'>'
    "<main><h1>{{ project.name }}</h1>\n<ol>{% for text in texts %}<li><blockquote>{{ text }}"
    "</blockquote></li>\n{% endfor %}</ol></main></body></html>\n"
)


@require_GET
def floor_page(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    """Three queries, then about `?bytes=` bytes (default 50,000) of passage text."""
    membership = Membership.objects.select_related("project").get(
        user=request.user, project__slug=slug
    )
    run = Run.objects.get(project=membership.project, run_id=run_id)
    texts = list(
        Passage.objects.filter(snapshot_id=run.snapshot_id)
        .order_by("ref")
        .values_list("text", flat=True)
    )
    context = {"project": membership.project, "run": run, "texts": _fill(texts, request)}
    return HttpResponse(FLOOR.render(context, request))


@require_POST
def floor_save(request: HttpRequest, slug: str, run_id: str, key: str) -> HttpResponse:
    """Three queries (the claim locked, a row inserted, committed), then `?bytes=` of text."""
    membership = Membership.objects.select_related("project").get(
        user=request.user, project__slug=slug
    )
    with transaction.atomic():
        claim_id = (
            Claim.objects.select_for_update(of=("self",))
            .filter(response__run__project=membership.project, response__run__run_id=run_id)
            .values_list("pk", flat=True)
            .get(key=key)
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO bench_floor_write (claim_id, author_id, body) VALUES (%s, %s, %s)",
                [claim_id, request.user.pk, request.POST.get("reason", "")],
            )
    texts = [request.POST.get("reason", "") * 20 or "-"]
    context = {"project": membership.project, "run": None, "texts": _fill(texts, request)}
    response = HttpResponse(FLOOR.render(context, request))
    response["HX-Trigger"] = json.dumps({"verdict-saved": {"key": key}})
    return response


def _fill(texts: list[str], request: HttpRequest) -> list[str]:
    """The texts repeated up to about `?bytes=` (default 50,000); the last one cut to fit."""
    wanted = int(request.GET.get("bytes", "50000"))
    chosen: list[str] = []
    size = 0
    while texts and size < wanted:
        for text in texts:
            piece = text[: wanted - size]
            chosen.append(piece)
            size += len(piece) + 32  # the markup around each text
            if size >= wanted:
                break
    return chosen


urlpatterns = [
    path("bench/floor/<slug:slug>/<str:run_id>/", floor_page, name="bench_floor"),
    path(
        "bench/floor/<slug:slug>/<str:run_id>/save/<str:key>/",
        floor_save,
        name="bench_floor_save",
    ),
    *project_urlpatterns,
]
