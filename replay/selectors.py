"""Reads of the replay app: runs by project."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import F
from django.http import Http404

from evidence.models import Membership, Project
from replay.models import Run

MEMBER_FIELDS = ("id", "role", "in_rotation", "created_at")


def run_for_project(*, project: Project, run_id: str) -> Run:
    run = Run.objects.select_related("snapshot").filter(project=project, run_id=run_id).first()
    if run is None:
        raise Http404("No such run.")
    run.project = project  # already loaded by the caller's membership check
    return run


def run_for_member(*, user: AbstractBaseUser, slug: str, run_id: str) -> tuple[Membership, Run]:
    """The user's membership of project `slug` and its run `run_id`, in one query.

    What `evidence.access.membership_for` then `run_for_project` read in two, for the
    pages that every review request opens with (the case page, a card, a save): 404 for
    an outsider, as there, and for a run that is not the project's.
    """
    run = (
        Run.objects.select_related("project", "snapshot")
        .filter(run_id=run_id, project__slug=slug, project__memberships__user=user)
        .annotate(**{f"member_{f}": F(f"project__memberships__{f}") for f in MEMBER_FIELDS})
        .first()
    )
    if run is None:
        raise Http404("No such project or run.")
    membership = Membership.from_db(
        run._state.db,
        ["project_id", "user_id", *MEMBER_FIELDS],
        [run.project_id, user.pk, *(getattr(run, f"member_{name}") for name in MEMBER_FIELDS)],
    )
    membership.project, membership.user = run.project, user
    return membership, run
