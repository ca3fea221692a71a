from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from cards.agreement import run_agreement
from cards.models import Claim
from cards.services.verdicts import verdict_save


def judge(claim, user, support, reason="Because the passage says so."):
    seq = claim.revisions.order_by("-seq").values_list("seq", flat=True).first()
    mine = (
        claim.verdicts.filter(author=user).order_by("-seq").values_list("seq", flat=True).first()
    )
    return verdict_save(
        claim=claim, author=user, support=support, reason=reason,
        seen_claim_seq=seq, seen_own_seq=mine,
    )  # fmt: skip


def test_agreement_between_two_reviewers(labelled):
    agreement = run_agreement(run=labelled, annotators=["alice", "bob"])
    assert agreement.claims == 4
    assert (agreement.raw.k, agreement.raw.n) == (3, 4)
    assert agreement.confusion["partial"]["supported"] == 1
    assert agreement.confusion["unsupported"]["unsupported"] == 3
    # observed 3/4; by chance (3/4)·(3/4) = 9/16; κ = (12/16 − 9/16) / (7/16) = 3/7
    assert agreement.kappa == pytest.approx(3 / 7)
    [disagreement] = agreement.disagreeing
    assert disagreement.claim_id == "C-017-2"
    assert disagreement.labels["alice"] == ("partial", "alice: C-017-2")
    assert disagreement.labels["bob"] == ("supported", "bob: C-017-2")


def test_agreement_of_people_with_an_imported_judge_is_the_same_computation(labelled):
    agreement = run_agreement(run=labelled, annotators=["alice", "seed-protocol"])
    assert agreement.claims == 4
    assert (agreement.raw.k, agreement.raw.n) == (4, 4)
    three = run_agreement(run=labelled)
    assert three.annotators == ["alice", "bob", "seed-protocol"]
    assert three.kappa is None and three.confusion is None
    assert three.alpha is not None


def test_only_a_newest_label_counts(labelled, reviewer):
    claim = Claim.objects.get(response__run=labelled, key="C-017-2")
    judge(claim, reviewer, "supported", "alice changed her mind after re-reading D-01")
    agreement = run_agreement(run=labelled, annotators=["alice", "bob"])
    assert (agreement.raw.k, agreement.raw.n) == (4, 4)


def call(*args) -> dict:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue())


def test_run_metrics_prints_the_cli_json(demo_runs):
    figures = call(
        "run_metrics", "q017-r1", "--project", "demo", "--annotator", "seed-protocol", "--json"
    )
    assert figures["verdicts_from"] == "annotator:seed-protocol"
    response = figures["per_response"][0]
    assert response["support"] == {"k": 0, "n": 4, "value": 0.0, "low": 0.0, "high": 0.4899}
    assert response["prechecks"]["claims"] == {"C-017-4": ["claim_without_citation"]}
    assert figures["run"]["micro"]["coverage"]["n"] == 3
    assert figures["run"]["macro"]["support"] == {"value": 0.0, "cases": 1}


def test_run_metrics_consensus_counts_claims_without_a_majority(labelled):
    figures = call("run_metrics", "q017-r1", "--project", "demo", "--consensus")
    verdicts = figures["per_response"][0]["verdicts"]
    # C-017-2: alice partial, bob supported, seed-protocol partial → partial by 2 of 3.
    assert verdicts["partial"] == 1
    assert verdicts["no_consensus"] == 0


def test_run_agreement_prints_the_cli_json(labelled):
    agreement = call(
        "run_agreement", "q017-r1", "--project", "demo", "--annotators", "alice", "bob"
    )
    assert agreement["claims"] == 4
    assert agreement["disagreements"] == 1
    assert agreement["raw_agreement"]["k"] == 3
    assert agreement["cohen_kappa"] == 0.4286


def test_an_unknown_run_is_an_error_with_exit_1(demo_runs):
    with pytest.raises(CommandError, match="does not exist") as caught:
        call("run_metrics", "nope", "--project", "demo")
    assert caught.value.returncode == 1
