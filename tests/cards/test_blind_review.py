"""Blind review: a reviewer sees nothing of others' verdicts on a case until they have marked
their own review of it complete, or a lead unblinds it. Every page and fragment that shows a
verdict is requested here directly, as the blind reviewer, and must hold nothing of bob's."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from cards.models import ResponseReview, Unblinding
from cards.selectors import frozen_rows
from cards.services.claims import claim_create
from cards.services.reviews import response_mark_complete
from tests.cards.conftest import (
    REFUND_START,
    case_url,
    judge,
    loaded_form,
    page_for,
    verdict_url,
)

HTMX = {"HTTP_HX_REQUEST": "true"}
BOBS_REASON = "Bob: the passage is about another store."
BOBS_NOTE = "Bob wonders about the warehouse."
ALICES_REASON = "Alice: D-01 excludes final-sale items."
CASE = "/p/demo/runs/q017-r3/cases/Q-017/"
WHOLE = f"{CASE}?card=c1"  # the page with c1 whole (its verdicts, history and forms)
# What would betray bob's verdict: his words, his name, its label, colour and count.
LEAKS = (
    BOBS_REASON,
    BOBS_NOTE,
    "bob",
    "verdict-unsupported",
    "verdict-label support-unsupported",
    "claimed support-unsupported",
    ": unsupported",  # the answer's title on a claimed piece
    "citation conflicts",
    "verdict hidden",
    "verdicts hidden",
)


def url(name: str = "case_detail", *args: str) -> str:
    return case_url("q017-r3", "Q-017", name, *args)


def assert_blind(response, *statuses: int) -> str:
    assert response.status_code in (statuses or (200,)), response.status_code
    content = response.content.decode()
    # CSRF tokens are 64 random letters and digits: one held "bob" once (a test failed).
    shown = CSRF_TOKEN.sub("", content)
    for leak in LEAKS:
        assert leak not in shown, leak
    return content


CSRF_TOKEN = re.compile(r"(?<=[\"'])[A-Za-z0-9]{64}(?=[\"'])")


def flashes(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


@pytest.fixture
def bobs_verdict(blind, claim, second_reviewer):
    """bob judged alice's claim c1 unsupported, with a diagnosis and a note."""
    return judge(
        claim, second_reviewer, "unsupported", BOBS_REASON,
        diagnosis="citation_conflicts", note=BOBS_NOTE,
    )  # fmt: skip


@pytest.fixture
def alice(client, reviewer, bobs_verdict):
    """alice, logged in, who has saved her own verdict on c1 but not marked her review."""
    client.force_login(reviewer)
    judge(bobs_verdict.claim, reviewer, "supported", ALICES_REASON)
    return client


# --- what the page holds -------------------------------------------------------------------


def test_a_reviewer_sees_nothing_of_another_reviewers_verdict(
    blind, claim, reviewer, bobs_verdict
):
    page = page_for(reviewer, "q017-r3", "Q-017")
    assert page.blind
    card = page.card(claim.key)
    assert (card.verdicts, card.current, card.mine) == ([], None, None)
    assert [entry.kind for entry in card.history] == ["claim"]
    assert card.head_seq == 1  # the hidden verdict's place in the chain is not given away
    assert {piece.support for piece in page.pieces} == {""}


def test_saving_my_own_verdict_does_not_reveal_the_others(alice, claim, reviewer):
    card = page_for(reviewer, "q017-r3", "Q-017").card(claim.key)
    assert [v.reason for v in card.verdicts] == [ALICES_REASON]
    assert card.current.annotator == "alice"
    content = assert_blind(alice.get(WHOLE))
    assert ALICES_REASON in content
    assert "others' verdicts on this case appear once you mark your review complete" in content
    # The compact card: my label and my reason's first line, nobody else's.
    compact = assert_blind(alice.get(CASE))
    assert "You: <strong" in compact and ALICES_REASON in compact


def test_the_history_shows_no_chain_numbers_that_count_the_hidden_verdicts(alice):
    content = assert_blind(alice.get(WHOLE))
    # Claim revision 1, bob's verdict 2, alice's 3: numbering would show one was left out.
    assert '<span class="mono small">#' not in content
    assert "the previous one is" not in content


