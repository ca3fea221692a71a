"""The case page and its actions, each through its HTMX swap and its plain form post."""

from __future__ import annotations

import json

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from cards.models import Claim, ClaimRevision, Origin, ResponseReview, VerdictRevision
from cards.services import claim_revise
from tests.cards.conftest import (
    D01,
    OLD_POLICY,
    judge,
    loaded_form,
    page_for,
    response_for,
    verdict_url,
)
from tests.cards.conftest import case_url as _case_url
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle

HTMX = {"HTTP_HX_REQUEST": "true"}
CASE = "/p/demo/runs/q017-r3/cases/Q-017/"
REASON_REQUIRED = "A written reason is required: say what in the passage decides it."


def case_url(name: str = "case_detail", *args: str) -> str:
    return _case_url("q017-r3", "Q-017", name, *args)


def flashes(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def is_partial(response) -> bool:
    return "<html" not in response.content.decode()


@pytest.fixture
def alice(client, reviewer):
    client.force_login(reviewer)
    return client


# --- login -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        CASE,
        f"{CASE}claims/",
        f"{CASE}claims/suggest/",
        f"{CASE}claims/c1/revise/",
        f"{CASE}claims/c1/verdict/",
        f"{CASE}complete/",
        "/p/demo/queue/",
        "/p/demo/runs/q017-r3/assign/",
        "/p/demo/runs/q017-r3/disagreements/",
    ],
)
def test_every_review_page_sends_an_anonymous_visitor_to_log_in(client, claim, url):
    for response in (client.get(url), client.post(url), client.post(url, **HTMX)):
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))
    assert Claim.objects.count() == 1
    assert VerdictRevision.objects.count() == 0


# --- the case page ---------------------------------------------------------------------------


def test_the_case_page_shows_each_card_with_its_form(alice, claim):
    response = alice.get(CASE)
    assert response.status_code == 200
    content = response.content.decode()
    assert f'<article class="card verdict-none" id="card-{claim.key}"' in content
    assert "Final-sale items are excluded from returns." in content
    assert f'action="{verdict_url("q017-r3", "Q-017", claim.key)}"' in content
    assert f'hx-post="{verdict_url("q017-r3", "Q-017", claim.key)}"' in content
    assert '<input type="hidden" name="seen_claim_seq" value="1"' in content


def test_the_card_shows_the_passage_a_claim_cites_though_its_response_never_retrieved_it(
    alice, aside_claim
):
    content = alice.get(_case_url("aside-r1", "A-1")).content.decode()
    content = content[content.index('id="card-c1"') :]
    assert "no citation attached" not in content
    assert "Returns are accepted within 30 days of delivery." in content


def test_imported_judgements_are_shown_as_imported_never_as_a_local_reviewer(
    client, reviewer, demo_runs
):
    card = page_for(reviewer, "q017-r1", "Q-017").card("C-017-2")
    (verdict,) = card.verdicts
    assert (verdict.origin, verdict.author, verdict.annotator) == (
        Origin.IMPORTED,
        None,
        "seed-protocol",
    )
    assert card.mine is None  # not alice's, although nobody local judged it
    client.force_login(reviewer)
    content = client.get("/p/demo/runs/q017-r1/cases/Q-017/").content.decode()
    assert "by seed-protocol (imported)" in content
    assert 'seed-protocol <span class="badge">imported</span>' in content
    assert "seed-protocol (imported):" in content  # the history line
    # Alice's own form does not start from the imported judgement.
    form = client.get("/p/demo/runs/q017-r1/cases/Q-017/").context["page"].card("C-017-2").form
    assert form["seen_own_seq"].value() is None
    assert form["support"].value() is None


def test_a_local_verdict_after_an_imported_one_becomes_the_current_one(reviewer, demo_runs):
    claim = Claim.objects.get(response=response_for("q017-r1"), key="C-017-2")
    mine = judge(claim, reviewer, "supported", "Alice.")
    card = page_for(reviewer, "q017-r1", "Q-017").card("C-017-2")
    assert card.current == mine
    assert [v.origin for v in card.verdicts] == [Origin.REVIEW, Origin.IMPORTED]


