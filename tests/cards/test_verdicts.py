"""Which verdict counts, over plain rows newest first (the rules of cards/verdicts.py)."""

from __future__ import annotations

from typing import NamedTuple

from cards.annotators import Annotator
from cards.models import Origin
from cards.verdicts import NO_CONSENSUS, Source, counted, current


class Row(NamedTuple):
    annotator: str
    origin: str
    support: str


IMPORTED = Row("judge", Origin.IMPORTED, "partial")
ALICE = Row("alice", Origin.REVIEW, "supported")
ALICE_BEFORE = Row("alice", Origin.REVIEW, "unsupported")
BOB = Row("bob", Origin.REVIEW, "unsupported")
LEAD = Row("lead", Origin.ADJUDICATION, "not_assessable")


def test_the_current_verdict_is_the_adjudication_whatever_came_after():
    assert current([ALICE, LEAD, BOB]) is LEAD


def test_the_current_verdict_is_else_the_newest_reviewer_verdict():
    assert current([IMPORTED, ALICE, BOB]) is ALICE


def test_the_current_verdict_falls_back_to_an_imported_judgement():
    assert current([IMPORTED]) is IMPORTED
    assert current([]) is None


def test_the_default_figures_do_not_count_an_imported_judgement():
    assert counted([IMPORTED], Source()) is None
    assert counted([IMPORTED, ALICE], Source()) is ALICE


def test_one_annotator_is_their_newest_verdict_never_an_adjudication():
    alice = Source.of(Annotator("alice"))
    assert counted([ALICE, ALICE_BEFORE], alice) is ALICE
    assert counted([LEAD], Source.of(Annotator("lead"))) is None


def test_consensus_is_a_strict_majority_of_each_annotators_newest_label():
    # alice's older unsupported does not make a majority with bob.
    assert counted([ALICE, BOB, ALICE_BEFORE], Source("consensus")) == NO_CONSENSUS
    assert (
        counted([ALICE, BOB, IMPORTED._replace(support="supported")], Source("consensus")) is ALICE
    )
    assert counted([LEAD], Source("consensus")) is None
