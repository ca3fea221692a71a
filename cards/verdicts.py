"""Which verdict of a claim counts: for a figure (a `Source`), and as the claim's current one.

metrics.md: by default the adjudicated verdict where a lead adjudicated, else the newest
verdict of any reviewer of the project; `annotator NAME`, that annotator's newest
verdict; `consensus`, the label a strict majority of the annotators who labelled the
claim agree on. An annotator's label (agreement, consensus, disagreements) is, in a
project that reviews blind, their blind verdict: the last one saved before they could
see anyone else's verdict on the case (cards.blind says when that was); later ones are
informed revisions. The rules work on plain rows, newest first, with `annotator`,
`origin`, `support` and `created_at` attributes (model instances, named value rows,
tuples of our own), so the figures, the comparison, the review page and the audit
export all read this one module.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from cards.annotators import Annotator, Roster
from cards.models import Origin, Support

LABELS: tuple[str, ...] = tuple(Support.values)
NO_CONSENSUS = "no_consensus"


class VerdictRow(Protocol):
    @property
    def annotator(self) -> str: ...

    @property
    def origin(self) -> str: ...

    @property
    def support(self) -> str: ...

    @property
    def created_at(self) -> datetime: ...


@dataclass(frozen=True)
class Source:
    """Which verdict of a claim the figures use (metrics.md)."""

    mode: str = "default"  # default | annotator | consensus
    annotator: Annotator | None = None
    name: str = field(default="", compare=False)  # how the annotator is written: the label

    @property
    def label(self) -> str:
        return f"annotator:{self.name}" if self.mode == "annotator" else self.mode

    @property
    def key(self) -> str:
        """Like the label, but the same in every project (for caches)."""
        return f"annotator:{self.annotator.key}" if self.annotator else self.mode

    @classmethod
    def of(cls, annotator: Annotator, *, roster: Roster | None = None) -> Source:
        """One annotator's verdicts, named as in the roster's project (else by its key)."""
        return cls("annotator", annotator, roster.name(annotator) if roster else annotator.key)

    @classmethod
    def parse(cls, label: str | None, *, roster: Roster) -> Source:
        """From a label (`default`, `consensus`, `annotator:NAME`); anything else is default."""
        if label == "consensus":
            return cls("consensus")
        if label and label.startswith("annotator:") and label != "annotator:":
            return cls.of(roster.resolve(label.removeprefix("annotator:")), roster=roster)
        return cls()

    @classmethod
    def from_options(cls, *, annotator: str | None, consensus: bool, roster: Roster) -> Source:
        """From the command-line options `--annotator NAME | --consensus`."""
        if annotator:
            return cls.parse(f"annotator:{annotator}", roster=roster)
        return cls.parse("consensus" if consensus else None, roster=roster)


def annotator_of(verdict: VerdictRow) -> Annotator:
    return Annotator(verdict.annotator, verdict.origin == Origin.IMPORTED)


def is_informed(verdict: VerdictRow, sighted: Mapping[Annotator, datetime]) -> bool:
    """Saved once its annotator could see someone else's verdict on the case (cards.blind
    gives `sighted`, the moment per annotator; empty when the project is not blind)."""
    if not sighted:  # not blind: nobody's verdict is informed (and most pages are so)
        return False
    moment = sighted.get(annotator_of(verdict))
    return moment is not None and verdict.created_at >= moment


def newest_labels[V: VerdictRow](
    verdicts: Iterable[V], *, sighted: Mapping[Annotator, datetime]
) -> dict[Annotator, V]:
    """Each annotator's label for agreement, consensus and disagreements, from rows newest
    first: their newest verdict that is not an informed revision, so in a project that
    reviews blind the last one saved before they could see anyone else's (metrics.md). An
    annotator whose every verdict on the claim is informed has no label there.
    Adjudications are not labels: a lead settling a claim is not one more annotator.
    """
    newest: dict[Annotator, V] = {}
    for verdict in verdicts:
        if verdict.origin == Origin.ADJUDICATION:
            continue
        annotator = annotator_of(verdict)
        if annotator not in newest and not is_informed(verdict, sighted):
            newest[annotator] = verdict
    return newest


def _newest[V: VerdictRow](verdicts: Iterable[V], origin: str) -> V | None:
    return next((v for v in verdicts if v.origin == origin), None)


def counted[V: VerdictRow](
    verdicts: Sequence[V], source: Source, *, sighted: Mapping[Annotator, datetime]
) -> V | Literal["no_consensus"] | None:
    """The verdict a figure uses for one claim, `no_consensus`, or None (unreviewed);
    `sighted` (cards.blind) decides the annotators' labels that consensus counts."""
    if source.mode == "annotator":
        return next(
            (
                v
                for v in verdicts
                if v.origin != Origin.ADJUDICATION and annotator_of(v) == source.annotator
            ),
            None,
        )
    if source.mode == "consensus":
        newest = newest_labels(verdicts, sighted=sighted)
        if not newest:
            return None
        label, votes = Counter(v.support for v in newest.values()).most_common(1)[0]
        if votes * 2 <= len(newest):
            return NO_CONSENSUS
        return next(v for v in newest.values() if v.support == label)
    return _default(verdicts)


def _default[V: VerdictRow](verdicts: Sequence[V]) -> V | None:
    # Imported judgements (another tool, a judge model) are not reviewers of the project.
    return _newest(verdicts, Origin.ADJUDICATION) or _newest(verdicts, Origin.REVIEW)


def current[V: VerdictRow](verdicts: Sequence[V]) -> V | None:
    """The verdict a claim shows as its own: the default source's, else the newest imported
    judgement (shown with its origin, though the default figures do not count it)."""
    return _default(verdicts) or _newest(verdicts, Origin.IMPORTED)
