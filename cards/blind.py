"""Blind review: what a reviewer may see of other reviewers' work, and since when. One rule, here.

In a project that reviews blind, a reviewer sees nothing of anyone else's verdicts on a
case until they have marked their own review of it complete (a `ResponseReview` of theirs;
cards.services.reviews refuses it until they have judged every current claim), or a lead unblinds
the case or its whole run (`Unblinding`, append-only). Leads see every verdict.

metrics.md counts, for agreement, consensus and disagreements, a reviewer's *blind*
verdict: the last one they saved before they could see anyone else's verdict on that
case. `sightings` says when that moment came, per case and annotator; cards.verdicts
picks the labels with it. A reviewer could see another's verdict from the first moment
that (a) someone else's verdict on the case existed and (b) the case was open to them:
their own completion mark, a lead's unblinding, being a lead, or a time before blind
review was switched on (`Project.blind_since`), when everyone saw everything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Max, Min
from django.utils.translation import gettext_lazy

from cards.annotators import Annotator
from cards.models import Origin, ResponseReview, Unblinding, VerdictRevision
from evidence.models import Membership, Role
from replay.models import Run

BLIND_FIGURES = gettext_lazy(
    "This project reviews blind: figures built from other reviewers' verdicts are for leads "
    "until the review is over."
)
Sighted = Mapping[Annotator, datetime]


def blind_for(membership: Membership) -> bool:
    """Blind review hides others' verdicts from this member (a reviewer, not a lead)."""
    return membership.project.blind_review and not membership.can_lead


def require_unblinded(membership: Membership) -> None:
    """403 on pages built from everyone's verdicts (figures, comparisons) while blind."""
    if blind_for(membership):
        raise PermissionDenied(BLIND_FIGURES)


@dataclass(frozen=True)
class Sightings:
    """When cases of a run opened to their reviewers, and when each annotator could first see
    someone else's verdict on each case. Empty when the project does not review blind."""

    blind: bool = False
    marked: Mapping[tuple[int, str], datetime] = field(default_factory=dict)  # own completion
    unblinded: Mapping[int | None, datetime] = field(default_factory=dict)  # None: the run
    seen: Mapping[int, Sighted] = field(default_factory=dict)

    def of(self, response_id: int) -> Sighted:
        """Annotator → the moment they could first see another's verdict on this case."""
        return self.seen.get(response_id, {})

    def opened_at(self, response_id: int, username: str) -> datetime | None:
        """When the case opened to this reviewer: their own mark or a lead's unblinding."""
        moments = [
            self.marked.get((response_id, username)),
            self.unblinded.get(response_id),
            self.unblinded.get(None),
        ]
        return min((m for m in moments if m is not None), default=None)

    def lead_unblinded(self, response_id: int) -> bool:
        return response_id in self.unblinded or None in self.unblinded


def hidden_from(membership: Membership, *, sightings: Sightings, response_id: int) -> bool:
    """Whether others' verdicts on this case are hidden from this member now."""
    return blind_for(membership) and (
        sightings.opened_at(response_id, membership.user.get_username()) is None
    )


def sightings(
    *,
    run: Run,
    response_ids: Collection[int] | None = None,
    verdicts: Iterable[tuple[int, str, str, datetime]] | None = None,
) -> Sightings:
    """The blind-review clock of a run's cases (or of some of them). Four queries when the
    project reviews blind, none otherwise; the rows read are per case and annotator, not
    per verdict. A caller that holds every verdict of the cases already passes them as
    (response_id, annotator, origin, created_at), which saves one query."""
    project = run.project
    if not project.blind_review:
        return Sightings()
    scope = {"response__run": run}
    if response_ids is not None:
        scope = {"response_id__in": list(response_ids)}
    marked = {
        (row["response_id"], row["annotator"]): row["at"]
        for row in ResponseReview.objects.filter(**scope, complete=True, origin=Origin.REVIEW)
        .order_by()
        .values("response_id", "annotator")
        .annotate(at=Min("created_at"))
    }
    unblinded: dict[int | None, datetime] = {}
    for response_id, at in Unblinding.objects.filter(run=run).values_list(
        "response_id", "created_at"
    ):
        unblinded[response_id] = min(at, unblinded.get(response_id, at))
    if verdicts is None:
        verdict_scope = {f"claim__{key}": value for key, value in scope.items()}
        verdicts = (
            VerdictRevision.objects.filter(**verdict_scope)
            .order_by()  # the model's ordering would split the groups
            .values_list("claim__response_id", "annotator", "origin")
            .annotate(at=Min("created_at"))
        )
    firsts: dict[int, dict[Annotator, datetime]] = defaultdict(dict)
    for response_id, name, origin, at in verdicts:
        # A lead's adjudications and own verdicts are one person's: one annotator.
        annotator = Annotator.of(annotator=name, origin=origin)
        mine = firsts[response_id]
        mine[annotator] = min(at, mine.get(annotator, at))
    leads = set(
        Membership.objects.filter(project_id=run.project_id, role__in=[Role.LEAD, Role.ADMIN])
        .values_list("user__username", flat=True)
    )  # fmt: skip
    clock = Sightings(True, marked, unblinded, {})
    seen: dict[int, dict[Annotator, datetime]] = {}
    for response_id, first in firsts.items():
        for annotator in first:
            if annotator.imported:
                continue  # an imported judgement was made elsewhere: its newest label counts
            others = [at for other, at in first.items() if other != annotator]
            if not others:
                continue
            first_other = min(others)
            if annotator.name in leads or (
                project.blind_since is not None and first_other < project.blind_since
            ):
                moment = first_other
            else:
                opened = clock.opened_at(response_id, annotator.name)
                if opened is None:
                    continue
                moment = max(first_other, opened)
            seen.setdefault(response_id, {})[annotator] = moment
    return Sightings(True, marked, unblinded, seen)


def blind_state(*, runs: Collection[Run]) -> tuple:
    """What, beyond claims, verdicts and review marks, changes which verdicts are blind: for
    caches of figures. Nothing (no query) unless the project reviews blind."""
    projects = {run.project_id: run.project for run in runs}
    if not any(project.blind_review for project in projects.values()):
        return ()
    return (
        *((p.pk, p.blind_review, p.blind_since) for p in projects.values()),
        # Counted too: an id is given at insert, and an unblinding may commit after a
        # later one (cards.run_writes); unblindings are few.
        tuple(
            Unblinding.objects.filter(run__in=list(runs))
            .aggregate(m=Max("id"), n=Count("id"))
            .values()
        ),
        tuple(
            Membership.objects.filter(project__in=list(projects), role__in=[Role.LEAD, Role.ADMIN])
            .order_by("user_id")
            .values_list("user_id", flat=True)
        ),
    )


def run_unblinded(*, run: Run) -> bool:
    """Whether a lead unblinded every case of the run (one query)."""
    return Unblinding.objects.filter(run=run, response=None).exists()