# --- suggestions -----------------------------------------------------------------------------


def test_suggestions_through_htmx_are_the_suggestions_partial(alice, replay_response):
    response = alice.get(case_url("claim_suggestions"), **HTMX)
    assert response.status_code == 200
    assert is_partial(response)
    content = response.content.decode()
    assert content.lstrip().startswith('<div id="suggestions">')
    assert 'value="The sources do not say how long processing takes."' in content


def test_suggestions_without_javascript_are_the_whole_page(alice, replay_response):
    response = alice.get(case_url("claim_suggestions"))
    assert response.status_code == 200
    assert not is_partial(response)
    assert "Suggested split" in response.content.decode()
    assert len(response.context["suggestions"]) == 3


# --- adding a claim --------------------------------------------------------------------------


def test_adding_a_claim_through_htmx_returns_the_workspace(alice, replay_response):
    response = alice.post(
        case_url("claim_add"),
        {"text": "Final-sale items are excluded.", "spans": "94-123", "kind": "factual"},
        **HTMX,
    )
    assert response.status_code == 200
    assert is_partial(response)
    assert json.loads(response["HX-Trigger"]) == {"claim-added": {"key": "c1"}}
    content = response.content.decode()
    assert '<article class="card verdict-none" id="card-c1"' in content
    assert 'id="add-claim"' in content
    assert Claim.objects.get(key="c1").revisions.get().citations == [D01]


def test_adding_a_claim_by_form_post_redirects_to_its_card(alice, replay_response):
    response = alice.post(
        case_url("claim_add"),
        {"text": "Excluded.", "spans": "94-123", "kind": "factual", "facts": ["G2"]},
    )
    assert response.status_code == 302
    assert response["Location"] == f"{CASE}#card-c1"
    assert flashes(response) == ["Claim c1 added."]
    assert Claim.objects.get(key="c1").revisions.get().facts == ["G2"]


def test_an_abstention_claim_is_added_with_its_gap(alice, replay_response):
    alice.post(
        case_url("claim_add"),
        {"text": "No duration is given.", "spans": "201-249", "kind": "abstention", "gaps": "X1"},
    )
    revision = ClaimRevision.objects.get(claim__key="c1")
    assert (revision.kind, revision.gaps) == ("abstention", ["X1"])


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"text": "   ", "spans": "94-123"}, "This field is required."),
        ({"text": "A.", "spans": "94-999"}, "Span 94..999 is outside the answer."),
        ({"text": "A.", "spans": "ninety"}, "&#x27;ninety&#x27; is not a span like 12-40."),
        ({"text": "A.", "spans": "94-123", "facts": ["G9"]}, "Select a valid choice."),
    ],
)
def test_a_refused_claim_by_form_post_is_the_page_with_errors(alice, replay_response, data, error):
    response = alice.post(case_url("claim_add"), {"kind": "factual", **data})
    assert response.status_code == 400
    assert not is_partial(response)
    assert error in response.content.decode()
    assert not Claim.objects.exists()


def test_a_refused_claim_through_htmx_is_the_add_form_with_its_text_kept(alice, replay_response):
    response = alice.post(
        case_url("claim_add"), {"text": "Kept text.", "spans": "94-999", "kind": "factual"}, **HTMX
    )
    assert response.status_code == 400
    assert is_partial(response)
    content = response.content.decode()
    assert content.lstrip().startswith('<form id="add-claim"')
    assert "Span 94..999 is outside the answer." in content
    assert ">Kept text.</textarea>" in content
    assert 'value="94-999"' in content


# --- revising a claim ------------------------------------------------------------------------


def revise_data(**overrides) -> dict:
    return {
        "text": "Final-sale items cannot be returned.", "spans": "94-123", "kind": "factual",
        "facts": ["G2"], "citations": [D01], "seen_claim_seq": 1, "reason": "Closer wording.",
    } | overrides  # fmt: skip


