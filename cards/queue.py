"""A reviewer's work: the cases that are theirs, the status of each for them, and their queue.

My cases are the cases of the project assigned to me and the open ones (assigned to nobody);
a case assigned only to someone else is theirs. The status of a case, for me:

- done: reviewed (`cards.progress`) and every current claim carries a verdict of mine;
- needs re-review: done, but a current claim cites a ref that has another text in a snapshot
  newer than its run's (the case page's re-review flag) and that snapshot was stored after my
  newest verdict on that claim: the drift arrived after I judged, so I have not seen it;
- in progress: not done, and I have worked on it (a claim revision, a verdict, or marking the
  decomposition complete or reopening it);
- to do: the rest.

The queue is my cases that are not done, those assigned to me first, then by run (in import
order) and by position in the run. Every status is read from my own work and the case's
decomposition, never from someone else's verdicts: nothing here unblinds a blind review.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Page, Paginator
from django.db import models
from django.db.models import Case, Exists, OuterRef, Q, QuerySet, Subquery, Value, When
from django.http import Http404
from django.utils.translation import gettext_lazy as _

from cards.models import Assignment, Claim, ClaimRevision, ResponseReview, VerdictRevision
from cards.progress import latest_review_complete, reviewed_condition
from evidence.drift import drifted_later
from evidence.models import Membership
from replay.models import Response, Run

CASES_PER_PAGE = 50


class Status(models.TextChoices):
    TODO = "todo", _("To do")
    IN_PROGRESS = "in-progress", _("In progress")
    DONE = "done", _("Done")
    REREVIEW = "rereview", _("Needs re-review")


def status_of(*, reviewed: bool, judged_all: bool, started: bool, drifted_since: bool) -> Status:
    """The status of one case for one reviewer, from the facts `my_cases` reads."""
    if reviewed and judged_all:
        return Status.REREVIEW if drifted_since else Status.DONE
    return Status.IN_PROGRESS if started else Status.TODO


@dataclass(frozen=True)
class WorkItem:
    response_id: int
    run_id: str
    case_id: str
    assigned: bool  # to me; else open
    status: Status
    order: tuple  # the queue's order: (assigned to me first, run import, run, position)


def _current_claims() -> QuerySet[Claim]:
    newest = ClaimRevision.objects.filter(claim=OuterRef("pk")).order_by("-seq")
    return Claim.objects.annotate(withdrawn=Subquery(newest.values("withdrawn")[:1])).filter(
        withdrawn=False  # a withdrawn claim takes no verdict
    )


def _without_verdict_of(user) -> QuerySet[Claim]:
    return _current_claims().exclude(
        Exists(VerdictRevision.objects.filter(claim=OuterRef("pk"), author=user))
    )


def claims_without_verdict(*, response: Response, user) -> list[str]:
    """Keys of the response's current claims that carry no verdict of `user`, in order."""
    return list(
        _without_verdict_of(user)
        .filter(response=response)
        .order_by("position")
        .values_list("key", flat=True)
    )


def my_cases(*, membership: Membership, run_id: str | None = None) -> list[WorkItem]:
    """My cases in queue order, each with its status for me. At most three queries."""
    user, project = membership.user, membership.project
    rows = (
        Response.objects.filter(run__project=project)
        .annotate(
            assigned=Exists(Assignment.objects.filter(response=OuterRef("pk"), reviewer=user)),
            taken=Exists(Assignment.objects.filter(response=OuterRef("pk"))),
        )
        .filter(Q(assigned=True) | Q(taken=False))
    )
    if run_id is not None:
        rows = rows.filter(run__run_id=run_id)
    rows = (
        rows.annotate(review_complete=latest_review_complete())
        .annotate(
            reviewed=Case(When(reviewed_condition(), then=Value(True)), default=Value(False)),
            lacking=Exists(_without_verdict_of(user).filter(response=OuterRef("pk"))),
            split=Exists(
                ClaimRevision.objects.filter(claim__response=OuterRef("pk"), author=user)
            ),
            judged=Exists(
                VerdictRevision.objects.filter(claim__response=OuterRef("pk"), author=user)
            ),
            marked=Exists(ResponseReview.objects.filter(response=OuterRef("pk"), author=user)),
        )
        .order_by("-assigned", "run__imported_at", "run_id", "position")
        .values(
            "pk", "run__run_id", "case__case_id", "assigned", "run__imported_at", "run_id",
            "position", "run__snapshot_id", "reviewed", "lacking", "split", "judged", "marked",
        )
    )  # fmt: skip
    facts = list(rows)
    done = {
        row["pk"]: row["run__snapshot_id"]
        for row in facts
        if row["reviewed"] and not row["lacking"]
    }
    drifted = _drifted_since(membership=membership, done=done, run_id=run_id)
    return [
        WorkItem(
            response_id=row["pk"],
            run_id=row["run__run_id"],
            case_id=row["case__case_id"],
            assigned=bool(row["assigned"]),
            status=status_of(
                reviewed=bool(row["reviewed"]),
                judged_all=not row["lacking"],
                started=bool(row["split"] or row["judged"] or row["marked"]),
                drifted_since=row["pk"] in drifted,
            ),
            order=(not row["assigned"], row["run__imported_at"], row["run_id"], row["position"]),
        )
        for row in facts
    ]


