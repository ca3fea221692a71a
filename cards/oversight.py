"""Reads a lead works from: who reviews which case, where reviewers disagree, and which
imported annotators to offer when nobody here judged a run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Exists, OuterRef, Prefetch

from cards.annotators import Roster
from cards.blind import sightings
from cards.models import Assignment, Claim, ClaimRevision, Origin, VerdictRevision
from cards.run_state import TIMEOUT, runs_key
from cards.verdicts import Source, newest_labels
from replay.models import Run


def assignments_for_run(*, run: Run) -> dict[int, list[str]]:
    result: dict[int, list[str]] = {}
    for response_id, username in Assignment.objects.filter(response__run=run).values_list(
        "response_id", "reviewer__username"
    ):
        result.setdefault(response_id, []).append(username)
    return result


@dataclass
class Disagreement:
    claim: Claim
    revision: ClaimRevision
    verdicts: list[VerdictRevision]  # the label of each annotator (a namesake is another)
    adjudication: VerdictRevision | None


def disagreements(*, run: Run) -> list[Disagreement]:
    """Claims whose annotators' labels (cards.verdicts.newest_labels: in a blind project, their
    blind verdicts) differ in support, in a fixed number of queries."""
    claims = (
        Claim.objects.filter(response__run=run)
        .select_related("response__case")
        .prefetch_related(
            Prefetch("revisions", queryset=ClaimRevision.objects.order_by("-seq")),
            Prefetch("verdicts", queryset=VerdictRevision.objects.order_by("-seq")),
        )
        .order_by("response__position", "position")
    )
    clock = sightings(run=run)
    found = []
    for claim in claims:
        verdicts = claim.verdicts.all()
        labels = newest_labels(verdicts, sighted=clock.of(claim.response_id))
        if len({v.support for v in labels.values()}) > 1:
            revision = claim.revisions.all()[0]
            if not revision.withdrawn:
                adjudication = next((v for v in verdicts if v.origin == Origin.ADJUDICATION), None)
                found.append(Disagreement(claim, revision, list(labels.values()), adjudication))
    return found


@dataclass(frozen=True)
class ImportedOffer:
    """Runs in which no local reviewer judged anything, and the imported annotators to read
    instead: the default verdicts would count every claim of those runs as unreviewed."""

    runs: list[str]  # run ids, in the order asked
    annotators: list[tuple[str, str]]  # (name as shown, source label), one link each


def imported_offer(
    *, runs: list[Run], roster: Roster, source: Source, upto: int | None = None
) -> ImportedOffer | None:
    """What to offer when the default source finds no verdict in some of these runs.

    None unless the default source is chosen and one of the runs has no local verdict (a
    reviewer's or an adjudication): `judged_runs`, grown up to the verdict id `upto` when
    given (`RunsState.verdicts_upto`).
    """
    if source.mode != "default":
        return None
    judged = judged_runs(runs=runs, upto=upto)
    empty = [run.run_id for run in runs if run.pk not in judged]
    if not empty:
        return None
    imported = [a for a in roster.annotators if a.imported]
    annotators = [(roster.name(a), Source.of(a, roster=roster).label) for a in imported]
    return ImportedOffer(empty, annotators)


def judged_runs(*, runs: Sequence[Run], upto: int | None = None) -> frozenset[int]:
    """The runs (their pks) with a local verdict, a reviewer's or an adjudication.

    One query, an EXISTS per run, which reads every verdict of a run nobody here judged
    (14 ms for 50,000 imported ones). With `upto`, the newest verdict id of the runs when
    their state was read (every verdict up to it had committed then): a run judged stays
    judged, as a verdict is never changed or deleted, so what was found is kept under the
    runs alone with the id it was read up to, and only the verdicts above it are read in a
    later state, by the primary key, and only for the runs not judged yet.
    """
    if upto is None:
        return _judged_between([run.pk for run in runs], after=0, upto=None)
    key = runs_key(runs=runs, part="judged-read")
    # Read further already (by a later state): what was found then.
    read, judged = cache.get(key) or (0, frozenset())
    if upto > read:
        pending = [run.pk for run in runs if run.pk not in judged]
        if pending:
            judged = judged | _judged_between(pending, after=read, upto=upto)
        cache.set(key, (upto, judged), TIMEOUT)
    return judged


def _judged_between(pks: list[int], *, after: int, upto: int | None) -> frozenset[int]:
    local = VerdictRevision.objects.filter(
        claim__response__run=OuterRef("pk"),
        origin__in=[Origin.REVIEW, Origin.ADJUDICATION],
        pk__gt=after,
    )
    if upto is not None:
        local = local.filter(pk__lte=upto)
    return frozenset(
        Run.objects.filter(pk__in=pks)
        .annotate(judged=Exists(local))
        .filter(judged=True)
        .values_list("pk", flat=True)
    )
