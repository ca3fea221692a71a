"""Who reviews which case: assignments by hand, and dealing a run's cases to the rotation."""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext

from cards.models import Assignment
from cards.services.guards import require_member
from evidence.models import AssignmentMode, Membership, Project
from replay.models import Response, Run


@transaction.atomic
def assignment_set(
    *, responses: Sequence[Response], reviewer: AbstractBaseUser, lead: AbstractBaseUser
) -> int:
    """Assign responses to a reviewer (a member of their project); returns how many were new."""
    created = 0
    for response in responses:
        require_member(project_id=response.run.project_id, user=lead, lead=True)
        require_member(project_id=response.run.project_id, user=reviewer)
        _, was_created = Assignment.objects.get_or_create(
            response=response, reviewer=reviewer, defaults={"assigned_by": lead}
        )
        created += was_created
    return created


@dataclass(frozen=True)
class Dealt:
    created: int  # new assignments
    short: int  # cases that still have fewer reviewers than the project asks for


def assignment_seed(run: Run) -> int:
    """Random assignment's seed, derived from the run: the same run is always dealt alike."""
    digest = hashlib.sha256(f"{run.project.slug}/{run.run_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@transaction.atomic
def assignment_deal(*, run: Run, lead: AbstractBaseUser) -> Dealt:
    """Give every case of the run as many reviewers as its project asks for, from the members
    in rotation, round-robin or at random (project settings). Idempotent: a case that has
    enough reviewers (by hand or dealt) is left alone, so dealing twice adds nothing.

    Round-robin deals to whoever was dealt to least recently (in username order at first);
    random draws, for each place, among the eligible members with the fewest cases of this
    run, with a generator seeded from the run (`assignment_seed`). A member is never dealt
    the same case twice.
    """
    require_member(project_id=run.project_id, user=lead, lead=True)
    # One deal at a time per run: two leads pressing at once must not over-assign a case.
    Run.objects.select_for_update().filter(pk=run.pk).first()
    project = Project.objects.get(pk=run.project_id)
    if project.assignment == AssignmentMode.MANUAL:
        raise ValidationError(
            gettext(
                "This project assigns cases by hand: choose round-robin or random in its settings."
            )
        )
    pool = [
        m.user
        for m in Membership.objects.filter(project=project, in_rotation=True)
        .select_related("user")
        .order_by("user__username")
    ]
    if not pool:
        raise ValidationError(
            gettext("Choose the reviewers to deal cases to in the project's settings.")
        )
    on_case: dict[int, set[int]] = defaultdict(set)
    load: dict[int, int] = dict.fromkeys((u.pk for u in pool), 0)
    for response_id, reviewer_id in Assignment.objects.filter(response__run=run).values_list(
        "response_id", "reviewer_id"
    ):
        on_case[response_id].add(reviewer_id)
        if reviewer_id in load:
            load[reviewer_id] += 1
    rng = random.Random(assignment_seed(run))
    turn = list(pool)  # round-robin: least recently dealt first
    created = short = 0
    new = []
    for response_id in (
        Response.objects.filter(run=run).order_by("position").values_list("pk", flat=True)
    ):
        for _ in range(project.reviewers_per_case - len(on_case[response_id])):
            eligible = [u for u in turn if u.pk not in on_case[response_id]]
            if not eligible:
                short += 1
                break
            if project.assignment == AssignmentMode.RANDOM:
                fewest = min(load[u.pk] for u in eligible)
                chosen = rng.choice([u for u in pool if u in eligible and load[u.pk] == fewest])
            else:
                chosen = eligible[0]
            turn.remove(chosen)
            turn.append(chosen)
            load[chosen.pk] += 1
            on_case[response_id].add(chosen.pk)
            new.append(Assignment(response_id=response_id, reviewer=chosen, assigned_by=lead))
            created += 1
    Assignment.objects.bulk_create(new)
    return Dealt(created, short)
