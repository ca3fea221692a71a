"""The end of a review: a decomposition marked complete (or reopened), a reviewer's submit,
and a lead's unblinding of a case or a run."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone
from django.utils.translation import gettext, ngettext

from cards.blind import hidden_from, sightings
from cards.models import Claim, ClaimRevision, Origin, ResponseReview, Unblinding, VerdictRevision
from cards.queue import claims_without_verdict
from cards.services.guards import require_member
from cards.services.tallies import lock_response_tally, response_reviewed
from evidence.models import Project
from replay.models import Response, Run


@transaction.atomic
def response_mark_complete(
    *, response: Response, author: AbstractBaseUser, complete: bool = True
) -> ResponseReview:
    """Mark the decomposition complete (metrics count only reviewed responses), or reopen it.

    In a project that reviews blind, a reviewer's first mark is also the end of their own
    blind review of the case: it shows them everyone's verdicts (cards.blind), and what
    they save afterwards is an informed revision. So it is refused until they have judged
    every current claim. Reopening does not hide again what they have seen.
    """
    membership = require_member(project_id=response.run.project_id, user=author)
    if complete and response.text and not _has_current_claim(response):
        # An answer with text and no (unwithdrawn) claim is unreviewed, not an abstention.
        raise ValidationError(
            {
                "complete": gettext(
                    "Split the answer into claims first (an abstention is a claim too)."
                )
            }
        )
    if complete and hidden_from(
        membership,
        sightings=sightings(run=response.run, response_ids=[response.pk]),
        response_id=response.pk,
    ):
        unjudged = _claims_without_verdict_of(response=response, author=author)
        if unjudged:
            raise ValidationError(
                {
                    "complete": ngettext(
                        "Judge every claim first (%(keys)s has no verdict of yours): marking "
                        "your review complete shows you the other reviewers' verdicts, and what "
                        "you save after that is an informed revision, not your blind verdict.",
                        "Judge every claim first (%(keys)s have no verdict of yours): marking "
                        "your review complete shows you the other reviewers' verdicts, and what "
                        "you save after that is an informed revision, not your blind verdict.",
                        len(unjudged),
                    )
                    % {"keys": ", ".join(unjudged)}
                }
            )
    lock_response_tally(response=response)
    review = ResponseReview.objects.create(
        response=response, complete=complete, author=author,
        annotator=author.get_username(), origin=Origin.REVIEW,
        # The same clock as the verdicts' created_at, which cards.blind compares it with.
        created_at=timezone.now(),
    )  # fmt: skip
    response_reviewed(response=response, complete=complete)
    return review


def _claims_without_verdict_of(*, response: Response, author: AbstractBaseUser) -> list[str]:
    """Keys of the response's current claims that `author` has not judged (one query)."""
    newest = ClaimRevision.objects.filter(claim=OuterRef("pk")).order_by("-seq")
    mine = VerdictRevision.objects.filter(
        claim=OuterRef("pk"), author=author, origin=Origin.REVIEW
    )
    return list(
        Claim.objects.filter(response=response)
        .annotate(withdrawn=Subquery(newest.values("withdrawn")[:1]))
        .filter(withdrawn=False)
        .exclude(Exists(mine))
        .order_by("position")
        .values_list("key", flat=True)
    )


def _has_current_claim(response: Response) -> bool:
    newest = ClaimRevision.objects.filter(claim=OuterRef("pk")).order_by("-seq")
    return (
        Claim.objects.filter(response=response)
        .annotate(withdrawn=Subquery(newest.values("withdrawn")[:1]))
        .filter(withdrawn=False)
        .exists()
    )


@transaction.atomic
def response_submit(*, response: Response, author: AbstractBaseUser) -> ResponseReview:
    """A reviewer's last step on a case ("Submit and next"): the decomposition is marked
    complete, refused while a current claim carries no verdict of theirs, so that a submitted
    case is done for them (`cards.queue`) and leaves their queue."""
    require_member(project_id=response.run.project_id, user=author)
    missing = claims_without_verdict(response=response, user=author)
    if missing:
        message = ngettext(
            "Judge every claim before you submit: %(keys)s has no verdict of yours.",
            "Judge every claim before you submit: %(keys)s have no verdict of yours.",
            len(missing),
        ) % {"keys": ", ".join(missing)}
        raise ValidationError({"complete": message})
    return response_mark_complete(response=response, author=author)


def unblinding_create(
    *, run: Run, lead: AbstractBaseUser, response: Response | None = None
) -> Unblinding | None:
    """A lead lets the reviewers of one case (`response`), or of every case of the run, see
    each other's verdicts. Recorded for good; None when it was open already."""
    require_member(project_id=run.project_id, user=lead, lead=True)
    if not Project.objects.filter(pk=run.project_id, blind_review=True).exists():
        raise ValidationError(
            gettext("This project does not review blind: every verdict is visible.")
        )
    if response is not None and response.run_id != run.pk:
        raise ValidationError(gettext("That case is not in this run."))
    done = Unblinding.objects.filter(run=run, response=None)
    if response is not None:
        done = done | Unblinding.objects.filter(run=run, response=response)
    if done.exists():
        return None
    return Unblinding.objects.create(
        run=run, response=response, author=lead, created_at=timezone.now()
    )