@pytest.mark.parametrize(
    "fragment",
    [
        "card fragment",
        "card page",
        "revise fragment",
        "revise page",
        "suggestions fragment",
        "suggestions page",
    ],
)
def test_every_fragment_of_the_case_is_blind(alice, fragment):
    requests = {
        "card fragment": lambda: alice.get(url("card_detail", "c1"), **HTMX),
        "card page": lambda: alice.get(WHOLE),
        "revise fragment": lambda: alice.get(CASE, {"revise": "c1"}, **HTMX),
        "revise page": lambda: alice.get(CASE, {"revise": "c1"}),
        "suggestions fragment": lambda: alice.get(url("claim_suggestions"), **HTMX),
        "suggestions page": lambda: alice.get(url("claim_suggestions")),
    }
    assert_blind(requests[fragment]())


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_a_saved_verdict_answers_without_the_others(alice, claim, htmx):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "partial", "reason": "Alice, on second thought."},
        **(HTMX if htmx else {}),
    )
    if htmx:
        assert "Alice, on second thought." in assert_blind(response)
    else:
        assert response.status_code == 302
        assert_blind(alice.get(response["Location"]))


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_a_stale_verdict_answers_409_without_the_others(
    alice, claim, reviewer, second_reviewer, htmx
):
    stale = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    judge(claim, reviewer, "partial", "Alice in another window.")
    judge(claim, second_reviewer, "unsupported", BOBS_REASON + " Still.")  # bob's newest
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**stale, "support": "supported", "reason": "Alice, from the old window."},
        **(HTMX if htmx else {}),
    )
    if not htmx:
        # A refused plain post redirects (nothing to resubmit); the page keeps what she typed.
        assert response.status_code == 302
        response = alice.get(response.url)
    content = assert_blind(response, 409 if htmx else 200)
    assert "Alice, from the old window." in content  # what she typed is kept


def test_a_refused_verdict_answers_400_without_the_others(alice, claim):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "supported", "reason": " "},
        **HTMX,
    )
    assert_blind(response, 400)


def test_adding_and_revising_claims_answer_without_the_others(alice, claim):
    new = {"text": "Refunds start later.", "spans": "132-192", "kind": "factual"}
    assert alice.post(url("claim_add"), new).status_code == 302
    swap = alice.post(url("claim_add"), {**new, "text": "Refunds start at the warehouse."}, **HTMX)
    assert_blind(swap)
    assert_blind(alice.post(url("claim_add"), {**new, "text": " "}, **HTMX), 400)
    change = {"text": "Final-sale items cannot be returned.", "kind": "factual", "facts": "G2"}
    revised = alice.post(
        url("claim_change", claim.key), {**change, "seen_claim_seq": 1, "reason": "Plainer."}
    )
    assert revised.status_code == 302
    stale = alice.post(
        url("claim_change", claim.key),
        {**change, "seen_claim_seq": 1, "reason": "Again."},
        **HTMX,
    )
    assert_blind(stale, 409)


def test_marking_my_review_complete_is_refused_until_i_judged_every_claim(
    alice, replay_response, reviewer
):
    claim_create(response=replay_response, author=reviewer, text="Refunds.", spans=[REFUND_START])
    response = alice.post(url("review_complete"), {"complete": "1"}, **HTMX)
    content = assert_blind(response, 400)
    assert "Judge every claim first (c2 has no verdict of yours)" in content
    assert not ResponseReview.objects.exists()
    plain = alice.post(url("review_complete"), {"complete": "1"})
    assert plain.status_code == 302  # a refused plain post redirects: nothing to resubmit
    assert "Judge every claim first" in assert_blind(alice.get(plain.url))
    assert not ResponseReview.objects.exists()


def test_reopening_the_decomposition_keeps_a_blind_reviewer_blind(alice):
    assert_blind(alice.post(url("review_complete"), {"complete": "0"}, **HTMX))
    assert_blind(alice.get(CASE))


# --- when the others' verdicts appear ----------------------------------------------------------


