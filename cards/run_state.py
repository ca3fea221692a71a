"""The state of some runs, for caches of what is computed from their revisions: a key that
changes with anything that could change the result, so a cached value is never stale.

The side-by-side page (`compare.pages`) keeps its comparison under the state of both
runs; the figures page keeps a run's roster, its default source's figures and its
agreement under the state of the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from django.core.cache import cache
from django.db.models import Count, Exists, OuterRef, QuerySet, Subquery

from cards.annotators import MEMBER, Roster, labelled_between, members, roster_from, roster_of
from cards.blind import blind_state
from cards.models import Claim, ClaimRevision, ResponseReview, VerdictRevision
from cards.run_writes import writes_settled
from evidence.models import Membership, Project, Snapshot
from replay.models import Response, Run

TIMEOUT = 3600  # seconds; a new state makes new keys anyway


def runs_version(*, runs: Sequence[Run]) -> tuple:
    """Changes whenever a claim, verdict or review mark is added to one of the runs, a
    snapshot or a run to their project (an import: a cited passage may drift, in a new
    snapshot or in passages added to one), or anything that decides which verdicts were
    blind (consensus and agreement count those).

    Rows are append-only, so the newest ids say everything about what changed, once no
    write that took a lower id is still to commit (`cards.run_writes`). Each is
    read as the first row, walking the table's primary key backwards, that belongs to
    one of the runs (an EXISTS per row, so that SQLite too walks the key rather than every
    row of the runs): under a millisecond, where a MAX over the join read every verdict
    of both runs (0.3 s for two runs of 10,000 cases). One query, and on PostgreSQL one
    before it that waits for the writes in flight; two more in a blind project.
    """
    pks = [run.pk for run in runs]
    claims = Claim.objects.filter(pk=OuterRef("claim_id"), response__run__in=pks)
    responses = Response.objects.filter(pk=OuterRef("response_id"), run__in=pks)
    snapshots = Snapshot.objects.filter(project_id=runs[0].project_id).order_by()
    imported = Run.objects.filter(project_id=runs[0].project_id).order_by()
    # An id is given at insert, not at commit: the newest ids say everything only once no
    # write to the runs is in flight (cards.run_writes), which PostgreSQL waits for here.
    with writes_settled(pks):
        # The seven in one statement, one round trip: a row of the runs' project carries them.
        newest = (
            Project.objects.filter(pk=runs[0].project_id)
            .values_list(
                _newest(ClaimRevision.objects.filter(Exists(claims))),
                _newest(VerdictRevision.objects.filter(Exists(claims))),
                _newest(ResponseReview.objects.filter(Exists(responses))),
                # Snapshots and runs arrive with imports, whose transactions last: rather
                # than wait for them, their count changes when one commits late.
                _newest(snapshots),
                Subquery(snapshots.values("project_id").annotate(n=Count("id")).values("n")),
                _newest(imported),
                Subquery(imported.values("project_id").annotate(n=Count("id")).values("n")),
            )
            .get()
        )
    return (*newest, *blind_state(runs=runs))


def _newest(rows: QuerySet) -> Subquery:
    return Subquery(rows.order_by("-id").values("id")[:1])


class RunsState(str):
    """A state (`runs_state`), which also tells the newest claim revision, verdict and
    review mark ids of the runs when it was read (every row up to them had committed: what
    is grown reads up to them, `grown_roster`, `cards.metrics.grown_run_figures`), and
    their project's imports (the newest snapshot and run ids, and how many of each)."""

    claims_upto: int | None = None
    verdicts_upto: int | None = None
    reviews_upto: int | None = None
    imports: tuple = ()

    @property
    def upto(self) -> tuple[int, int, int]:
        """(claims_upto, verdicts_upto, reviews_upto), 0 for none."""
        return (self.claims_upto or 0, self.verdicts_upto or 0, self.reviews_upto or 0)


def runs_state(*, runs: Sequence[Run], scope: str) -> RunsState:
    """The key part every cached read of these runs in `scope` shares (two queries, two
    more in a blind project): their version and the project's members, who decide what a
    name means (`cards.annotators`)."""
    identity = _identity(runs)
    members = tuple(
        Membership.objects.filter(project_id__in={run.project_id for run in runs})
        .order_by("user__username")
        .values_list("user__username", flat=True)
    )
    version = runs_version(runs=runs)
    state = repr((identity, version, members))
    kept_state = RunsState(f"{scope}:" + hashlib.sha256(state.encode()).hexdigest())
    # runs_version's: the newest claim revision, verdict and review mark, the imports.
    kept_state.claims_upto, kept_state.verdicts_upto, kept_state.reviews_upto = version[:3]
    kept_state.imports = version[3:7]
    return kept_state


def _identity(runs: Sequence[Run]) -> tuple:
    # The import times too: a database restored or rolled back may hand out ids again.
    return tuple((run.pk, run.imported_at) for run in runs)


def runs_key(*, runs: Sequence[Run], part: str) -> str:
    """A cache key for what depends on the runs alone, or grows with them, whatever their
    state (the order of a comparison's pairs, the roster read so far)."""
    return f"{part}:" + hashlib.sha256(repr(_identity(runs)).encode()).hexdigest()


def kept[T](*, state: str, part: str, compute: Callable[[], T]) -> T:
    """What `compute` gives for the runs in this state, from the cache when it was asked in
    this state before (None included)."""
    key = f"{state}:{part}"
    value = cache.get(key, _MISSING)
    if value is _MISSING:
        value = compute()
        cache.set(key, value, TIMEOUT)
    return value


_MISSING = object()


def roster_for(*, runs: Sequence[Run], state: str) -> Roster:
    """`roster_of` the runs, kept per state; in a new state, grown from what was read in
    an earlier one (`grown_roster`)."""
    upto = getattr(state, "verdicts_upto", None)
    return kept(state=state, part="roster", compute=lambda: grown_roster(runs=runs, upto=upto))


def grown_roster(*, runs: Sequence[Run], upto: int | None) -> Roster:
    """`roster_of` the runs, reading only the verdicts saved since it was last read, up to
    `upto`, the newest verdict id of the runs when their state was read (every verdict up
    to it had committed then, `cards.run_writes`); None reads them all.

    Every verdict of the runs (100,000 for two runs of 10,000 cases × 5 claims) took
    0.14 s to read, in each new state, that is after every save. What was read is kept
    under the runs alone: the (name, origin) of each author, and up to which id. A verdict
    is never changed or deleted, so only those above that id are read again, by the
    primary key, with the members, in one query as `roster_of`.
    """
    if upto is None:
        return roster_of(runs=runs)
    key = runs_key(runs=runs, part="roster-read")
    # Read further already (by a later state): what was read then, as `roster_of` would
    # read it now (both may hold authors newer than this state, which is then stale).
    read, labelled = cache.get(key) or (0, frozenset())
    rows = labelled_between(runs=runs, after=read, upto=upto) if upto > read else members(runs)
    if upto > read:
        labelled = labelled | {row for row in rows if row[1] != MEMBER}
        cache.set(key, (upto, labelled), TIMEOUT)
    return roster_from([*rows, *labelled])
