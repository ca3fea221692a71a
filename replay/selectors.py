"""Reads of the replay app: runs by project."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404

from evidence.models import Membership, Project, Snapshot
from evidence.rows import Columns, instances, prepared_cursor
from replay.models import Run


def run_for_project(*, project: Project, run_id: str) -> Run:
    run = Run.objects.select_related("snapshot").filter(project=project, run_id=run_id).first()
    if run is None:
        raise Http404("No such run.")
    run.project = project  # already loaded by the caller's membership check
    return run


RUN, PROJECT, SNAPSHOT, MEMBERSHIP = (
    Columns(Run, "r"), Columns(Project, "p"), Columns(Snapshot, "s"), Columns(Membership, "m"),
)  # fmt: skip
# The membership and the run in one statement, for every review request (the case page, a
# card, a save). SQL, not the ORM: compiling the join and its annotations cost 1.4 ms of
# CPU a request, running it 0.1 ms. Served by the unique (project, run_id) and
# (project, user) indexes.
# Whether the project holds another snapshot than the run's: if not, no passage the run
# shows can have drifted, and the review pages skip asking (`run.other_snapshots`).
OTHER_SNAPSHOTS = """EXISTS (
       SELECT 1 FROM evidence_snapshot o WHERE o.project_id = p.id AND o.id <> r.snapshot_id)"""
RUN_FOR_MEMBER = f"""
SELECT {RUN.sql}, {PROJECT.sql}, {SNAPSHOT.sql}, {MEMBERSHIP.sql}, {OTHER_SNAPSHOTS}
  FROM replay_run r
  JOIN evidence_project p ON p.id = r.project_id
  JOIN evidence_snapshot s ON s.id = r.snapshot_id
  JOIN evidence_membership m ON m.project_id = p.id AND m.user_id = %s
 WHERE p.slug = %s AND r.run_id = %s
"""


def run_for_member(*, user: AbstractBaseUser, slug: str, run_id: str) -> tuple[Membership, Run]:
    """The user's membership of project `slug` and its run `run_id`, in one query.

    What `evidence.access.membership_for` then `run_for_project` read in two, for the
    pages that every review request opens with (the case page, a card, a save): 404 for
    an outsider, as there, and for a run that is not the project's.
    """
    with prepared_cursor() as cursor:
        cursor.execute(RUN_FOR_MEMBER, [user.pk, slug, run_id])
        row = cursor.fetchone()
    if row is None:
        raise Http404("No such project or run.")
    run, project, snapshot, membership = instances(row, RUN, PROJECT, SNAPSHOT, MEMBERSHIP)
    run.project = membership.project = project
    run.snapshot = snapshot
    run.other_snapshots = bool(row[-1])
    membership.user = user
    return membership, run