def test_a_revision_through_htmx_returns_the_workspace(alice, claim):
    response = alice.post(case_url("claim_change", claim.key), revise_data(), **HTMX)
    assert response.status_code == 200
    assert is_partial(response)
    assert "Final-sale items cannot be returned." in response.content.decode()
    assert claim.revisions.order_by("-seq").first().reason == "Closer wording."


def test_a_revision_by_form_post_redirects_to_its_card(alice, claim):
    response = alice.post(case_url("claim_change", claim.key), revise_data())
    assert response.status_code == 302
    assert response["Location"] == f"{CASE}#card-{claim.key}"
    assert flashes(response) == [f"Claim {claim.key} revised."]
    assert claim.revisions.count() == 2


def test_a_rewrite_through_the_form_keeps_a_citation_the_response_never_retrieved(
    alice, aside_claim
):
    url = _case_url("aside-r1", "A-1")
    form = alice.get(url, {"revise": "c1"}, **HTMX).content.decode()
    assert f'name="citations" value="{OLD_POLICY}" checked' in form
    # What the browser sends: the ticked boxes, the rest of the form unchanged.
    data = revise_data(text="30 days.", spans="0-34", facts=["G1"], citations=[OLD_POLICY])
    response = alice.post(_case_url("aside-r1", "A-1", "claim_change", "c1"), data, **HTMX)
    assert response.status_code == 200
    assert aside_claim.revisions.order_by("-seq").first().citations == [OLD_POLICY]


def test_a_withdrawal_by_form_post_needs_a_reason(alice, claim):
    alice.post(case_url("claim_change", claim.key), revise_data(withdrawn="on", reason=" "))
    assert claim.revisions.count() == 1
    alice.post(case_url("claim_change", claim.key), revise_data(withdrawn="on", reason="Dup."))
    assert claim.revisions.order_by("-seq").first().withdrawn


def test_a_stale_revision_is_refused_and_the_other_one_kept(alice, claim, second_reviewer):
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
    response = alice.post(case_url("claim_change", claim.key), revise_data())
    assert claim.revisions.order_by("-seq").first().text == "B."
    assert flashes(response) == [
        "bob changed this claim since you opened it. Your change was not saved; here is the "
        "current card."
    ]


def test_a_stale_revision_by_form_post_is_409_with_the_typed_text_kept(
    alice, claim, second_reviewer
):
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
    response = alice.post(case_url("claim_change", claim.key), revise_data(reason="My reason."))
    assert response.status_code == 409
    assert "bob changed this claim since you opened it" in response.content.decode()
    assert "My reason." in response.content.decode()


def test_a_stale_revision_through_htmx_says_so(alice, claim, second_reviewer):
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
    response = alice.post(
        case_url("claim_change", claim.key), revise_data(reason="My reason."), **HTMX
    )
    assert "bob changed this claim since you opened it" in response.content.decode()


def test_a_revision_without_reason_by_form_post_is_400(alice, claim):
    response = alice.post(case_url("claim_change", claim.key), revise_data(reason="  "))
    assert response.status_code == 400


# --- saving a verdict ------------------------------------------------------------------------


def test_a_verdict_through_htmx_returns_the_card_and_the_answer_out_of_band(alice, claim):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {
            **data,
            "support": "supported",
            "reason": "D-01 excludes them.",
            "relevance_0": "necessary",
        },
        **HTMX,
    )
    assert response.status_code == 200
    assert is_partial(response)
    assert json.loads(response["HX-Trigger"]) == {"verdict-saved": {"key": claim.key}}
    content = response.content.decode()
    assert content.lstrip().startswith(
        f'<article class="card verdict-supported" id="card-{claim.key}"'
    )
    assert '<div id="answer-oob" hx-swap-oob="outerHTML:#answer">' in content
    assert "piece claimed support-supported" in content  # the answer takes the new colour
    verdict = claim.verdicts.get()
    assert (verdict.support, verdict.citation_relevance) == ("supported", {D01: "necessary"})


