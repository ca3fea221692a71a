"""Blind double review: a reviewer sees others' verdicts on a claim only after saving their own."""

from __future__ import annotations

import json

from django.urls import reverse

from cards.services import response_mark_complete
from tests.cards.conftest import judge, loaded_form, page_for, verdict_url

BOBS_REASON = "Bob: the passage is about another store."
CASE = "/p/demo/runs/q017-r3/cases/Q-017/"


def test_a_reviewer_does_not_see_another_reviewers_verdict_before_saving(
    blind, claim, reviewer, second_reviewer
):
    judge(claim, second_reviewer, "unsupported", BOBS_REASON)
    page = page_for(reviewer, "q017-r3", "Q-017")
    assert page.blind
    card = page.card(claim.key)
    assert (card.verdicts, card.current, card.mine, card.hidden_count) == ([], None, None, 1)
    assert [entry.kind for entry in card.history] == ["claim"]
    # The answer is not coloured by the hidden verdict either.
    assert {piece.support for piece in page.pieces} == {""}


def test_the_page_html_holds_nothing_of_the_hidden_verdict(
    client, blind, claim, reviewer, second_reviewer
):
    judge(claim, second_reviewer, "unsupported", BOBS_REASON, diagnosis="citation_conflicts")
    client.force_login(reviewer)
    content = client.get(CASE).content.decode()
    assert BOBS_REASON not in content
    assert "verdict-unsupported" not in content  # the card's colour and the verdict list
    assert "verdict-label support-unsupported" not in content
    assert "citation conflicts" not in content
    assert "not judged by you yet" in content
    assert "1 verdict hidden until you save your own (blind review)." in content
    assert "blind review: others' verdicts appear after you save yours" in content


def test_saving_my_own_verdict_reveals_the_others(client, blind, claim, reviewer, second_reviewer):
    judge(claim, second_reviewer, "unsupported", BOBS_REASON)
    client.force_login(reviewer)
    data = loaded_form(client, "q017-r3", "Q-017", claim.key)
    response = client.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "supported", "reason": "Alice: D-01 excludes final-sale items."},
        HTTP_HX_REQUEST="true",
    )
    # Bob's verdict arrived after Alice loaded her form: blind review must not call it stale.
    assert response.status_code == 200
    content = response.content.decode()
    assert BOBS_REASON in content
    assert "Alice: D-01 excludes final-sale items." in content
    card = page_for(reviewer, "q017-r3", "Q-017").card(claim.key)
    assert [v.annotator for v in card.verdicts] == ["alice", "bob"]
    assert card.hidden_count == 0


def test_imported_judgements_are_hidden_from_a_blind_reviewer_too(
    client, blind, reviewer, demo_runs
):
    client.force_login(reviewer)
    content = client.get(reverse("case_detail", args=["demo", "q017-r1", "Q-017"])).content
    assert b"seed-protocol" not in content
    assert b"The passage explicitly excludes final-sale items" not in content
    card = page_for(reviewer, "q017-r1", "Q-017").card("C-017-1")
    assert card.hidden_count == 1


def test_a_lead_sees_every_verdict_without_saving(client, blind, claim, lead, second_reviewer):
    judge(claim, second_reviewer, "unsupported", BOBS_REASON)
    page = page_for(lead, "q017-r3", "Q-017")
    assert not page.blind
    card = page.card(claim.key)
    assert ([v.reason for v in card.verdicts], card.hidden_count) == ([BOBS_REASON], 0)
    client.force_login(lead)
    assert BOBS_REASON in client.get(CASE).content.decode()


def test_without_blind_review_a_reviewer_sees_every_verdict(
    client, claim, reviewer, second_reviewer
):
    judge(claim, second_reviewer, "unsupported", BOBS_REASON)
    card = page_for(reviewer, "q017-r3", "Q-017").card(claim.key)
    assert (card.current.reason, card.hidden_count) == (BOBS_REASON, 0)
    client.force_login(reviewer)
    assert BOBS_REASON in client.get(CASE).content.decode()


def test_the_run_figures_do_not_reveal_another_reviewers_verdict(
    client, blind, claim, replay_response, reviewer, second_reviewer
):
    judge(claim, second_reviewer, "unsupported", BOBS_REASON)
    response_mark_complete(response=replay_response, author=second_reviewer)
    client.force_login(reviewer)
    response = client.get("/p/demo/runs/q017-r3/figures.json?source=annotator:bob")
    if response.status_code == 200:
        (case,) = json.loads(response.content)["per_response"]
        assert not (case["verdicts"] or {}).get("unsupported")
