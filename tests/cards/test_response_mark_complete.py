from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from cards.models import Origin, ResponseReview
from cards.services.claims import claim_create, claim_revise
from cards.services.reviews import response_mark_complete
from tests.cards.conftest import WINDOW, page_for, response_for
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def test_it_marks_the_decomposition_complete(claim, replay_response, reviewer):
    assert not page_for(reviewer, "q017-r3", "Q-017").review_complete
    review = response_mark_complete(response=replay_response, author=reviewer)
    assert (review.complete, review.author, review.annotator, review.origin) == (
        True,
        reviewer,
        "alice",
        Origin.REVIEW,
    )
    assert page_for(reviewer, "q017-r3", "Q-017").review_complete


def test_it_refuses_an_answer_with_text_and_no_claim(replay_response, reviewer):
    with pytest.raises(ValidationError) as refused:
        response_mark_complete(response=replay_response, author=reviewer)
    assert "complete" in refused.value.message_dict
    assert not ResponseReview.objects.filter(response=replay_response).exists()


def test_it_refuses_an_answer_whose_every_claim_was_withdrawn(claim, replay_response, reviewer):
    claim_revise(claim=claim, author=reviewer, seen_claim_seq=1, withdrawn=True, reason="Dup.")
    with pytest.raises(ValidationError):
        response_mark_complete(response=replay_response, author=reviewer)


def test_an_empty_abstention_needs_no_claim_to_be_complete(reviewer):
    lines = synthetic_bundle(run_id="silent", cases=1, claims=0)
    lines[-1] |= {"text": "", "abstained": True, "citations": []}
    del lines[-1]["claims"]
    import_bytes(bundle_bytes(*lines))
    response = response_for("silent")
    # Already reviewed by definition (metrics.md), and the mark is accepted too.
    assert page_for(reviewer, "silent", "case-0").review_complete
    assert response_mark_complete(response=response, author=reviewer).complete


def test_a_reopen_makes_it_unreviewed_again(claim, replay_response, reviewer, second_reviewer):
    response_mark_complete(response=replay_response, author=reviewer)
    reopened = response_mark_complete(
        response=replay_response, author=second_reviewer, complete=False
    )
    assert not reopened.complete
    assert not page_for(reviewer, "q017-r3", "Q-017").review_complete
    # The earlier mark stays: the newest row counts.
    assert ResponseReview.objects.filter(response=replay_response).count() == 2


def test_a_reopened_answer_with_claims_can_be_completed_again(claim, replay_response, reviewer):
    response_mark_complete(response=replay_response, author=reviewer)
    response_mark_complete(response=replay_response, author=reviewer, complete=False)
    claim_create(response=replay_response, author=reviewer, text="More.", spans=[WINDOW])
    response_mark_complete(response=replay_response, author=reviewer)
    assert page_for(reviewer, "q017-r3", "Q-017").review_complete


def test_it_refuses_someone_from_another_project(claim, replay_response, outsider):
    with pytest.raises(PermissionDenied):
        response_mark_complete(response=replay_response, author=outsider)