def test_marking_my_review_complete_reveals_the_others(alice, claim, reviewer):
    response = alice.post(url("review_complete"), {"complete": "1"}, **HTMX)
    assert response.status_code == 200
    # Every card changes, not only the status row.
    assert (response["HX-Retarget"], response["HX-Reswap"]) == ("#workspace", "innerHTML")
    content = response.content.decode()
    assert "bob: <strong" in content  # his label, in the compact card's header
    assert "Your review is complete: everyone&#x27;s verdicts on this case are shown." in content
    whole = alice.get(url("card_detail", claim.key), **HTMX).content.decode()
    assert BOBS_REASON in whole and BOBS_NOTE in whole
    card = page_for(reviewer, "q017-r3", "Q-017").card(claim.key)
    assert [v.annotator for v in card.verdicts] == ["alice", "bob"]


def test_marking_my_review_complete_by_a_plain_post_redirects_to_the_open_case(alice):
    response = alice.post(url("review_complete"), {"complete": "1"})
    assert response.status_code == 302
    assert BOBS_REASON in alice.get(response["Location"], {"card": "c1"}).content.decode()


def test_reopening_does_not_hide_again_what_was_seen(alice, replay_response, reviewer):
    response_mark_complete(response=replay_response, author=reviewer)
    response_mark_complete(response=replay_response, author=reviewer, complete=False)
    assert BOBS_REASON in alice.get(WHOLE).content.decode()


def test_another_reviewers_mark_does_not_open_the_case_to_me(
    alice, replay_response, second_reviewer
):
    response_mark_complete(response=replay_response, author=second_reviewer)
    content = assert_blind(alice.get(CASE))
    # The decomposition is complete, but alice still has her own review to finish.
    assert "My review is complete: show the others' verdicts" in content


def test_a_lead_unblinds_a_case_by_htmx(client, alice, lead, reviewer):
    client.force_login(lead)
    response = client.post(url("case_unblind"), **HTMX)
    assert response.status_code == 200
    content = response.content.decode()
    assert content.lstrip().startswith('<div id="review-status"')
    assert "Q-017 unblinded: its reviewers now see each other" in content
    assert "unblinded for its reviewers" in content
    client.force_login(reviewer)
    assert BOBS_REASON in client.get(WHOLE).content.decode()


def test_a_lead_unblinds_a_case_by_a_plain_post_once(client, alice, lead):
    client.force_login(lead)
    response = client.post(url("case_unblind"))
    assert response.status_code == 302 and response["Location"] == CASE
    assert flashes(response) == ["Q-017 unblinded: its reviewers now see each other's verdicts."]
    again = client.post(url("case_unblind"))
    assert flashes(again)[-1] == "Q-017 was already unblinded."
    assert Unblinding.objects.count() == 1


def test_a_lead_unblinds_a_whole_run(client, alice, lead, reviewer):
    client.force_login(lead)
    run_page = client.get(reverse("run_detail", args=["demo", "q017-r3"])).content.decode()
    assert "Unblind every case of this run" in run_page
    response = client.post(reverse("run_unblind", args=["demo", "q017-r3"]))
    assert response.status_code == 302
    assert flashes(response) == [
        "q017-r3 unblinded: the reviewers of every case now see each other's verdicts."
    ]
    assert "Unblind every case" not in client.get(response["Location"]).content.decode()
    assert not page_for(reviewer, "q017-r3", "Q-017").blind


def test_only_a_lead_unblinds(client, alice, outsider):
    assert alice.post(url("case_unblind")).status_code == 403
    assert alice.post(reverse("run_unblind", args=["demo", "q017-r3"])).status_code == 403
    assert_blind(alice.get(CASE))
    assert (
        "Unblind"
        not in alice.get(reverse("run_detail", args=["demo", "q017-r3"])).content.decode()
    )
    client.force_login(outsider)
    assert client.post(url("case_unblind")).status_code == 404
    assert client.post(reverse("run_unblind", args=["demo", "q017-r3"])).status_code == 404
    assert not Unblinding.objects.exists()


def test_a_project_that_is_not_blind_has_nothing_to_unblind(client, claim, lead):
    client.force_login(lead)
    response = client.post(url("case_unblind"))
    assert flashes(response) == ["This project does not review blind: every verdict is visible."]
    assert "Unblind" not in client.get(CASE).content.decode()


