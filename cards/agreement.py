"""Agreement between annotators on a run's claims (metrics.md, cli.md `run_agreement`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from cards.annotators import Roster, annotators_of, roster_of
from cards.blind import sightings
from cards.models import ClaimRevision, Origin, VerdictRevision
from cards.stats import Proportion, cohen_kappa, krippendorff_alpha_nominal
from cards.verdicts import LABELS, newest_labels
from replay.models import Run

__all__ = ["Agreement", "Disagreeing", "annotators_of", "run_agreement"]


@dataclass
class Disagreeing:
    case_id: str
    claim_id: str
    text: str
    labels: dict[str, tuple[str, str]]  # annotator → (support, reason)


@dataclass
class Agreement:
    run_id: str
    annotators: list[str]
    claims: int  # claims labelled by at least two of the annotators
    raw: Proportion
    kappa: float | None
    alpha: float | None
    confusion: dict[str, dict[str, int]] | None
    disagreeing: list[Disagreeing]

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "annotators": self.annotators,
            "claims": self.claims,
            "raw_agreement": self.raw.as_json(),
            "cohen_kappa": None if self.kappa is None else round(self.kappa, 4),
            "krippendorff_alpha": None if self.alpha is None else round(self.alpha, 4),
            "confusion": self.confusion,
            "disagreements": len(self.disagreeing),
        }


def run_agreement(
    *, run: Run, annotators: list[str] | None = None, roster: Roster | None = None
) -> Agreement:
    """Each chosen annotator's label on each current claim, by name as the roster writes it
    (default: all who labelled any); adjudications are not annotators."""
    roster = roster or roster_of(runs=[run])
    chosen = (
        list(dict.fromkeys(roster.resolve(name) for name in annotators))
        if annotators
        else list(roster.annotators)
    )
    names = {annotator: roster.name(annotator) for annotator in chosen}
    rows = (
        VerdictRevision.objects.filter(
            claim__response__run=run, annotator__in=sorted({a.name for a in chosen})
        )
        .exclude(origin=Origin.ADJUDICATION)
        .order_by("claim_id", "-seq")
        .values_list(
            "claim_id",
            "claim__response_id",
            "annotator",
            "origin",
            "support",
            "reason",
            "created_at",
            named=True,
        )
        .iterator(chunk_size=5000)
    )
    clock = sightings(run=run)
    newest: dict[int, dict[str, tuple[str, str]]] = {}
    for claim_id, group in itertools.groupby(rows, key=attrgetter("claim_id")):
        verdicts = list(group)
        labels = newest_labels(verdicts, sighted=clock.of(verdicts[0].claim__response_id))
        # A chosen name may be shared by an annotator who was not chosen: keep the chosen.
        newest[claim_id] = {
            names[a]: (labels[a].support, labels[a].reason) for a in chosen if a in labels
        }
    current = {}
    for claim_id, case_id, key, text, withdrawn in (
        ClaimRevision.objects.filter(claim_id__in=list(newest))
        .order_by("claim_id", "-seq")
        .values_list(
            "claim_id", "claim__response__case__case_id", "claim__key", "text", "withdrawn"
        )
        .iterator(chunk_size=5000)
    ):
        current.setdefault(claim_id, (case_id, key, text, withdrawn))
    units = {
        claim_id: labels
        for claim_id, labels in newest.items()
        if len(labels) >= 2 and not current[claim_id][3]
    }
    agreeing = sum(1 for labels in units.values() if len({s for s, _ in labels.values()}) == 1)
    kappa = confusion = None
    if len(chosen) == 2:
        first, second = (names[a] for a in chosen)
        pairs = [(labels[first][0], labels[second][0]) for labels in units.values()]
        kappa = cohen_kappa(pairs)
        confusion = {a: dict.fromkeys(LABELS, 0) for a in LABELS}
        for a, b in pairs:
            confusion[a][b] += 1
    alpha = krippendorff_alpha_nominal(
        [s for s, _ in labels.values()] for labels in units.values()
    )
    disagreeing = [
        Disagreeing(current[cid][0], current[cid][1], current[cid][2], labels)
        for cid, labels in units.items()
        if len({s for s, _ in labels.values()}) > 1
    ]
    disagreeing.sort(key=lambda d: (d.case_id, d.claim_id))
    return Agreement(
        run_id=run.run_id,
        annotators=[names[a] for a in chosen],
        claims=len(units),
        raw=Proportion(agreeing, len(units)),
        kappa=kappa,
        alpha=alpha,
        confusion=confusion,
        disagreeing=disagreeing,
    )