def test_a_verdict_by_form_post_redirects_to_its_card(alice, claim):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "unsupported", "reason": "No.", "contradicts": "on",
         "diagnosis": "citation_conflicts", "association": "attached", "note": "Check v5."},
    )  # fmt: skip
    assert response.status_code == 302
    assert response["Location"] == f"{CASE}#card-{claim.key}"
    assert flashes(response) == [f"Verdict on {claim.key} saved."]
    verdict = claim.verdicts.get()
    assert (verdict.contradicts, verdict.diagnosis, verdict.note) == (
        True,
        "citation_conflicts",
        "Check v5.",
    )


@pytest.mark.parametrize("reason", ["", "   ", "\n"])
def test_a_blank_reason_by_form_post_is_the_page_with_the_error_in_the_card(alice, claim, reason):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "partial", "reason": reason, "note": "kept note"},
    )
    assert response.status_code == 400
    assert not is_partial(response)
    content = response.content.decode()
    card = content[content.index(f'id="card-{claim.key}"') :]
    assert REASON_REQUIRED in card[: card.index("</article>")]
    assert 'value="partial" checked' in card
    assert ">kept note</textarea>" in card
    assert not claim.verdicts.exists()


def test_a_blank_reason_through_htmx_is_the_card_with_the_error(alice, claim):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "partial", "reason": "   "},
        **HTMX,
    )
    assert response.status_code == 400
    assert is_partial(response)
    content = response.content.decode()
    assert content.lstrip().startswith(f'<article class="card verdict-none" id="card-{claim.key}"')
    assert "A written reason is required" in content
    assert "HX-Trigger" not in response


def test_a_verdict_the_service_refuses_shows_its_message_in_the_card(alice, claim):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "supported", "reason": "Yes.", "contradicts": "on"},
        **HTMX,
    )
    assert response.status_code == 400
    assert "Only an unsupported claim can be marked as contradicted." in response.content.decode()
    assert not claim.verdicts.exists()


def test_an_association_against_the_claims_citations_is_refused_in_the_card(alice, claim):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "unsupported", "reason": "Misplaced.", "association": "missing"},
        **HTMX,
    )
    assert response.status_code == 400
    assert (
        '<p class="error" role="alert">The citation is missing, but the claim has citations: '
        "relink the claim first.</p>"
    ) in response.content.decode()
    assert not claim.verdicts.exists()


def test_a_stale_verdict_by_form_post_is_409_with_the_reason_kept(alice, claim, second_reviewer):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "partial", "reason": "Alice's careful reason."},
    )
    assert response.status_code == 409
    assert not is_partial(response)
    content = response.content.decode()
    card = content[content.index(f'id="card-{claim.key}"') :]
    card = card[: card.index("</article>")]
    assert "bob rewrote this claim since you opened it" in card
    assert ">Alice&#x27;s careful reason.</textarea>" in card
    assert '<p class="claim-text" hx-disable>B.</p>' in card  # the fresh card
    assert '<input type="hidden" name="seen_claim_seq" value="2"' in card
    assert not claim.verdicts.exists()


def test_a_stale_verdict_through_htmx_is_409_with_the_fresh_card(alice, claim, reviewer):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    judge(claim, reviewer, "partial", "Other window.")  # alice, in another window
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "supported", "reason": "From the old window."},
        **HTMX,
    )
    assert response.status_code == 409
    assert is_partial(response)
    content = response.content.decode()
    assert "You saved another verdict on this claim (in another window?)" in content
    assert ">From the old window.</textarea>" in content
    assert '<input type="hidden" name="seen_own_seq" value="2"' in content
    assert list(claim.verdicts.values_list("reason", flat=True)) == ["Other window."]


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_a_verdict_on_a_claim_withdrawn_meanwhile_is_refused_as_stale(
    client, claim, reviewer, second_reviewer, htmx
):
    client.force_login(reviewer)
    data = loaded_form(client, "q017-r3", "Q-017", claim.key)
    claim_revise(
        claim=claim, author=second_reviewer, seen_claim_seq=1, withdrawn=True, reason="D."
    )
    response = client.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "partial", "reason": "My typed reason."},
        **(HTMX if htmx else {}),
    )
    assert response.status_code == 409
    content = response.content.decode()
    card = content[content.index(f'id="card-{claim.key}"') :]
    assert 'role="alert"' in card[: card.index("</article>")]
    assert "My typed reason." in content


