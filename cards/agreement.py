"""Agreement between annotators on a run's claims (metrics.md, cli.md `run_agreement`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cards.models import ClaimRevision, Origin, VerdictRevision
from cards.stats import Proportion, cohen_kappa, krippendorff_alpha_nominal
from replay.models import Run

LABELS = ("supported", "partial", "unsupported", "not_assessable")


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


def annotators_of(*, run: Run) -> list[str]:
    return sorted(
        set(
            VerdictRevision.objects.filter(claim__response__run=run)
            .exclude(origin=Origin.ADJUDICATION)
            .values_list("annotator", flat=True)
        )
    )


def run_agreement(*, run: Run, annotators: list[str] | None = None) -> Agreement:
    """Newest label of each annotator on each current claim; adjudications are not annotators."""
    chosen = annotators or annotators_of(run=run)
    newest: dict[int, dict[str, tuple[str, str]]] = {}
    rows = (
        VerdictRevision.objects.filter(claim__response__run=run, annotator__in=chosen)
        .exclude(origin=Origin.ADJUDICATION)
        .order_by("claim_id", "-seq")
        .values_list("claim_id", "annotator", "support", "reason")
        .iterator(chunk_size=5000)
    )
    for claim_id, annotator, support, reason in rows:
        newest.setdefault(claim_id, {}).setdefault(annotator, (support, reason))
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
        first, second = chosen
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
        annotators=list(chosen),
        claims=len(units),
        raw=Proportion(agreeing, len(units)),
        kappa=kappa,
        alpha=alpha,
        confusion=confusion,
        disagreeing=disagreeing,
    )
