"""cards.figures.choose remembers which verdict counts per pattern of verdicts (annotator,
origin, label, in order): whatever it was asked before, its answer for a claim must be
what cards.verdicts.counted says of that claim's own verdicts."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from cards.annotators import Annotator
from cards.figures import ClaimState, Verdict, VerdictView, choose
from cards.verdicts import NO_CONSENSUS, Source, counted

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
WHO = [("alice", "review"), ("bob", "review"), ("lead", "adjudication"), ("judge", "imported")]
LABELS = ["supported", "partial", "unsupported"]
SOURCES = [
    Source(),
    Source("consensus"),
    Source.of(Annotator("alice")),
    Source.of(Annotator("judge", imported=True)),
]


def claim(rows: list[tuple[str, str, str]], *, detail: str, sighted=None) -> ClaimState:
    """Verdicts newest first; `detail` tells this claim's association, relevance and
    diagnosis apart from another claim's with the same pattern."""
    verdicts = [
        Verdict(name, origin, label, detail, {"p": detail}, detail, EPOCH - timedelta(hours=i))
        for i, (name, origin, label) in enumerate(rows)
    ]
    return ClaimState("c", "factual", "A claim.", ["p"], [], [], False, verdicts, sighted or {})


def expected(state: ClaimState, source: Source) -> VerdictView | None:
    chosen = counted(state.verdicts, source, sighted=state.sighted)
    if chosen is None:
        return None
    if chosen == NO_CONSENSUS:
        return VerdictView(NO_CONSENSUS, "attached", {}, "")
    return VerdictView(chosen.support, chosen.association, chosen.relevance, chosen.diagnosis)


def test_choose_agrees_with_counted_on_every_pattern_of_up_to_three_verdicts():
    cells = [(name, origin, label) for (name, origin), label in itertools.product(WHO, LABELS)]
    patterns = [[]] + [list(p) for n in (1, 2, 3) for p in itertools.product(cells, repeat=n)]
    for detail in ("attached", "missing"):  # the second round is answered from memory
        for rows, source in itertools.product(patterns, SOURCES):
            state = claim(rows, detail=detail)
            assert choose(state, source) == expected(state, source), (rows, source)


def test_a_claim_whose_annotators_saw_others_is_never_answered_from_memory():
    rows = [("alice", "review", "partial"), ("bob", "review", "supported")]
    source = Source("consensus")
    # Bob could see alice's verdict before he saved his: his is an informed revision, so
    # alice's label is the only one and the consensus; with both labels there is none.
    seen = {Annotator("bob"): EPOCH - timedelta(hours=2)}
    open_claim = claim(rows, detail="attached")
    blind_claim = claim(rows, detail="attached", sighted=seen)
    assert choose(open_claim, source).support == NO_CONSENSUS
    assert choose(blind_claim, source) == expected(blind_claim, source)
    assert choose(blind_claim, source).support == "partial"