def _drifted_since(
    *, membership: Membership, done: dict[int, int], run_id: str | None
) -> set[int]:
    """Those of my done responses (→ their run's snapshot) that need a re-review. Two queries
    at most: the project's later drift, then the current citations of the claims it touches."""
    if not done:
        return set()
    later: dict[tuple[int, str], datetime] = {
        (snapshot, ref): at
        for snapshot, ref, at in drifted_later(project_id=membership.project_id).values_list(
            "snapshot_id", "ref", "drifted_at"
        )
    }
    snapshots = {snapshot for snapshot, _ in later} & set(done.values())
    if not snapshots:
        return set()
    newest = ClaimRevision.objects.filter(claim=OuterRef("pk")).order_by("-seq")
    mine = VerdictRevision.objects.filter(claim=OuterRef("pk"), author=membership.user)
    claims = _current_claims().filter(
        response__run__project_id=membership.project_id, response__run__snapshot_id__in=snapshots
    )
    if run_id is not None:
        claims = claims.filter(response__run__run_id=run_id)
    found = set()
    for response_id, snapshot, cited, judged_at in claims.annotate(
        cited=Subquery(newest.values("citations")[:1]),
        judged_at=Subquery(mine.order_by("-seq").values("created_at")[:1]),
    ).values_list("response_id", "response__run__snapshot_id", "cited", "judged_at"):
        if response_id not in done or judged_at is None:
            continue
        if any(later.get((snapshot, ref), judged_at) > judged_at for ref in cited):
            found.add(response_id)
    return found


def next_in_queue(*, membership: Membership, after: Response | None = None) -> WorkItem | None:
    """My next case that is not done: the first one after `after` in queue order, wrapping
    around to the start, so a skip never comes back to `after` before every other case has
    had its turn. `after` itself comes last, and only when nothing else waits."""
    items = my_cases(membership=membership)
    waiting = [item for item in items if item.status != Status.DONE]
    if after is None:
        return waiting[0] if waiting else None
    here = next((item.order for item in items if item.response_id == after.pk), None)
    if here is None:  # a case that is not mine (someone else's): it sorts with the open ones
        here = (True, after.run.imported_at, after.run_id, after.position)
    later = [item for item in waiting if item.order > here]
    return (later or waiting or [None])[0]


def case_response(*, run: Run, case_id: str) -> Response:
    """The response of a run to one case (404 when the run has none), without the review page."""
    response = (
        Response.objects.select_related("run__project", "case")
        .filter(run=run, case__case_id=case_id)
        .first()
    )
    if response is None:
        raise Http404("No such case in this run.")
    return response


@dataclass
class WorkRow:
    item: WorkItem
    response: Response  # with run, case and expectation, for the query text


@dataclass
class WorkPage:
    runs: list[Run]  # the project's runs, for the filter
    run_id: str | None  # the run filter in force
    status: str | None  # the status filter in force
    total: int  # my cases (of the run filter)
    counts: dict[str, int]  # Status value → my cases with it (of the run filter)
    page: Page
    rows: list[WorkRow]

    @property
    def done(self) -> int:
        return self.counts[Status.DONE]

    @property
    def statuses(self) -> list[tuple[str, str, int]]:
        return [(s.value, s.label, self.counts[s.value]) for s in Status]


def work_page(
    *, membership: Membership, run_id: str | None, status: str | None, page: str | None
) -> WorkPage:
    """My work: my cases with their status, filtered and paginated. Five queries at most,
    whatever the number of cases: runs, cases and statuses, later drift, the claims it
    touches, and the shown page's rows."""
    runs = list(Run.objects.filter(project=membership.project).order_by("imported_at", "pk"))
    run_id = run_id if run_id in {run.run_id for run in runs} else None
    status = status if status in Status.values else None
    items = my_cases(membership=membership, run_id=run_id)
    counts = Counter(item.status.value for item in items)
    shown = [item for item in items if status is None or item.status == status]
    paged = Paginator(shown, CASES_PER_PAGE).get_page(page)
    responses = Response.objects.select_related("run", "case", "expectation").in_bulk(
        [item.response_id for item in paged.object_list]
    )
    return WorkPage(
        runs=runs,
        run_id=run_id,
        status=status,
        total=len(items),
        counts={s.value: counts[s.value] for s in Status},
        page=paged,
        rows=[WorkRow(item, responses[item.response_id]) for item in paged.object_list],
    )