def test_the_refused_form_saves_once_sent_again(alice, claim, second_reviewer):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
    refused = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "partial", "reason": "Alice."},
        **HTMX,
    )
    form = refused.context["card"].form
    again = {name: form[name].value() for name in ("seen_claim_seq", "seen_own_seq")}
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {
            **data,
            **{k: v or "" for k, v in again.items()},
            "support": "partial",
            "reason": "Alice.",
        },
        **HTMX,
    )
    assert response.status_code == 200
    assert claim.verdicts.get().reason == "Alice."


@pytest.mark.parametrize("key", ["c99", "C-017-1"])  # C-017-1 is a claim of q017-r1
def test_a_verdict_on_a_claim_not_of_this_case_is_404(alice, demo_runs, claim, key):
    data = {"support": "supported", "reason": "x", "seen_claim_seq": 1}
    assert alice.post(verdict_url("q017-r3", "Q-017", key), data).status_code == 404
    assert alice.post(case_url("claim_change", key), revise_data()).status_code == 404
    assert not VerdictRevision.objects.filter(origin=Origin.REVIEW).exists()
    assert ClaimRevision.objects.filter(origin=Origin.REVIEW).count() == 1  # the fixture's


# --- marking the decomposition complete ------------------------------------------------------


def test_completing_through_htmx_returns_the_status(alice, claim):
    response = alice.post(case_url("review_complete"), {"complete": "1"}, **HTMX)
    assert response.status_code == 200
    assert is_partial(response)
    content = response.content.decode()
    assert content.lstrip().startswith('<div id="review-status"')
    assert '<span class="badge ok">decomposition complete</span>' in content
    assert "Reopen decomposition" in content
    assert "Decomposition marked complete." in content


def test_completing_by_form_post_redirects_to_the_case(alice, claim):
    response = alice.post(case_url("review_complete"), {"complete": "1"})
    assert response.status_code == 302
    assert response["Location"] == CASE
    assert flashes(response) == ["Decomposition marked complete."]
    assert ResponseReview.objects.get().complete


def test_reopening_through_htmx_returns_the_status(alice, claim, replay_response, reviewer):
    alice.post(case_url("review_complete"), {"complete": "1"})
    response = alice.post(case_url("review_complete"), {"complete": "0"}, **HTMX)
    content = response.content.decode()
    assert '<span class="badge">unreviewed</span>' in content
    assert not page_for(reviewer, "q017-r3", "Q-017").review_complete


def test_completing_an_answer_without_claims_through_htmx_says_why_not(alice, replay_response):
    response = alice.post(case_url("review_complete"), {"complete": "1"}, **HTMX)
    assert is_partial(response)
    content = response.content.decode()
    assert "Split the answer into claims first (an abstention is a claim too)." in content
    assert '<span class="badge">unreviewed</span>' in content
    assert not ResponseReview.objects.exists()


def test_completing_an_answer_without_claims_by_form_post_is_400(alice, replay_response):
    response = alice.post(case_url("review_complete"), {"complete": "1"})
    assert response.status_code == 400


# --- query counts ----------------------------------------------------------------------------

# The same case page, with 2 claims and with 30 claims of 5 verdicts each: no view may
# run a query per claim or per revision.
SIZES = {"small": {"claims": 2}, "large": {"claims": 30, "revisions": 5, "passages": 20}}


