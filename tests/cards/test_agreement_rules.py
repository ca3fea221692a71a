"""Agreement between annotators (metrics.md, "Agreement between annotators").

`run_agreement` reads verdicts from the database, so these rows go through the smallest
fixture: three claims split out of q017-r3 and labelled by alice, bob and carol.
"""

from __future__ import annotations

import pytest

from cards.agreement import Agreement, Disagreeing, annotators_of, run_agreement
from cards.models import Claim
from cards.services.claims import claim_create, claim_revise
from cards.services.reviews import response_mark_complete
from cards.stats import Proportion
from replay.models import Run
from tests.cards.conftest import FINAL_SALE, REFUND_START, WINDOW, judge, member
from tests.conftest import import_fixture


@pytest.fixture
def claims(replay_response, reviewer, second_reviewer):
    """c1 both agree (supported), c2 they disagree, c3 only alice labelled."""
    made = {}
    for key, span in (("c1", WINDOW), ("c2", FINAL_SALE), ("c3", REFUND_START)):
        made[key] = claim_create(
            response=replay_response, author=reviewer, text=f"Claim {key}.", spans=[span]
        )
    judge(made["c1"], reviewer, "supported", "alice on c1")
    judge(made["c1"], second_reviewer, "supported", "bob on c1")
    judge(made["c2"], reviewer, "partial", "alice on c2")
    judge(made["c2"], second_reviewer, "unsupported", "bob on c2")
    judge(made["c3"], reviewer, "supported", "alice on c3")
    return made


def agreement(*annotators: str):
    return run_agreement(run=Run.objects.get(run_id="q017-r3"), annotators=list(annotators))


def test_agreement_is_over_the_claims_both_annotators_labelled(claims):
    # "On the claims that two annotators … both labelled: raw agreement k / n"
    result = agreement("alice", "bob")
    assert result.claims == 2
    assert (result.raw.k, result.raw.n) == (1, 2)
    assert result.as_json()["raw_agreement"]["n"] == 2


def test_a_withdrawn_claim_is_left_out_of_agreement(claims, reviewer):
    # "Only the current state counts: the newest revision of each claim that is not withdrawn"
    c2 = claims["c2"]
    claim_revise(
        claim=c2, author=reviewer, seen_claim_seq=c2.revisions.order_by("-seq").first().seq,
        reason="Not a claim of the answer.", withdrawn=True,
    )  # fmt: skip
    result = agreement("alice", "bob")
    assert (result.claims, result.raw.k, result.raw.n) == (1, 1, 1)
    assert result.disagreeing == []


def test_the_confusion_table_is_4_by_4_for_two_annotators(claims, second_reviewer):
    judge(claims["c3"], second_reviewer, "supported", "bob on c3")
    confusion = agreement("alice", "bob").confusion
    labels = ["supported", "partial", "unsupported", "not_assessable"]
    assert list(confusion) == labels
    assert all(list(row) == labels for row in confusion.values())
    assert confusion["supported"]["supported"] == 2  # c1 and c3
    assert confusion["partial"]["unsupported"] == 1
    assert sum(sum(row.values()) for row in confusion.values()) == 3


def test_disagreements_are_listed_claim_by_claim_with_both_reasons(claims):
    [disagreement] = agreement("alice", "bob").disagreeing
    assert (disagreement.case_id, disagreement.claim_id) == ("Q-017", "c2")
    assert disagreement.text == "Claim c2."  # the claim as it reads now
    assert disagreement.labels == {
        "alice": ("partial", "alice on c2"),
        "bob": ("unsupported", "bob on c2"),
    }


def test_kappa_and_the_confusion_table_are_for_exactly_two_annotators(claims):
    carol = member("carol")
    judge(claims["c3"], carol, "unsupported", "carol on c3")
    result = agreement("alice", "bob", "carol")
    assert result.kappa is None and result.confusion is None
    # c1 (alice, bob agree), c2 (disagree), c3 (alice, carol disagree)
    assert (result.claims, result.raw.k) == (3, 1)
    assert result.alpha is not None
    assert len(result.disagreeing) == 2
    assert agreement("alice", "bob").kappa is not None


def test_an_adjudication_is_not_an_annotators_label(claims, lead):
    judge(claims["c3"], lead, "unsupported", "lead decides c3", adjudication=True)
    assert annotators_of(run=Run.objects.get(run_id="q017-r3")) == ["alice", "bob"]
    assert agreement("alice", "lead").claims == 0


def test_only_each_annotators_newest_label_counts(claims, second_reviewer):
    judge(claims["c2"], second_reviewer, "partial", "bob read it again")
    result = agreement("alice", "bob")
    assert (result.raw.k, result.raw.n) == (2, 2)
    assert result.kappa == 1.0


def test_agreement_is_written_in_the_cli_shape():
    # cli.md `run_agreement`: raw agreement as a proportion, κ and α rounded, counts of claims
    # and disagreements.
    result = Agreement(
        run_id="r1", annotators=["alice", "bob"], claims=4, raw=Proportion(3, 4),
        kappa=3 / 7, alpha=0.123456, confusion={"supported": {"supported": 3}},
        disagreeing=[Disagreeing("Q-1", "c2", "Claim.", {})],
    )  # fmt: skip
    assert result.as_json() == {
        "run_id": "r1",
        "annotators": ["alice", "bob"],
        "claims": 4,
        "raw_agreement": Proportion(3, 4).as_json(),
        "cohen_kappa": 0.4286,
        "krippendorff_alpha": 0.1235,
        "confusion": {"supported": {"supported": 3}},
        "disagreements": 1,
        "judges_vs_people": [],
    }
    undefined = Agreement("r1", ["a", "b", "c"], 0, Proportion(0, 0), None, None, None, [])
    assert undefined.as_json() == {
        "run_id": "r1", "annotators": ["a", "b", "c"], "claims": 0, "raw_agreement": None,
        "cohen_kappa": None, "krippendorff_alpha": None, "confusion": None, "disagreements": 0,
        "judges_vs_people": [],
    }  # fmt: skip


def test_agreement_is_over_the_claims_of_this_run_only(claims, reviewer, second_reviewer):
    import_fixture("q017-r1.jsonl")
    other = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-2")
    judge(other, reviewer, "supported", "alice on q017-r1")
    judge(other, second_reviewer, "unsupported", "bob on q017-r1")
    result = agreement("alice", "bob")
    assert (result.claims, len(result.disagreeing)) == (2, 1)


def test_without_a_choice_agreement_is_between_everyone_who_labelled(claims):
    # cli.md: `run_agreement RUN_ID [--annotators A B …]` "(default: all who labelled any)"
    result = run_agreement(run=Run.objects.get(run_id="q017-r3"))
    assert (result.run_id, result.annotators) == ("q017-r3", ["alice", "bob"])
    assert (result.raw.k, result.raw.n) == (1, 2)


def test_in_a_blind_project_a_label_revised_after_seeing_the_others_does_not_count(
    blind, claims, reviewer, second_reviewer
):
    # "in a project that reviews blind, a reviewer's blind verdict, the last one that reviewer
    # saved before they could see anyone else's verdict on that case; later revisions … do
    # not change agreement". alice's mark of her review opens the case to her.
    response_mark_complete(response=claims["c2"].response, author=reviewer)
    judge(claims["c2"], reviewer, "unsupported", "alice, having read bob")
    result = agreement("alice", "bob")
    assert (result.raw.k, result.raw.n) == (1, 2)
    [disagreement] = result.disagreeing
    assert disagreement.labels["alice"] == ("partial", "alice on c2")
