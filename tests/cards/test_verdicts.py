"""Which verdict counts, over plain rows newest first (the rules of cards/verdicts.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

import pytest

from cards.annotators import Annotator, Roster
from cards.models import Origin
from cards.verdicts import NO_CONSENSUS, Source, counted, current, newest_labels

NOT_BLIND: dict = {}


def at(minute: int) -> datetime:
    return datetime(2026, 11, 1, 12, minute, tzinfo=UTC)


class Row(NamedTuple):
    annotator: str
    origin: str
    support: str
    created_at: datetime = at(0)


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
    assert counted([IMPORTED], Source(), sighted=NOT_BLIND) is None
    assert counted([IMPORTED, ALICE], Source(), sighted=NOT_BLIND) is ALICE


def test_one_annotator_is_their_newest_verdict_never_an_adjudication():
    alice = Source.of(Annotator("alice"))
    assert counted([ALICE, ALICE_BEFORE], alice, sighted=NOT_BLIND) is ALICE
    assert counted([LEAD], Source.of(Annotator("lead")), sighted=NOT_BLIND) is None


def test_consensus_is_a_strict_majority_of_each_annotators_newest_label():
    # alice's older unsupported does not make a majority with bob.
    assert (
        counted([ALICE, BOB, ALICE_BEFORE], Source("consensus"), sighted=NOT_BLIND) == NO_CONSENSUS
    )
    assert (
        counted(
            [ALICE, BOB, IMPORTED._replace(support="supported")],
            Source("consensus"),
            sighted=NOT_BLIND,
        )
        is ALICE
    )
    assert counted([LEAD], Source("consensus"), sighted=NOT_BLIND) is None


# Blind review: alice saved a placeholder at 12:01, could see bob's verdict from 12:05
# (her own completion mark), and copied bob's label at 12:06.
PLACEHOLDER = Row("alice", Origin.REVIEW, "not_assessable", at(1))
COPY = Row("alice", Origin.REVIEW, "unsupported", at(6))
BOB_AT_2 = Row("bob", Origin.REVIEW, "unsupported", at(2))
ALICE_SAW = {Annotator("alice"): at(5)}


def test_an_annotators_label_is_their_last_verdict_before_they_could_see_anyone_elses():
    labels = newest_labels([COPY, BOB_AT_2, PLACEHOLDER], sighted=ALICE_SAW)
    assert labels == {Annotator("alice"): PLACEHOLDER, Annotator("bob"): BOB_AT_2}


def test_without_a_moment_of_sight_the_newest_label_counts():
    labels = newest_labels([COPY, BOB_AT_2, PLACEHOLDER], sighted=NOT_BLIND)
    assert labels[Annotator("alice")] is COPY


def test_an_annotator_whose_every_verdict_is_informed_has_no_label():
    assert newest_labels([COPY, BOB_AT_2], sighted=ALICE_SAW) == {Annotator("bob"): BOB_AT_2}


def test_a_verdict_saved_at_the_moment_of_sight_is_informed():
    exactly = COPY._replace(created_at=at(5))
    assert newest_labels([exactly], sighted=ALICE_SAW) == {}


def test_consensus_counts_blind_labels_so_a_copy_makes_no_majority():
    carol = Row("carol", Origin.REVIEW, "supported", at(3))
    verdicts = [COPY, carol, BOB_AT_2, PLACEHOLDER]
    assert counted(verdicts, Source("consensus"), sighted=NOT_BLIND) is COPY
    assert counted(verdicts, Source("consensus"), sighted=ALICE_SAW) == NO_CONSENSUS


def test_one_annotators_figures_still_read_their_newest_verdict():
    alice = Source.of(Annotator("alice"))
    assert counted([COPY, BOB_AT_2, PLACEHOLDER], alice, sighted=ALICE_SAW) is COPY


# Which verdicts a figure reads, as written on a page (`?source=`) or a command line
# (metrics.md: "default", "`annotator NAME`", "`consensus`"; cli.md: `verdicts_from` is
# "default" | "annotator:NAME" | "consensus"). `key` is the label's project-independent form
# (caches). In this project alice is an account; judge is only an imported annotator.
ROSTER = Roster(accounts=frozenset({"alice"}))
ALICE_ACCOUNT, JUDGE = Annotator("alice"), Annotator("judge", imported=True)
IMPORTED_ALICE = Annotator("alice", imported=True)

SOURCE_ROWS = [
    pytest.param(None, ("default", None, "default", "default"), id="nothing-is-default"),
    pytest.param("default", ("default", None, "default", "default"), id="default"),
    pytest.param("consensus", ("consensus", None, "consensus", "consensus"), id="consensus"),
    pytest.param(
        "annotator:alice",
        ("annotator", ALICE_ACCOUNT, "annotator:alice", "annotator:alice"),
        id="annotator-an-account",
    ),
    pytest.param(
        "annotator:judge",
        ("annotator", JUDGE, "annotator:judge", "annotator:imported:judge"),
        id="annotator-an-imported-annotator-by-its-bare-name",
    ),
    pytest.param(
        "annotator:imported:alice",
        ("annotator", IMPORTED_ALICE, "annotator:imported:alice", "annotator:imported:alice"),
        id="annotator-the-imported-namesake-of-an-account",
    ),
    pytest.param("annotator:", ("default", None, "default", "default"), id="no-name-is-default"),
    pytest.param("Consensus", ("default", None, "default", "default"), id="unknown-is-default"),
]


def described(source: Source) -> tuple:
    return (source.mode, source.annotator, source.label, source.key)


@pytest.mark.parametrize(("written", "expected"), SOURCE_ROWS)
def test_a_verdict_source_read_from_its_label(written, expected):
    assert described(Source.parse(written, roster=ROSTER)) == expected


@pytest.mark.parametrize(
    ("annotator", "consensus", "expected"),
    [
        (None, False, ("default", None, "default", "default")),
        (None, True, ("consensus", None, "consensus", "consensus")),
        ("alice", False, ("annotator", ALICE_ACCOUNT, "annotator:alice", "annotator:alice")),
        ("judge", False, ("annotator", JUDGE, "annotator:judge", "annotator:imported:judge")),
    ],
    ids=["neither-option", "--consensus", "--annotator-alice", "--annotator-judge"],
)
def test_a_verdict_source_read_from_the_command_line(annotator, consensus, expected):
    source = Source.from_options(annotator=annotator, consensus=consensus, roster=ROSTER)
    assert described(source) == expected


def test_one_annotators_source_is_named_as_in_the_project_else_by_its_key():
    assert Source.of(IMPORTED_ALICE, roster=ROSTER).label == "annotator:imported:alice"
    assert Source.of(JUDGE, roster=ROSTER).label == "annotator:judge"
    assert Source.of(JUDGE).label == "annotator:imported:judge"
