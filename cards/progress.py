"""Review progress: when a response counts as reviewed, and the listings that show it."""

from __future__ import annotations

from django.db.models import IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from cards.models import Claim, ResponseReview
from evidence.models import Project
from replay.models import Citation, Response, Retrieval, Run


class SubqueryCount(Subquery):
    """COUNT(*) of a correlated queryset: joins across responses and claims would multiply rows."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) AS counted)"
    output_field = IntegerField()


def latest_review_complete() -> Coalesce:
    """The newest ResponseReview's `complete` for the outer response; False when never marked.

    Never marked must read as False, not NULL: NOT (NULL = true) would drop the row
    from "not reviewed yet" filters such as the queue.
    """
    newest = ResponseReview.objects.filter(response=OuterRef("pk")).order_by("-pk")
    return Coalesce(Subquery(newest.values("complete")[:1]), Value(False))


# `latest_review_complete` for reads written as SQL (the case page's), `{response}` the outer
# response's alias: the same newest mark, FALSE when never marked.
LATEST_REVIEW_COMPLETE_SQL = """COALESCE((SELECT rr.complete FROM cards_responsereview rr
  WHERE rr.response_id = {response}.id ORDER BY rr.id DESC LIMIT 1), FALSE)"""


def is_reviewed(*, complete: bool | None, abstained: bool, text: str) -> bool:
    """A response counts as reviewed when its decomposition is marked complete, or when
    the system abstained with no text at all (metrics.md). `reviewed_condition` is the
    same rule for the database; a test holds the two together."""
    return bool(complete) or (abstained and not text)


def reviewed_condition() -> Q:
    """`is_reviewed` as a filter on responses annotated with `review_complete`."""
    return Q(review_complete=True) | Q(abstained=True, text="")


def runs_for_project(*, project: Project) -> QuerySet[Run]:
    """Runs with the counts the project page shows, in one query."""
    responses = Response.objects.filter(run=OuterRef("pk")).values("pk")
    reviewed = (
        Response.objects.filter(run=OuterRef("pk"))
        .annotate(review_complete=latest_review_complete())
        .filter(reviewed_condition())
        .values("pk")
    )
    return (
        Run.objects.filter(project=project)
        .select_related("snapshot")
        .annotate(
            response_count=SubqueryCount(responses),
            reviewed_count=SubqueryCount(reviewed),
            claim_count=SubqueryCount(
                Claim.objects.filter(response__run=OuterRef("pk")).values("pk")
            ),
        )
        .order_by("-imported_at", "-pk")
    )


def responses_for_run(*, run: Run) -> QuerySet[Response]:
    return (
        Response.objects.filter(run=run)
        .select_related("case", "expectation")
        .annotate(
            claim_count=SubqueryCount(Claim.objects.filter(response=OuterRef("pk")).values("pk")),
            retrieved_count=SubqueryCount(
                Retrieval.objects.filter(response=OuterRef("pk")).values("pk")
            ),
            citation_count=SubqueryCount(
                Citation.objects.filter(response=OuterRef("pk")).values("pk")
            ),
            review_complete=latest_review_complete(),
        )
        .order_by("position")
    )
