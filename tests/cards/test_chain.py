"""Each claim's claim and verdict revisions form one hash chain, checked from the rows alone."""

from __future__ import annotations

from cards.chain import seal
from cards.models import Claim
from cards.services import claim_create, claim_revise
from tests.cards.conftest import (
    NO_DURATION,
    REFUND_START,
    assert_chain_holds,
    chain_of,
    judge,
    response_for,
)


def test_a_fresh_claim_starts_a_chain_of_one(claim):
    assert assert_chain_holds(claim) == 1
    (revision, document) = chain_of(claim)[0]
    assert revision.prev_sha256 is None
    assert document["type"] == "claim_revision"
    assert (document["project"], document["run_id"], document["case_id"]) == (
        "demo",
        "q017-r3",
        "Q-017",
    )


def test_claim_and_verdict_revisions_share_one_counter(claim, reviewer, second_reviewer, lead):
    judge(claim, reviewer, "partial", "First.")
    judge(
        claim, second_reviewer, "unsupported", "Bob.", contradicts=True, diagnosis="locator_drift"
    )
    claim_revise(claim=claim, author=lead, seen_claim_seq=1, text="Rewritten.", reason="Clearer.")
    judge(claim, reviewer, "supported", "Again.", citation_relevance={}, note="n")
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=4, withdrawn=True, reason="Dup.")
    assert assert_chain_holds(claim) == 6
    kinds = [document["type"] for _, document in chain_of(claim)]
    assert kinds == [
        "claim_revision",
        "verdict_revision",
        "verdict_revision",
        "claim_revision",
        "verdict_revision",
        "claim_revision",
    ]


def test_an_adjudication_is_a_link_of_the_same_chain(claim, reviewer, second_reviewer, lead):
    judge(claim, reviewer, "supported", "Alice.")
    judge(claim, second_reviewer, "unsupported", "Bob.")
    adjudication = judge(claim, lead, "partial", "Lead decides.", adjudication=True)
    assert adjudication.seq == 4
    assert assert_chain_holds(claim) == 4
    assert chain_of(claim)[-1][1]["origin"] == "adjudication"


def test_local_revisions_extend_an_imported_chain(reviewer, demo_runs):
    claim = Claim.objects.get(response=response_for("q017-r1"), key="C-017-2")
    assert assert_chain_holds(claim) == 2  # imported: the claim, then seed-protocol's judgement
    judge(claim, reviewer, "partial", "The 30-day window drops its conditions.")
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, text="30 days.", reason="Short.")
    assert assert_chain_holds(claim) == 4


def test_chains_of_different_claims_are_numbered_apart(replay_response, reviewer):
    one = claim_create(response=replay_response, author=reviewer, text="A.", spans=[REFUND_START])
    two = claim_create(response=replay_response, author=reviewer, text="B.", spans=[NO_DURATION])
    judge(one, reviewer)
    judge(two, reviewer, "not_assessable")
    judge(one, reviewer, "partial")
    assert assert_chain_holds(one) == 3
    assert assert_chain_holds(two) == 2
    assert two.revisions.get().prev_sha256 is None


def test_the_hash_covers_every_field_of_the_document(claim, reviewer):
    verdict = judge(claim, reviewer, "partial", "Because.")
    (_, first), (row, document) = chain_of(claim)
    assert row == verdict
    assert seal(document) == verdict.sha256
    for field, other in [
        ("support", "supported"),
        ("reason", "Because!"),
        ("author", "bob"),
        ("seq", 3),
        ("prev_sha256", None),
        ("created_at", "2026-01-01T00:00:00Z"),
        ("claim_id", "c2"),
    ]:
        assert seal(document | {field: other}) != verdict.sha256, field
    assert seal(first | {"text": "Changed."}) != claim.revisions.get().sha256