@pytest.fixture
def sized_runs(reviewer) -> None:
    for run_id, size in SIZES.items():
        lines = synthetic_bundle(run_id=run_id, cases=1, snapshot=f"{run_id}@1", **size)
        import_bytes(bundle_bytes(*lines))


def count_both(client, assert_max, limit: int, request) -> None:
    """Run request(run_id) for both sizes under `limit` queries; the counts must be equal."""
    counts = []
    for run_id in SIZES:
        with assert_max(limit) as queries:
            response = request(run_id)
        assert response.status_code in {200, 400, 409}, response.status_code
        counts.append(len(queries.captured_queries))
    assert counts[0] == counts[1], counts


def test_the_case_page_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    count_both(
        client,
        django_assert_max_num_queries,
        11,
        lambda run_id: client.get(_case_url(run_id, "case-0")),
    )


def test_a_verdict_save_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    forms = {run_id: loaded_form(client, run_id, "case-0", "c1") for run_id in SIZES}
    count_both(
        client,
        django_assert_max_num_queries,
        29,
        lambda run_id: client.post(
            verdict_url(run_id, "case-0", "c1"),
            {**forms[run_id], "support": "supported", "reason": "Passage 0 says 10."},
            **HTMX,
        ),
    )


def test_a_refused_verdict_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    forms = {run_id: loaded_form(client, run_id, "case-0", "c1") for run_id in SIZES}
    count_both(
        client,
        django_assert_max_num_queries,
        20,
        lambda run_id: client.post(
            verdict_url(run_id, "case-0", "c1"),
            {**forms[run_id], "support": "supported", "reason": " "},
            **HTMX,
        ),
    )


def test_adding_a_claim_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    count_both(
        client,
        django_assert_max_num_queries,
        30,
        lambda run_id: client.post(
            _case_url(run_id, "case-0", "claim_add"),
            {"text": "The limit is 10 units.", "spans": "0-21", "kind": "factual"},
            **HTMX,
        ),
    )


def test_revising_a_claim_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    count_both(
        client,
        django_assert_max_num_queries,
        30,
        lambda run_id: client.post(
            _case_url(run_id, "case-0", "claim_change", "c1"),
            {
                "text": "Ten units.",
                "spans": "0-21",
                "kind": "factual",
                "seen_claim_seq": 1,
                "reason": "Shorter.",
            },
            **HTMX,
        ),  # fmt: skip
    )


def test_completing_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    count_both(
        client,
        django_assert_max_num_queries,
        24,
        lambda run_id: client.post(
            _case_url(run_id, "case-0", "review_complete"), {"complete": "0"}, **HTMX
        ),
    )


def test_suggestions_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    count_both(
        client,
        django_assert_max_num_queries,
        12,
        lambda run_id: client.get(_case_url(run_id, "case-0", "claim_suggestions"), **HTMX),
    )


def test_the_blind_case_page_query_count_does_not_grow_with_claims(
    client, blind, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    # 14: the blind-review clock reads review marks, unblindings and the project's leads.
    count_both(
        client,
        django_assert_max_num_queries,
        14,
        lambda run_id: client.get(_case_url(run_id, "case-0")),
    )


def test_the_rewrite_form_is_loaded_on_demand_not_on_every_card(client, reviewer, demo_runs):
    client.force_login(reviewer)
    url = reverse("case_detail", args=["demo", "q017-r1", "Q-017"])
    page = client.get(url).content.decode()
    assert page.count('name="seen_claim_seq" value=') == 4  # the verdict forms only
    assert "Reason for the change" not in page
    assert page.count("What the diagnoses mean") == 4 and page.count('id="diagnoses"') == 1
    partial = client.get(url, {"revise": "C-017-2"}, HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<article class="card')
    assert "Reason for the change" in partial
    assert "The return window is 30 days." in partial
    plain = client.get(url, {"revise": "C-017-2"}).content.decode()
    assert plain.count("Reason for the change") == 1
