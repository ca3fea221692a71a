"""Agreement between annotators on a run's claims (metrics.md, cli.md `run_agreement`)."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from cards.annotators import Annotator, Roster, annotators_of, roster_of
from cards.blind import sightings
from cards.models import ClaimRevision, VerdictRevision
from cards.run_state import kept
from cards.stats import Proportion, cohen_kappa, krippendorff_alpha_nominal
from cards.verdicts import LABELS, Source, counted, newest_labels
from replay.models import Run

__all__ = [
    "Agreement",
    "Disagreeing",
    "JudgeAgreement",
    "agreement_for",
    "annotators_of",
    "run_agreement",
]
PEOPLE = Source()  # the default source: a lead's adjudication, else the newest review


@dataclass
class Disagreeing:
    case_id: str
    claim_id: str
    text: str
    labels: dict[str, tuple[str, str]]  # annotator → (support, reason)


@dataclass
class JudgeDisagreeing:
    case_id: str
    claim_id: str
    text: str
    judge: tuple[str, str]  # (support, reason)
    people: tuple[str, str, str]  # (support, reason, who: a reviewer or the adjudicating lead)


@dataclass
class JudgeAgreement:
    """One imported judge against the people's verdicts (the default source), per claim."""

    judge: str
    raw: Proportion
    kappa: float | None
    confusion: dict[str, dict[str, int]]  # rows: the judge's label; columns: the people's
    disagreeing: list[JudgeDisagreeing]

    def as_json(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "claims": self.raw.n,
            "raw_agreement": self.raw.as_json(),
            "cohen_kappa": None if self.kappa is None else round(self.kappa, 4),
            "confusion": self.confusion,
            "disagreements": [
                {"case_id": d.case_id, "claim_id": d.claim_id, "judge": d.judge[0],
                 "people": d.people[0]}
                for d in self.disagreeing
            ],
        }  # fmt: skip


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
    judges: list[JudgeAgreement] = field(default_factory=list)  # each imported one chosen

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
            "judges_vs_people": [judge.as_json() for judge in self.judges],
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
    wanted = {a.name for a in chosen}
    judges = [a for a in chosen if a.imported]
    # Every verdict of the run, once: the chosen annotators' labels, and for each judge
    # its label beside the people's verdict on the same claim.
    rows = (
        VerdictRevision.objects.filter(claim__response__run=run)
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
    paired: dict[Annotator, dict[int, tuple[Any, Any]]] = {judge: {} for judge in judges}
    for claim_id, group in itertools.groupby(rows, key=attrgetter("claim_id")):
        verdicts = list(group)
        labelled = [v for v in verdicts if v.annotator in wanted]
        if labelled:
            labels = newest_labels(labelled, sighted=clock.of(verdicts[0].claim__response_id))
            # A chosen name may be shared by an annotator who was not chosen: keep the chosen.
            newest[claim_id] = {
                names[a]: (labels[a].support, labels[a].reason) for a in chosen if a in labels
            }
        people = counted(verdicts, PEOPLE, sighted={}) if judges else None
        if people is not None:
            for judge in judges:
                label = counted(verdicts, Source.of(judge), sighted={})
                if label is not None:
                    paired[judge][claim_id] = (label, people)
    current = _current_claims({*newest, *(c for pairs in paired.values() for c in pairs)})
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
    judged = [_judge_agreement(names[judge], paired[judge], current) for judge in judges]
    return Agreement(
        run_id=run.run_id,
        annotators=[names[a] for a in chosen],
        claims=len(units),
        raw=Proportion(agreeing, len(units)),
        kappa=kappa,
        alpha=alpha,
        confusion=confusion,
        disagreeing=disagreeing,
        judges=judged,
    )


def agreement_for(*, run: Run, annotators: list[str], roster: Roster, state: str) -> Agreement:
    """`run_agreement`, kept per state of the run (`cards.run_state.runs_state`) and choice of
    annotators: it reads every verdict of the run (100,000 for 10,000 cases × 5 claims × 2
    annotators, over a second), so it is computed once per state, never on every view."""
    chosen = hashlib.sha256(repr(annotators).encode()).hexdigest()
    return kept(
        state=state,
        part=f"agreement:{chosen}",
        compute=lambda: run_agreement(run=run, annotators=annotators, roster=roster),
    )


def _current_claims(claim_ids: set[int]) -> dict[int, tuple[str, str, str, bool]]:
    """Each claim's (case_id, key, current text, withdrawn), in one query."""
    current: dict[int, tuple[str, str, str, bool]] = {}
    for claim_id, case_id, key, text, withdrawn in (
        ClaimRevision.objects.filter(claim_id__in=list(claim_ids))
        .order_by("claim_id", "-seq")
        .values_list(
            "claim_id", "claim__response__case__case_id", "claim__key", "text", "withdrawn"
        )
        .iterator(chunk_size=5000)
    ):
        current.setdefault(claim_id, (case_id, key, text, withdrawn))
    return current


def _judge_agreement(
    name: str,
    pairs: dict[int, tuple[Any, Any]],
    current: dict[int, tuple[str, str, str, bool]],
) -> JudgeAgreement:
    """A judge's labels against the people's on the current claims both labelled."""
    units = {cid: pair for cid, pair in pairs.items() if not current[cid][3]}
    confusion = {a: dict.fromkeys(LABELS, 0) for a in LABELS}
    for judge, people in units.values():
        confusion[judge.support][people.support] += 1
    disagreeing = [
        JudgeDisagreeing(
            current[cid][0],
            current[cid][1],
            current[cid][2],
            (judge.support, judge.reason),
            (people.support, people.reason, people.annotator),
        )
        for cid, (judge, people) in units.items()
        if judge.support != people.support
    ]
    disagreeing.sort(key=lambda d: (d.case_id, d.claim_id))
    return JudgeAgreement(
        judge=name,
        raw=Proportion(len(units) - len(disagreeing), len(units)),
        kappa=cohen_kappa([(judge.support, people.support) for judge, people in units.values()]),
        confusion=confusion,
        disagreeing=disagreeing,
    )
