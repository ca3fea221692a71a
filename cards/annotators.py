"""Who labelled a claim: a local account or an imported annotator, never both at once.

metrics.md: "An imported annotator is never the same annotator as a local account,
even when the names are equal." Every count of annotators (agreement, consensus, one
annotator's verdicts, disagreements) keys verdicts by `Annotator`; every place that
shows an annotator's name or reads one typed by a person goes through a `Roster`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from django.db.models import CharField, QuerySet, Value

from cards.models import Origin, VerdictRevision
from evidence.models import Membership
from replay.models import Run

IMPORTED = "imported:"
MEMBER = "member"  # in place of a verdict's origin, for the project's accounts


class Annotator(NamedTuple):
    """A local account (by its username) or an imported annotator (by its bundle name).

    A named tuple, not a dataclass: one is made per verdict row a figure reads.
    """

    name: str
    imported: bool = False

    @classmethod
    def of(cls, *, annotator: str, origin: str) -> Annotator:
        """The annotator of a verdict row: its name and whether it was imported."""
        return cls(annotator, imported=origin == Origin.IMPORTED)

    @property
    def key(self) -> str:
        """Unambiguous whatever the project: `imported:NAME` for an imported annotator."""
        return IMPORTED + self.name if self.imported else self.name


@dataclass(frozen=True)
class Roster:
    """The annotators of some runs, and how they are named in their project.

    A bare name means the local account when the project has one by that name (a
    member, or the author of a local verdict here), else the imported annotator;
    `imported:NAME` always means the imported one. So the imported namesake of an
    account is written `imported:NAME`, any other imported annotator by its bare
    name (`seed-protocol`), and every name shown can be typed back.
    """

    accounts: frozenset[str] = frozenset()
    annotators: tuple[Annotator, ...] = ()  # who labelled a claim, adjudications aside

    def name(self, annotator: Annotator) -> str:
        bare = annotator.name
        if annotator.imported and (bare in self.accounts or bare.startswith(IMPORTED)):
            return IMPORTED + bare
        return bare

    def resolve(self, name: str) -> Annotator:
        """The annotator a written name means here (usernames cannot hold a colon)."""
        if name.startswith(IMPORTED):
            return Annotator(name.removeprefix(IMPORTED), imported=True)
        return Annotator(name, imported=name not in self.accounts)

    @property
    def names(self) -> list[str]:
        return [self.name(a) for a in self.annotators]


def roster_of(*, runs: Sequence[Run]) -> Roster:
    """Who labelled claims of these runs (of one project), and the project's account names.

    One query. Members count even before they label anything, so that a name does not
    change meaning the day its account saves a first verdict.
    """
    return roster_from(members(runs).union(_labelled(runs)))  # without ALL: distinct rows


def labelled_between(*, runs: Sequence[Run], after: int, upto: int) -> list[tuple[str, str]]:
    """What `roster_of` reads (the members' rows and each author's), of the verdicts with
    an id above `after` and up to `upto` only: one query, by the primary key."""
    return list(members(runs).union(_labelled(runs).filter(pk__gt=after, pk__lte=upto)))


def roster_from(rows: Iterable[tuple[str, str]]) -> Roster:
    """The roster of (name, origin) rows: members (`MEMBER`) and verdicts' authors."""
    accounts, annotators = set(), set()
    for name, origin in rows:
        if origin != Origin.IMPORTED:
            accounts.add(name)  # a former member's verdicts are still an account's
        if origin in {Origin.REVIEW, Origin.IMPORTED}:  # a lead settling is not a label
            annotators.add(Annotator.of(annotator=name, origin=origin))
    return Roster(frozenset(accounts), tuple(sorted(annotators)))


def members(runs: Sequence[Run]) -> QuerySet:
    """(username, `MEMBER`) of each member of the runs' project."""
    return Membership.objects.filter(project_id__in={run.project_id for run in runs}).values_list(
        "user__username", Value(MEMBER, output_field=CharField())
    )


def _labelled(runs: Sequence[Run]) -> QuerySet:
    return (
        VerdictRevision.objects.filter(claim__response__run__in=[run.pk for run in runs])
        .order_by()  # the model's ordering has no place in a union
        .values_list("annotator", "origin")
    )


def annotators_of(*, run: Run) -> list[str]:
    """The names of everyone who labelled a claim of the run, namesakes side by side."""
    return roster_of(runs=[run]).names
