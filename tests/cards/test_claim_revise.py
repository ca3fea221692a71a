from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from cards.models import ClaimKind, ClaimRevision
from cards.services.claims import claim_create, claim_revise
from cards.services.guards import StaleCard
from tests.cards.conftest import (
    CURRENT_POLICY,
    D01,
    D02,
    NO_DURATION,
    OLD_POLICY,
    REFUND_START,
    judge,
    page_for,
)


def test_a_rewrite_is_a_new_revision_and_the_old_one_stays(claim, second_reviewer):
    revision = claim_revise(
        claim=claim,
        author=second_reviewer,
        seen_claim_seq=1,
        text="Final-sale items cannot be returned.",
        reason="Say what the answer says, not the policy.",
    )
    assert (revision.seq, revision.author, revision.annotator) == (2, second_reviewer, "bob")
    assert revision.reason == "Say what the answer says, not the policy."
    first, second = claim.revisions.order_by("seq")
    assert first.text == "Final-sale items are excluded from returns."
    assert second.text == "Final-sale items cannot be returned."
    assert second.prev_sha256 == first.sha256
    # What was not changed is carried over.
    assert (second.spans, second.citations, second.facts) == (first.spans, [D01], ["G2"])


def test_a_withdrawal_is_a_new_revision_with_its_reason(claim, reviewer):
    revision = claim_revise(
        claim=claim, author=reviewer, seen_claim_seq=1, withdrawn=True, reason="Duplicate of c2."
    )
    assert revision.withdrawn
    assert revision.text == "Final-sale items are excluded from returns."
    assert claim.revisions.count() == 2
    assert not claim.revisions.get(seq=1).withdrawn


def test_a_withdrawn_claim_can_be_restored(claim, reviewer):
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, withdrawn=True, reason="Oops.")
    restored = claim_revise(
        claim=claim, author=reviewer, seen_claim_seq=2, withdrawn=False, reason="It was a claim."
    )
    assert not restored.withdrawn
    assert restored.seq == 3


@pytest.mark.parametrize("reason", ["", "   ", "\n\t ", None])
def test_it_refuses_a_blank_reason(claim, reviewer, reason):
    with pytest.raises(ValidationError) as refused:
        claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, text="X.", reason=reason)
    assert "reason" in refused.value.message_dict
    assert claim.revisions.count() == 1


def test_it_refuses_a_withdrawal_without_a_reason(claim, reviewer):
    with pytest.raises(ValidationError):
        claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, withdrawn=True, reason=" ")
    assert claim.revisions.count() == 1


def test_it_refuses_a_blank_new_text(claim, reviewer):
    with pytest.raises(ValidationError) as refused:
        claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, text="  ", reason="Why.")
    assert "text" in refused.value.message_dict


def test_it_relinks_citations_facts_gaps_and_kind(claim, reviewer):
    revision = claim_revise(
        claim=claim,
        author=reviewer,
        seen_claim_seq=1,
        kind=ClaimKind.ABSTENTION,
        spans=[NO_DURATION, REFUND_START],
        citations=[D02, D01, D02],
        facts=[],
        gaps=["X1"],
        reason="It is the abstention about processing time.",
    )
    assert revision.kind == "abstention"
    assert revision.spans == [REFUND_START, NO_DURATION]
    assert revision.citations == [D02, D01]
    assert (revision.facts, revision.gaps) == ([], ["X1"])


@pytest.mark.parametrize(
    ("links", "field"),
    [
        ({"facts": ["G7"]}, "facts"),
        ({"gaps": ["X2"]}, "gaps"),
        ({"citations": ["D1@v3#p1"]}, "citations"),
        ({"kind": "opinion"}, "kind"),
        ({"spans": [[0, 999]]}, "spans"),
    ],
)
def test_it_refuses_an_unknown_link(claim, reviewer, links, field):
    with pytest.raises(ValidationError) as refused:
        claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, reason="Relink.", **links)
    assert field in refused.value.message_dict
    assert claim.revisions.count() == 1


def test_it_refuses_a_stale_form_and_keeps_the_other_revision(claim, reviewer, second_reviewer):
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
    with pytest.raises(StaleCard, match="bob changed this claim since you opened it"):
        claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, text="A.", reason="A.")
    assert list(claim.revisions.order_by("seq").values_list("text", flat=True)) == [
        "Final-sale items are excluded from returns.",
        "B.",
    ]


def test_a_verdict_in_between_does_not_make_a_claim_form_stale(claim, reviewer, second_reviewer):
    judge(claim, second_reviewer)
    revision = claim_revise(
        claim=claim, author=reviewer, seen_claim_seq=1, text="A.", reason="Clearer."
    )
    assert revision.seq == 3


def test_it_refuses_someone_from_another_project(claim, outsider):
    with pytest.raises(PermissionDenied):
        claim_revise(claim=claim, author=outsider, seen_claim_seq=1, text="X.", reason="X.")
    assert ClaimRevision.objects.filter(claim=claim).count() == 1


def test_the_page_shows_the_newest_text_and_hides_a_withdrawn_claim_from_the_answer(
    claim, reviewer
):
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, text="Rewritten.", reason="R.")
    card = page_for(reviewer, "q017-r3", "Q-017").card(claim.key)
    assert card.revision.text == "Rewritten."
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=2, withdrawn=True, reason="W.")
    page = page_for(reviewer, "q017-r3", "Q-017")
    assert page.card(claim.key).withdrawn
    assert not any(piece.claims for piece in page.pieces)


# --- citations beyond the retrieved list (bundle.md: a claim may cite any declared passage) ---


def test_a_rewrite_keeps_an_imported_citation_the_response_never_retrieved(aside_claim, reviewer):
    revision = claim_revise(
        claim=aside_claim, author=reviewer, seen_claim_seq=1, text="30 days.", reason="Shorter."
    )
    assert revision.citations == [OLD_POLICY]


def test_a_relink_may_keep_an_imported_citation_and_add_a_retrieved_one(aside_claim, reviewer):
    revision = claim_revise(
        claim=aside_claim, author=reviewer, seen_claim_seq=1,
        citations=[OLD_POLICY, CURRENT_POLICY], reason="The marker cites v2.",
    )  # fmt: skip
    assert revision.citations == [OLD_POLICY, CURRENT_POLICY]


def test_a_reviewer_may_cite_any_passage_of_the_runs_snapshot(aside_claim, reviewer):
    claim = claim_create(
        response=aside_claim.response, author=reviewer, text="30 days, says v1.",
        spans=[[0, 34]], citations=[OLD_POLICY],
    )  # fmt: skip
    assert claim.revisions.get().citations == [OLD_POLICY]


def test_it_refuses_a_passage_of_another_snapshot(claim, aside_claim, reviewer):
    # OLD_POLICY is in the project, but not in the snapshot q017-r3 searched.
    with pytest.raises(ValidationError) as refused:
        claim_revise(
            claim=claim, author=reviewer, seen_claim_seq=1, citations=[OLD_POLICY], reason="R."
        )
    assert refused.value.message_dict["citations"] == [
        f"Not a passage of the snapshot this run searched: {OLD_POLICY}."
    ]