def test_imported_judgements_are_hidden_from_a_blind_reviewer_too(
    client, blind, reviewer, demo_runs
):
    client.force_login(reviewer)
    content = client.get(reverse("case_detail", args=["demo", "q017-r1", "Q-017"])).content
    assert b"seed-protocol" not in content
    assert b"The passage explicitly excludes final-sale items" not in content
    assert page_for(reviewer, "q017-r1", "Q-017").card("C-017-1").verdicts == []


def test_a_lead_sees_every_verdict_without_saving(client, blind, claim, lead, bobs_verdict):
    page = page_for(lead, "q017-r3", "Q-017")
    assert not page.blind
    assert [v.reason for v in page.card(claim.key).verdicts] == [BOBS_REASON]
    client.force_login(lead)
    content = client.get(CASE).content.decode()
    assert BOBS_REASON in content
    assert "Unblind this case for its reviewers" in content


def test_without_blind_review_a_reviewer_sees_every_verdict(
    client, claim, reviewer, second_reviewer
):
    judge(claim, second_reviewer, "unsupported", BOBS_REASON)
    page = page_for(reviewer, "q017-r3", "Q-017")
    assert (page.blind, page.card(claim.key).current.reason) == (False, BOBS_REASON)
    client.force_login(reviewer)
    assert BOBS_REASON in client.get(WHOLE).content.decode()


# --- pages built from everyone's verdicts -----------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/p/demo/runs/q017-r3/figures/",
        "/p/demo/runs/q017-r3/figures/?source=annotator:bob",
        "/p/demo/runs/q017-r3/figures/?helper=1&margin=3",
        "/p/demo/runs/q017-r3/figures/agreement/",
        "/p/demo/runs/q017-r3/figures/agreement/?annotator=bob",
        "/p/demo/runs/q017-r3/figures.csv?source=annotator:bob",
        "/p/demo/runs/q017-r3/figures.json?source=annotator:bob",
        "/p/demo/compare/?a=q017-r3&b=q017-r3&source=annotator:bob",
        "/p/demo/compare/summary/?a=q017-r3&b=q017-r3&source=annotator:bob",
        "/p/demo/runs/q017-r3/disagreements/",
    ],
)
@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_figures_downloads_comparisons_and_disagreements_are_refused_while_blind(
    alice, replay_response, second_reviewer, path, htmx
):
    response_mark_complete(response=replay_response, author=second_reviewer)
    response = alice.get(path, **(HTMX if htmx else {}))
    assert response.status_code == 403
    assert_blind(response, 403)
    assert "attachment" not in response.get("Content-Disposition", "")


def test_a_lead_of_a_blind_project_reads_the_figures_and_their_agreement_panel(
    client, bobs_verdict, lead
):
    client.force_login(lead)
    for path in ("/p/demo/runs/q017-r3/figures/", "/p/demo/runs/q017-r3/figures/agreement/"):
        assert client.get(path).status_code == 200
        assert client.get(path, **HTMX).status_code == 200


def test_the_run_figures_json_holds_nothing_of_bob_for_a_lead_only(
    client, alice, lead, replay_response, second_reviewer
):
    response_mark_complete(response=replay_response, author=second_reviewer)
    client.force_login(lead)
    data = json.loads(client.get("/p/demo/runs/q017-r3/figures.json?source=annotator:bob").content)
    assert data["per_response"][0]["verdicts"]["unsupported"] == 1


def test_the_blind_case_page_of_a_lead_takes_a_fixed_number_of_queries(
    client, blind, claim, lead, second_reviewer, django_assert_max_num_queries
):
    client.force_login(lead)
    with django_assert_max_num_queries(12) as one:
        client.get(CASE)
    for text, span in (("Refunds start later.", [132, 192]), ("Not said.", [201, 249])):
        added = claim_create(response=claim.response, author=lead, text=text, spans=[span])
        judge(added, second_reviewer, "partial", "bob")
    judge(claim, second_reviewer, "partial", "bob")
    frozen_rows.clear()  # as the first view: read the response's retrieval and citations
    with django_assert_max_num_queries(12) as three:
        client.get(CASE)
    assert len(one.captured_queries) == len(three.captured_queries)
