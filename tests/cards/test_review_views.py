"""The case page and its actions, each through its HTMX swap and its plain form post."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from cards.models import Claim, ClaimRevision, Origin, ResponseReview, VerdictRevision
from cards.services.claims import claim_create, claim_revise
from cards.views import review
from tests.cards.conftest import (
    D01,
    D02,
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


class _Fields(HTMLParser):
    """The fields of one form as a browser sends them: ticked boxes only, and the controls
    outside it that name it (form="…")."""

    def __init__(self, form_id: str, tick: set[str]):
        super().__init__(convert_charrefs=True)
        self.form_id, self.tick = form_id, tick
        self.inside, self.textarea, self.fields = False, None, []

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        mine = a.get("form") == self.form_id if "form" in a else self.inside
        if not mine or "name" not in a:
            return
        if tag == "textarea":
            self.textarea = [a["name"], ""]
        elif tag == "input":
            ticked = "checked" in a or a.get("value") in self.tick
            if a.get("type") not in {"checkbox", "radio"} or ticked:
                self.fields.append((a["name"], a.get("value", "")))

    def handle_data(self, data):
        if self.textarea is not None:
            self.textarea[1] += data

    def handle_endtag(self, tag):
        if tag == "textarea" and self.textarea is not None:
            self.fields.append(tuple(self.textarea))
            self.textarea = None
        elif tag == "form":
            self.inside = False


def form_data(html: str, form_id: str, *, tick=(), **values) -> dict[str, list[str]]:
    """What the browser posts from form `form_id` of `html`, `values` typed over it."""
    parser = _Fields(form_id, set(tick))
    parser.feed(html)
    assert parser.fields, f"no form {form_id!r}"
    data: dict[str, list[str]] = {}
    for name, value in parser.fields:
        data.setdefault(name, []).append(value)
    data.pop("csrfmiddlewaretoken", None)
    return data | {name: [value] for name, value in values.items()}


def shown_once(client, url: str = CASE) -> str:
    """The page a redirect leads to; shown again, it no longer carries what was kept."""
    first = client.get(url).content.decode()
    again = client.get(url).content.decode()
    assert 'role="alert"' not in again[again.index('id="workspace"') :]
    return first


def card_html(content: str, key: str) -> str:
    card = content[content.index(f'id="card-{key}"') :]
    return card[: card.index("</article>")]


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
        f"{CASE}claims/c1/attach/",
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


def whole_card(client, key: str, run_id: str = "q017-r3", case_id: str = "Q-017") -> str:
    """A card as it loads itself whole (on focus or click), through htmx."""
    response = client.get(_case_url(run_id, case_id, "card_detail", key), **HTMX)
    assert response.status_code == 200 and is_partial(response)
    return response.content.decode()


def test_the_case_page_shows_compact_cards_that_load_themselves_whole(alice, claim):
    response = alice.get(CASE)
    assert response.status_code == 200
    card = card_html(response.content.decode(), claim.key)
    assert card.startswith(f'id="card-{claim.key}"')
    assert "Final-sale items are excluded from returns." in card
    # On focus or click, never on `revealed`: a card loads when someone turns to it.
    card_url = case_url("card_detail", claim.key)
    assert f'hx-get="{card_url}" hx-trigger="focusin, click" hx-swap="outerHTML"' in card
    assert "verdict_add" not in card and 'name="seen_claim_seq"' not in card  # no form yet
    # Without JavaScript, its link shows the page with that card whole.
    assert f'href="{CASE}?card={claim.key}#card-{claim.key}"' in card
    whole = alice.get(CASE, {"card": claim.key}).content.decode()
    assert 'name="seen_claim_seq" value="1"' in card_html(whole, claim.key)


def test_a_whole_card_has_its_form_its_passage_and_its_history(alice, claim):
    content = whole_card(alice, claim.key)
    assert content.lstrip().startswith(f'<article class="card verdict-none" id="card-{claim.key}"')
    assert "data-compact" not in content
    assert f'action="{verdict_url("q017-r3", "Q-017", claim.key)}"' in content
    assert f'hx-post="{verdict_url("q017-r3", "Q-017", claim.key)}"' in content
    assert '<input type="hidden" name="seen_claim_seq" value="1"' in content
    assert 'class="passage-text"' in content and 'class="history"' in content


def test_a_card_without_javascript_is_the_page_with_that_card_whole(alice, claim):
    response = alice.get(case_url("card_detail", claim.key))
    assert response.status_code == 302
    assert response["Location"] == f"{CASE}?card={claim.key}#card-{claim.key}"


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_a_card_of_another_case_or_project_is_404(client, alice, claim, outsider, htmx):
    extra = HTMX if htmx else {}
    assert alice.get(case_url("card_detail", "c99"), **extra).status_code == 404
    assert alice.get(CASE, {"card": "c99"}).status_code == 404
    client.force_login(outsider)
    assert client.get(case_url("card_detail", claim.key), **extra).status_code == 404


def test_the_card_shows_the_passage_a_claim_cites_though_its_response_never_retrieved_it(
    alice, aside_claim
):
    content = whole_card(alice, "c1", "aside-r1", "A-1")
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
    page = client.get("/p/demo/runs/q017-r1/cases/Q-017/").content.decode()
    assert "by seed-protocol (imported)" in page
    content = whole_card(client, "C-017-2", "q017-r1")
    assert 'seed-protocol <span class="badge">imported</span>' in content
    assert "seed-protocol (imported):" in content  # the history line
    # Alice's own form does not start from the imported judgement.
    url = "/p/demo/runs/q017-r1/cases/Q-017/"
    form = client.get(url, {"card": "C-017-2"}).context["page"].card("C-017-2").form
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
    # Edited in a multi-line field; the spans are hidden, never typed.
    assert ">The sources do not say how long processing takes.</textarea>" in content
    assert '<input type="hidden" name="spans" value="201-250">' in content
    assert 'name="spans" value="201-249"' not in content.replace('type="hidden" ', "")
    assert 'aria-label="Accept suggestion 3"' in content
    assert 'aria-label="Accept part 2 of suggestion 1"' in content


def test_suggestions_without_javascript_are_the_whole_page(alice, replay_response):
    response = alice.get(case_url("claim_suggestions"))
    assert response.status_code == 200
    assert not is_partial(response)
    assert "Suggested split" in response.content.decode()
    assert len(response.context["suggestions"]) == 3


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
@pytest.mark.parametrize(
    ("form_id", "text", "spans"),
    [
        ("suggestion-2", "Refund processing starts once the item reaches the warehouse.",
         [[132, 200]]),
        ("suggestion-1.2", "final-sale items are excluded.", [[94, 131]]),
    ],
)  # fmt: skip
def test_a_suggestion_is_accepted_as_its_form_sends_it(
    alice, replay_response, form_id, text, spans, htmx
):
    page = alice.get(case_url("claim_suggestions")).content.decode()
    data = form_data(page, form_id)
    response = alice.post(case_url("claim_add"), data, **(HTMX if htmx else {}))
    assert response.status_code == (200 if htmx else 302)
    revision = ClaimRevision.objects.get(claim__key="c1")
    assert (revision.text, revision.spans, revision.kind) == (text, spans, "factual")
    if not htmx:  # back to the suggestions, at the new card
        assert (
            response["Location"] == case_url("claim_suggestions") + "?card=c1#card-c1"
        )  # it whole


def test_an_accepted_suggestion_keeps_the_suggestions_open_and_marks_it_taken(
    alice, replay_response
):
    page = alice.get(case_url("claim_suggestions"), **HTMX).content.decode()
    data = form_data(page, "suggestion-3", text="No processing time is given.")
    response = alice.post(case_url("claim_add"), data, **HTMX)
    content = response.content.decode()
    assert json.loads(response["HX-Trigger-After-Settle"]) == {
        "claim-added": {"key": "c1", "number": "3"}
    }
    # Only the suggestion it took, out of band: what is typed in the others stays.
    assert '<li id="sg-item-3" data-suggestion="3" data-taken hx-swap-oob="true">' in content
    assert '<span class="badge ok">added as c1</span>' in content
    assert 'id="suggestion-3"' not in content
    assert 'id="sg-item-2"' not in content and 'id="suggestions"' not in content
    plain = alice.get(case_url("claim_suggestions")).content.decode()
    assert "added as c1" in plain


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_ticked_suggestions_merge_into_one_claim_with_their_spans(alice, replay_response, htmx):
    page = alice.get(case_url("claim_suggestions")).content.decode()
    data = form_data(page, "merge-form", tick={"0-131", "201-250"}, text="Merged.")
    assert data["pick"] == ["0-131", "201-250"]
    response = alice.post(case_url("claim_add"), data, **(HTMX if htmx else {}))
    assert response.status_code == (200 if htmx else 302)
    revision = ClaimRevision.objects.get(claim__key="c1")
    assert (revision.text, revision.spans) == ("Merged.", [[0, 131], [201, 250]])
    assert revision.citations == [D01]


def test_a_refused_suggestion_through_htmx_is_its_form_with_the_text_kept(alice, replay_response):
    page = alice.get(case_url("claim_suggestions"), **HTMX).content.decode()
    data = form_data(page, "suggestion-2", spans="132-999")
    response = alice.post(case_url("claim_add"), data, **HTMX)
    assert response.status_code == 400
    # Only the form that was posted is swapped: the page and the other forms stay.
    assert (response["HX-Retarget"], response["HX-Reswap"]) == ("closest form", "outerHTML")
    content = response.content.decode()
    assert content.lstrip().startswith('<form class="suggestion" id="suggestion-2"')
    assert '<p class="error" role="alert">Span 132..999 is outside the answer.</p>' in content
    assert ">Refund processing starts once the item reaches the warehouse.</textarea>" in content
    assert not Claim.objects.exists()


def test_a_merge_of_nothing_is_refused_in_the_merge_form(alice, replay_response):
    page = alice.get(case_url("claim_suggestions"), **HTMX).content.decode()
    data = form_data(page, "merge-form", text="My merged text.")
    response = alice.post(case_url("claim_add"), data, **HTMX)
    assert response.status_code == 400
    content = response.content.decode()
    assert content.lstrip().startswith('<form id="merge-form"')
    assert "Tick at least one suggestion to merge." in content
    assert ">My merged text.</textarea>" in content
    # Without JavaScript: back to the suggestions, the message and the text kept, once.
    response = alice.post(case_url("claim_add"), data)
    assert response["Location"] == case_url("claim_suggestions") + "#merge-form"
    page = alice.get(case_url("claim_suggestions")).content.decode()
    assert "Tick at least one suggestion to merge." in page
    assert ">My merged text.</textarea>" in page
    assert "Tick at least one" not in alice.get(case_url("claim_suggestions")).content.decode()
    assert not Claim.objects.exists()


def test_a_refused_suggestion_by_form_post_is_kept_for_the_suggestions_page(
    alice, replay_response
):
    page = alice.get(case_url("claim_suggestions")).content.decode()
    response = alice.post(case_url("claim_add"), form_data(page, "suggestion-2", text="  "))
    assert response["Location"] == case_url("claim_suggestions") + "#suggestion-2"
    page = alice.get(case_url("claim_suggestions")).content.decode()
    form = page[page.index('id="suggestion-2"') :]
    assert form.index("The claim text is required") < form.index("</form>")


# --- adding a claim --------------------------------------------------------------------------


def test_adding_a_claim_through_htmx_returns_its_card_and_what_changed(alice, replay_response):
    response = alice.post(
        case_url("claim_add"),
        {"text": "Final-sale items are excluded.", "spans": "94-123", "kind": "factual"},
        **HTMX,
    )
    assert response.status_code == 200
    assert is_partial(response)
    assert json.loads(response["HX-Trigger-After-Settle"]) == {
        "claim-added": {"key": "c1", "number": ""}
    }
    content = response.content.decode()
    # The new card, appended to the list; the rest out of band, the other cards untouched.
    assert content.lstrip().startswith('<article class="card verdict-none" id="card-c1"')
    assert '<div id="answer-box" hx-swap-oob="true">' in content
    assert 'id="review-status" class="status-row" aria-live="polite" hx-swap-oob="true"' in content
    assert 'id="cards-count" hx-swap-oob="true">(1)</span>' in content
    add_form = content[content.index('<form id="add-claim"') :]
    assert 'hx-swap-oob="true"' in add_form[: add_form.index(">")]
    assert '<input type="hidden" name="spans" value="">' in add_form  # a fresh form
    assert 'id="suggestions"' not in content  # they were not open
    assert Claim.objects.get(key="c1").revisions.get().citations == [D01]


def test_a_second_claim_through_htmx_leaves_the_first_card_alone(alice, claim):
    response = alice.post(
        case_url("claim_add"), {"text": "Refunds.", "spans": "132-192", "kind": "factual"}, **HTMX
    )
    content = response.content.decode()
    assert 'id="card-c2"' in content
    assert 'id="card-c1"' not in content  # whatever is typed in it stays


def test_adding_a_claim_by_form_post_redirects_to_its_card(alice, replay_response):
    response = alice.post(
        case_url("claim_add"),
        {"text": "Excluded.", "spans": "94-123", "kind": "factual", "facts": ["G2"]},
    )
    assert response.status_code == 302
    assert response["Location"] == f"{CASE}?card=c1#card-c1"  # the new card whole
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
        ({"text": "   ", "spans": "94-123"}, "The claim text is required"),
        ({"text": "A.", "spans": "94-999"}, "Span 94..999 is outside the answer."),
        ({"text": "A.", "spans": "ninety"}, "&#x27;ninety&#x27; is not a span like 12-40."),
        ({"text": "A.", "spans": "94-123", "facts": ["G9"]}, "Select a valid choice."),
    ],
)
def test_a_refused_claim_by_form_post_redirects_to_the_form_with_the_error(
    alice, replay_response, data, error
):
    response = alice.post(case_url("claim_add"), {"kind": "factual", **data})
    # Redirected: a reload of the page shows it again, never posts again.
    assert response.status_code == 302
    assert response["Location"] == f"{CASE}#add-claim"
    content = shown_once(alice)
    form = content[
        content.index('<form id="add-claim"') : content.index(
            "</form>", content.index('<form id="add-claim"')
        )
    ]
    assert error in form
    assert f">{data['text']}</textarea>" in form  # what was typed
    assert f'name="spans" value="{data["spans"]}"' in form
    assert not Claim.objects.exists()


def test_a_refused_claim_through_htmx_is_the_add_form_with_its_text_kept(alice, replay_response):
    response = alice.post(
        case_url("claim_add"),
        {"text": "Kept text.", "spans": "94-999", "kind": "factual", "facts": ["G2"]},
        **HTMX,
    )
    assert response.status_code == 400
    assert is_partial(response)
    assert (response["HX-Retarget"], response["HX-Reswap"]) == ("closest form", "outerHTML")
    content = response.content.decode()
    assert content.lstrip().startswith('<form id="add-claim"')
    assert "Span 94..999 is outside the answer." in content
    assert ">Kept text.</textarea>" in content
    assert 'value="94-999"' in content
    assert 'name="facts" value="G2" checked' in content


# --- revising a claim ------------------------------------------------------------------------


def revise_data(**overrides) -> dict:
    return {
        "text": "Final-sale items cannot be returned.", "spans": "94-123", "kind": "factual",
        "facts": ["G2"], "citations": [D01], "seen_claim_seq": 1, "reason": "Closer wording.",
    } | overrides  # fmt: skip


def test_a_revision_through_htmx_returns_its_card_and_what_changed(alice, claim):
    response = alice.post(case_url("claim_change", claim.key), revise_data(), **HTMX)
    assert response.status_code == 200
    assert is_partial(response)
    content = response.content.decode()
    assert content.lstrip().startswith(f'<article class="card verdict-none" id="card-{claim.key}"')
    assert "Final-sale items cannot be returned." in content
    assert f"Claim {claim.key} revised: revision 2." in content
    assert '<div id="answer-box" hx-swap-oob="true">' in content
    assert claim.revisions.order_by("-seq").first().reason == "Closer wording."


def test_a_revision_by_form_post_redirects_to_its_card(alice, claim):
    response = alice.post(case_url("claim_change", claim.key), revise_data())
    assert response.status_code == 302
    assert response["Location"] == f"{CASE}#card-{claim.key}"
    assert flashes(response) == [f"Claim {claim.key} revised: revision 2."]
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


def test_a_stale_revision_by_form_post_redirects_with_the_typed_text_kept(
    alice, claim, second_reviewer
):
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
    response = alice.post(
        case_url("claim_change", claim.key), revise_data(text="Mine.", reason="My reason.")
    )
    assert response.status_code == 302
    assert response["Location"] == f"{CASE}#card-{claim.key}"
    assert claim.revisions.order_by("-seq").first().text == "B."
    card = card_html(shown_once(alice), claim.key)
    assert "bob changed this claim since you opened it" in card
    assert ">Mine.</textarea>" in card and ">My reason.</textarea>" in card  # the form is open
    assert '<input type="hidden" name="seen_claim_seq" value="2">' in card  # against B.


def test_a_stale_revision_through_htmx_is_409_with_the_fresh_card(alice, claim, second_reviewer):
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
    response = alice.post(
        case_url("claim_change", claim.key), revise_data(reason="My reason."), **HTMX
    )
    assert response.status_code == 409
    content = response.content.decode()
    assert "bob changed this claim since you opened it" in content
    assert ">My reason.</textarea>" in content
    assert '<p class="claim-text" hx-disable>B.</p>' in content


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_a_revision_without_reason_is_refused_with_what_was_typed(alice, claim, htmx):
    data = revise_data(reason="  ", citations=[], text="Rewritten.")
    response = alice.post(case_url("claim_change", claim.key), data, **(HTMX if htmx else {}))
    content = response.content.decode() if htmx else card_html(shown_once(alice), claim.key)
    assert response.status_code == (400 if htmx else 302)
    assert "A reason for the change is required: say why." in content
    assert ">Rewritten.</textarea>" in content
    assert f'name="citations" value="{D01}" checked' not in content  # unticked, as sent
    assert claim.revisions.count() == 1


# --- attaching the citation of a claim's sentence --------------------------------------------


@pytest.fixture
def uncited(replay_response, reviewer) -> Claim:
    """A claim from part of the first sentence, made before the sentence rule: no citation."""
    return claim_create(
        response=replay_response, author=reviewer, text="14 days.", spans=[[53, 88]],
        citations=[],
    )  # fmt: skip


def test_a_card_without_citation_offers_its_sentences_marker(alice, uncited):
    card = whole_card(alice, uncited.key)
    assert "no citation attached" in card
    assert f'<input type="hidden" name="ref" value="{D01}">' in card
    assert f'hx-post="{case_url("claim_attach", uncited.key)}" hx-target="closest .card"' in card


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_attaching_the_sentences_citation_is_one_post(alice, uncited, htmx):
    data = {"ref": D01, "seen_claim_seq": 1}
    response = alice.post(case_url("claim_attach", uncited.key), data, **(HTMX if htmx else {}))
    revision = uncited.revisions.order_by("-seq").first()
    assert (revision.seq, revision.citations, revision.text) == (2, [D01], "14 days.")
    assert revision.reason == f"Attached the citation of its sentence: {D01}."
    if htmx:
        assert response.status_code == 200
        card = response.content.decode()
    else:
        assert response["Location"] == f"{CASE}#card-{uncited.key}"
        card = card_html(shown_once(alice), uncited.key)
    assert "no citation attached" not in card
    assert f"Claim {uncited.key} revised: revision 2." in card


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        ({"ref": D02, "seen_claim_seq": 1}, 400, "is not cited by this claim&#x27;s sentence."),
        ({"ref": D01, "seen_claim_seq": 0}, 409, "changed this claim since you opened it"),
        ({"ref": D01}, 400, "This form is incomplete: reload the page."),
    ],
)  # fmt: skip
def test_an_attachment_the_card_did_not_offer_is_refused(alice, uncited, data, status, message):
    response = alice.post(case_url("claim_attach", uncited.key), data, **HTMX)
    assert response.status_code == status
    assert message in response.content.decode()
    assert uncited.revisions.count() == 1


# --- saving a verdict ------------------------------------------------------------------------


def test_a_verdict_through_htmx_returns_only_its_card(alice, claim):
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
    # After the swap settles, the script moves the focus to the next card not judged.
    # The answer is not sent again: the script colours the pieces the claim covers.
    assert json.loads(response["HX-Trigger-After-Settle"]) == {
        "verdict-saved": {"key": claim.key, "seq": 2, "support": "supported"}
    }
    content = response.content.decode()
    assert content.lstrip().startswith(
        f'<article class="card verdict-supported" id="card-{claim.key}"'
    )
    assert '<p class="saved" role="status">Saved, revision 2.</p>' in content
    assert " data-unjudged" not in content[: content.index(">")]
    assert "hx-swap-oob" not in content and content.count("<article") == 1
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
    assert flashes(response) == [f"Verdict on {claim.key} saved: revision 2."]
    assert "Saved, revision 2." in card_html(shown_once(alice), claim.key)
    verdict = claim.verdicts.get()
    assert (verdict.contradicts, verdict.diagnosis, verdict.note) == (
        True,
        "citation_conflicts",
        "Check v5.",
    )


@pytest.mark.parametrize("reason", ["", "   ", "\n"])
def test_a_blank_reason_by_form_post_redirects_to_the_card_with_the_error(alice, claim, reason):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "partial", "reason": reason, "note": "kept note"},
    )
    # Redirected: a reload shows the page, it never posts the refused form again.
    assert response.status_code == 302
    assert response["Location"] == f"{CASE}#card-{claim.key}"
    card = card_html(shown_once(alice), claim.key)
    assert REASON_REQUIRED in card
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


def test_a_stale_verdict_by_form_post_redirects_with_the_reason_kept(
    alice, claim, second_reviewer
):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "partial", "reason": "Alice's careful reason."},
    )
    assert response.status_code == 302
    card = card_html(shown_once(alice), claim.key)
    assert "bob rewrote this claim since you opened it" in card
    assert ">Alice&#x27;s careful reason.</textarea>" in card
    assert '<p class="claim-text" hx-disable>B.</p>' in card  # the fresh card
    assert '<input type="hidden" name="seen_claim_seq" value="2"' in card
    assert not claim.verdicts.exists()


def test_a_claim_rewritten_while_a_save_is_on_its_way_is_shown_with_the_refusal(
    alice, claim, second_reviewer, monkeypatch
):
    # The view reads the claim before the service locks it: the card it answers with
    # must not be the one it read, but the rewritten one.
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    save = review.verdict_save

    def rewritten_first(**kwargs):
        claim_revise(claim=claim, author=second_reviewer, seen_claim_seq=1, text="B.", reason="B.")
        return save(**kwargs)

    monkeypatch.setattr(review, "verdict_save", rewritten_first)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "support": "partial", "reason": "Alice's careful reason."},
        **HTMX,
    )
    assert response.status_code == 409
    card = response.content.decode()
    assert "bob rewrote this claim since you opened it" in card
    assert '<p class="claim-text" hx-disable>B.</p>' in card
    assert '<input type="hidden" name="seen_claim_seq" value="2"' in card
    assert "split the claim" in card and "rewrote the claim as “B.”" in card  # the history


def test_a_403_by_form_post_redirects_to_the_card_with_the_reason_kept(alice, claim):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    response = alice.post(
        verdict_url("q017-r3", "Q-017", claim.key),
        {**data, "adjudicate": "True", "support": "partial", "reason": "I decide."},
    )
    assert response.status_code == 302
    card = card_html(shown_once(alice), claim.key)
    assert "Only a lead of this project may do this." in card
    assert ">I decide.</textarea>" in card
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
    assert response.status_code == (409 if htmx else 302)
    content = response.content.decode() if htmx else shown_once(client)
    card = card_html(content, claim.key)
    assert 'role="alert"' in card
    assert "My typed reason." in card


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


def test_completing_an_answer_without_claims_by_form_post_redirects_with_why_not(
    alice, replay_response
):
    response = alice.post(case_url("review_complete"), {"complete": "1"})
    assert response.status_code == 302
    assert response["Location"] == f"{CASE}#review-status"
    assert flashes(response) == [
        "Split the answer into claims first (an abstention is a claim too)."
    ]


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
        9,
        lambda run_id: client.get(_case_url(run_id, "case-0")),
    )


@pytest.mark.parametrize(
    ("blind_review", "limit"), [(False, 6), (True, 10)], ids=["open", "blind"]
)
def test_a_whole_card_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries, request, blind_review, limit
):
    # Its own rows only (cards.selectors.review_card), never the page's other claims; while
    # blind, 4 more for the clock (marks, unblindings, verdicts per annotator, leads).
    if blind_review:
        request.getfixturevalue("blind")
    client.force_login(reviewer)
    count_both(
        client,
        django_assert_max_num_queries,
        limit,
        lambda run_id: client.get(_case_url(run_id, "case-0", "card_detail", "c1"), **HTMX),
    )


def test_a_verdict_save_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    forms = {run_id: loaded_form(client, run_id, "case-0", "c1") for run_id in SIZES}
    count_both(
        client,
        django_assert_max_num_queries,
        12,  # 1: the UPDATE of the claim's stored figures
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
        7,
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
        32,  # 5: the claim's stored figures (revisions, verdicts, evidence, upsert)
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
        32,  # 5: the claim's stored figures
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
        22,  # the response's stored `reviewed`: its lock (PostgreSQL) and UPDATE
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
        10,
        lambda run_id: client.get(_case_url(run_id, "case-0", "claim_suggestions"), **HTMX),
    )


def test_the_blind_case_page_query_count_does_not_grow_with_claims(
    client, blind, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    # 12: the blind-review clock reads review marks, unblindings and the project's leads.
    count_both(
        client,
        django_assert_max_num_queries,
        12,
        lambda run_id: client.get(_case_url(run_id, "case-0")),
    )


def test_the_rewrite_form_is_loaded_on_demand_not_on_every_card(client, reviewer, demo_runs):
    client.force_login(reviewer)
    url = reverse("case_detail", args=["demo", "q017-r1", "Q-017"])
    page = client.get(url, {"card": "C-017-2"}).content.decode()
    assert page.count('name="seen_claim_seq" value=') == 1  # the whole card's verdict form
    assert "Reason for the change" not in page
    assert page.count("What the diagnoses mean") == 1 and page.count('id="diagnoses"') == 1
    # Into the card's slot, by structure: the card and what is typed in it stay.
    assert 'hx-target="closest .revise-slot" hx-swap="innerHTML"' in page
    partial = client.get(url, {"revise": "C-017-2"}, HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<details class="revise" open>')
    assert "Reason for the change" in partial
    assert "The return window is 30 days." in partial
    plain = client.get(url, {"revise": "C-017-2"}).content.decode()
    assert plain.count("Reason for the change") == 1


# --- claim ids that are no CSS identifiers ------------------------------------------------------


@pytest.fixture
def odd_keys(project) -> None:
    """A run whose two claims are named k.1 and a:b, as the bundle schema allows."""
    lines = synthetic_bundle(run_id="odd-r1", cases=1, claims=2, snapshot="odd@1")
    for claim, key in zip(lines[-1]["claims"], ["k.1", "a:b"], strict=True):
        claim["claim_id"] = key
    import_bytes(bundle_bytes(*lines))


def test_no_action_targets_a_card_by_an_id_built_from_its_key(alice, odd_keys):
    content = alice.get(_case_url("odd-r1", "case-0")).content.decode()
    assert 'id="card-k.1"' in content and 'id="card-a:b"' in content
    assert 'hx-target="#card-' not in content
    assert content.count('hx-target="closest .card"') == 2  # the two verdict forms


@pytest.mark.parametrize("key", ["k.1", "a:b"])
@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_a_claim_named_with_a_dot_or_a_colon_takes_a_verdict(alice, odd_keys, key, htmx):
    data = loaded_form(alice, "odd-r1", "case-0", key)
    response = alice.post(
        verdict_url("odd-r1", "case-0", key),
        {**data, "support": "partial", "reason": "Only the limit."},
        **(HTMX if htmx else {}),
    )
    if htmx:
        assert response.status_code == 200
        assert (
            response.content.decode()
            .lstrip()
            .startswith(f'<article class="card verdict-partial" id="card-{key}"')
        )
    else:
        assert response["Location"] == _case_url("odd-r1", "case-0") + f"#card-{key}"
    assert Claim.objects.get(key=key).verdicts.get(origin=Origin.REVIEW).support == "partial"


# --- what a refused plain post keeps -------------------------------------------------------------


def test_what_a_refused_post_kept_is_shown_on_its_own_case_only(alice, demo_runs, claim):
    data = loaded_form(alice, "q017-r3", "Q-017", claim.key)
    alice.post(verdict_url("q017-r3", "Q-017", claim.key), {**data, "reason": "Kept?"})
    other = alice.get("/p/demo/runs/q017-r1/cases/Q-017/").content.decode()
    assert "Kept?" not in other
    assert "Kept?" not in alice.get(CASE).content.decode()  # dropped, not carried around


def test_the_case_page_with_a_kept_form_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    forms = {run_id: loaded_form(client, run_id, "case-0", "c1") for run_id in SIZES}

    # The refused post is outside the count: only the page that shows what it kept.
    counts = []
    for run_id in SIZES:
        client.post(verdict_url(run_id, "case-0", "c1"), {**forms[run_id], "reason": " "})
        with django_assert_max_num_queries(14) as queries:
            response = client.get(_case_url(run_id, "case-0"))
        assert "A written reason is required" in response.content.decode()
        counts.append(len(queries.captured_queries))
    assert counts[0] == counts[1], counts


def test_attaching_query_count_does_not_grow_with_claims(
    client, reviewer, sized_runs, django_assert_max_num_queries
):
    client.force_login(reviewer)
    for run_id in SIZES:
        claim_create(
            response=response_for(run_id), author=reviewer, text="Ten.", spans=[[13, 21]],
            citations=[],
        )  # fmt: skip
    keys = {run_id: Claim.objects.get(response__run__run_id=run_id, revisions__text="Ten.").key
            for run_id in SIZES}  # fmt: skip
    count_both(
        client,
        django_assert_max_num_queries,
        36,  # 5: the claim's stored figures
        lambda run_id: client.post(
            _case_url(run_id, "case-0", "claim_attach", keys[run_id]),
            {"ref": "doc0@v1#c0", "seen_claim_seq": 1},
            **HTMX,
        ),
    )
