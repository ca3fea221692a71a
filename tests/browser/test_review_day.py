"""The reviewer's day: the case page must never break, with DEBUG on or off.

Each test reviews its own copy of a demo run (`fresh_run`), so the tests that share
the session's servers never see each other's claims. A test opens its case with one
of three fixtures: `both` runs it twice, against a server with DEBUG on (as `make
run`) and one with DEBUG off, which matters for refusals and errors (DEBUG changes
what an error answers); `debug` once with DEBUG on; `plain` without JavaScript.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LiveServer, fresh_run, log_in, open_card
from tests.browser.test_review import ANSWER, select_answer_text

pytestmark = pytest.mark.browser

REASON_REQUIRED = "A written reason is required: say what in the passage decides it."
D01 = "D-01@returns-v4#p04"
D02 = "D-02@refunds-v2#p07"


def card(page, key: str):
    """A card found by its heading, never by an id built from the claim key."""
    return page.locator("article.card").filter(
        has=page.get_by_role("heading", name=re.compile(rf"^{re.escape(key)}\b"))
    )


def disagreeing(lines: list[dict]) -> None:
    """A second judge who finds C-017-2 supported, where seed-protocol finds it partial."""
    lines[-1]["claims"][1]["judgements"].append(
        {"annotator": "judge-b", "support": "supported", "reason": "D-01 gives 30 days."}
    )


def verdict_form(page, key: str):
    """The card's verdict form, the card opened whole first if it was compact."""
    open_card(card(page, key))
    return card(page, key).locator("form[data-verdict-form]")


def save_verdict(page, key: str, support: str, reason: str) -> None:
    """Judge the card `key`: its label (as the radio names it), a reason, Save."""
    form = verdict_form(page, key)
    form.get_by_role("radio", name=support, exact=True).check()
    form.get_by_label("Reason").fill(reason)
    form.get_by_role("button", name="Save").click()


def _opener(page, server: LiveServer, tmp_path):
    def open_case(user: str, fixture: str = "q017-r1.jsonl", *, edit=None):
        """`user`, logged in, on the first case of a fresh copy of `fixture`: (page, url)."""
        url = fresh_run(server, tmp_path, fixture, edit=edit)
        log_in(page, user)
        page.goto(url)
        return page, url

    return open_case


@pytest.fixture
def both(server_page, server, tmp_path):
    """Opens a case with DEBUG on, then (a second run of the test) off."""
    return _opener(server_page, server, tmp_path)


@pytest.fixture
def debug(page, live, tmp_path):
    """Opens a case with DEBUG on."""
    return _opener(page, live, tmp_path)


@pytest.fixture
def plain(plain_page, live, tmp_path):
    """Opens a case without JavaScript."""
    return _opener(plain_page, live, tmp_path)


# --- 1. Suggest a split ----------------------------------------------------------------------


def test_suggested_sentences_and_parts_are_accepted_edited_and_merged(debug):
    page, url = debug("alice", "q017-r3.jsonl")
    page.get_by_role("link", name="Suggest a split").click()
    suggestions = page.locator("#suggestions")
    # Suggestions are edited in multi-line fields; their spans are never typed.
    second = suggestions.get_by_label("Suggested claim 2", exact=True)
    expect(second).to_have_value("Refund processing starts once the item reaches the warehouse.")
    assert second.evaluate("el => el.tagName") == "TEXTAREA"
    expect(suggestions.locator("input[name=spans]:not([type=hidden])")).to_have_count(0)

    second.fill("Refund processing starts\nwhen the item reaches the warehouse.")
    third = suggestions.get_by_label("Suggested claim 3", exact=True)
    third.fill("Edited before the second one was accepted.")
    suggestions.get_by_role("button", name="Accept suggestion 2", exact=True).click()
    expect(card(page, "c1")).to_contain_text("when the item reaches the warehouse.")
    expect(card(page, "c1")).to_contain_text(D02)
    expect(third).to_have_value("Edited before the second one was accepted.")
    third.fill("The sources do not say how long processing takes.")

    # The suggestions stay open, the accepted one marked, so the next is one click away.
    expect(suggestions).to_contain_text("added as c1")
    suggestions.get_by_role("button", name="Accept part 2 of suggestion 1", exact=True).click()
    expect(card(page, "c2")).to_contain_text("final-sale items are excluded")
    expect(card(page, "c2")).to_contain_text(D01)

    suggestions.get_by_label("Merge suggestion 1", exact=True).check()
    suggestions.get_by_label("Merge suggestion 3", exact=True).check()
    merged = suggestions.get_by_label("Text of the merged claim")
    expect(merged).to_have_value(re.compile(r"^Items bought .* excluded\. The sources do not"))
    merged.fill("Returns are limited, and the processing time is not given.")
    suggestions.get_by_role("button", name="Merge selected into one claim").click()
    expect(card(page, "c3")).to_contain_text("the processing time is not given")
    expect(card(page, "c3")).to_contain_text("0–131, 201–250")

    expect(page.locator("article.card")).to_have_count(3)
    assert page.failed_requests == []
    assert page.console_problems == []


# --- 2. A refused action keeps the page and what was typed ----------------------------------


def test_a_blank_reason_is_refused_in_place_and_keeps_every_typed_text(both, server):
    page, url = both("bob")
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))

    page.locator("#add-claim").get_by_label("Claim text").fill("A claim I am drafting.")
    verdict_form(page, "C-017-1").get_by_label("Reason").fill("Draft on another card.")
    form = verdict_form(page, "C-017-2")
    form.get_by_role("radio", name="Partial", exact=True).check()
    form.get_by_label("Reason").fill("   ")  # whitespace passes `required`, not the server
    form.get_by_label("Unresolved note").fill("kept note")
    form.get_by_role("button", name="Save").click()

    expect(card(page, "C-017-2").get_by_role("alert")).to_contain_text(REASON_REQUIRED)
    form = verdict_form(page, "C-017-2")
    expect(form.get_by_role("radio", name="Partial", exact=True)).to_be_checked()
    expect(form.get_by_label("Unresolved note")).to_have_value("kept note")
    expect(page.locator("#answer")).to_contain_text("final-sale items")
    expect(page.locator("#add-claim").get_by_label("Claim text")).to_have_value(
        "A claim I am drafting."
    )
    expect(verdict_form(page, "C-017-1").get_by_label("Reason")).to_have_value(
        "Draft on another card."
    )

    form.get_by_label("Reason").fill("D-01 is the 30-day page; the claim says more.")
    form.get_by_role("button", name="Save").click()
    expect(card(page, "C-017-2").locator(".verdict-label")).to_contain_text("Partial")
    expect(card(page, "C-017-2")).to_contain_text("by bob")
    # A card showing a refusal comes back whole once saved: a refused form shows what was
    # typed as its defaults, which the page cannot tell from nothing typed.
    expect(card(page, "C-017-2")).not_to_have_attribute("data-compact", "")
    assert navigations == []  # both answers were swapped in place, never a plain post
    assert page.failed_requests == [f"POST {server.url}{url}claims/C-017-2/verdict/ 400"]
    assert page.console_problems == [
        "Failed to load resource: the server responded with a status of 400 (Bad Request)"
    ]


# With DEBUG on only: both refusals are a view's own 400 answer, which DEBUG does not change
# (the blank reason above is refused with DEBUG off too); what is kept is the page's work.
def test_what_is_typed_in_a_cards_other_forms_survives_its_swap(debug):
    page, url = debug("lead", edit=disagreeing)
    claim = card(page, "C-017-2")
    open_card(claim)
    claim.get_by_role("link", name="Rewrite, relink or withdraw").click()
    claim.get_by_label("Claim text").fill("Final-sale items can be returned too.")
    claim.locator("details.adjudicate summary").click()
    adjudicate = claim.locator("details.adjudicate form")
    adjudicate.get_by_label("Reason").fill("Adjudication draft.")
    form = verdict_form(page, "C-017-2")
    form.get_by_role("radio", name="Partial", exact=True).check()
    form.get_by_label("Reason").fill("  ")
    form.get_by_role("button", name="Save").click()
    expect(claim.get_by_role("alert")).to_contain_text(REASON_REQUIRED)
    # The refused card came back whole: the rewrite and the adjudication kept their text.
    expect(claim.get_by_label("Claim text")).to_have_value("Final-sale items can be returned too.")
    expect(claim.locator("details.adjudicate form").get_by_label("Reason")).to_have_value(
        "Adjudication draft."
    )

    verdict_form(page, "C-017-2").get_by_label("Reason").fill("D-01 says 30 days only.")
    verdict_form(page, "C-017-2").get_by_role("button", name="Save").click()
    expect(claim.locator(".saved")).to_be_visible()
    expect(claim.get_by_label("Claim text")).to_have_value("Final-sale items can be returned too.")

    # A refused rewrite keeps the note typed in the verdict form beside it.
    verdict_form(page, "C-017-2").get_by_label("Unresolved note").fill("Ask about v5.")
    claim.get_by_label("Reason for the change").fill("   ")
    claim.get_by_role("button", name="Save claim revision").click()
    expect(claim.get_by_role("alert")).to_contain_text("A reason for the change is required")
    expect(claim.get_by_label("Claim text")).to_have_value("Final-sale items can be returned too.")
    expect(verdict_form(page, "C-017-2").get_by_label("Unresolved note")).to_have_value(
        "Ask about v5."
    )
    assert [p for p in page.console_problems if "status of 400" not in p] == []


def test_a_stale_form_says_so_in_place_and_saves_once_sent_again(both):
    page, url = both("bob")
    verdict_form(page, "C-017-3")  # loaded before the other window saves
    other = page.context.new_page()
    other.goto(url)
    save_verdict(other, "C-017-3", "Supported", "From the other window.")
    expect(card(other, "C-017-3")).to_contain_text("by bob")
    page.bring_to_front()  # a tab in the background is throttled: every step would wait

    form = verdict_form(page, "C-017-3")
    form.get_by_role("radio", name="Unsupported", exact=True).check()
    form.get_by_label("Reason").fill("My careful reason.")
    form.get_by_role("button", name="Save").click()
    expect(card(page, "C-017-3").get_by_role("alert")).to_contain_text(
        "You saved another verdict on this claim (in another window?)"
    )
    expect(verdict_form(page, "C-017-3").get_by_label("Reason")).to_have_value(
        "My careful reason."
    )
    expect(card(page, "C-017-3")).to_contain_text("From the other window.")  # the fresh card
    verdict_form(page, "C-017-3").get_by_role("button", name="Save").click()
    expect(card(page, "C-017-3").locator(".verdict-label")).to_contain_text("Unsupported")
    expect(page.locator("#answer")).to_be_visible()


def test_bad_spans_are_refused_in_the_add_form_with_the_text_kept(both):
    page, url = both("alice", "q017-r3.jsonl")
    form = page.locator("#add-claim")
    form.get_by_label("Claim text").fill("Kept claim text.")
    form.locator("input[name=spans]").evaluate("el => { el.value = '94-999'; }")
    form.get_by_role("button", name="Add claim").click()
    expect(page.locator("#add-claim").get_by_role("alert")).to_contain_text(
        "Span 94..999 is outside the answer."
    )
    expect(page.locator("#add-claim").get_by_label("Claim text")).to_have_value("Kept claim text.")
    expect(page.locator("#answer")).to_contain_text("final-sale items")
    expect(page.get_by_text("No claims yet")).to_be_visible()
    assert [p for p in page.console_problems if "status of 400" not in p] == []


def test_a_403_is_shown_in_the_card_with_the_typed_text_kept(both):
    page, url = both("bob")
    form = verdict_form(page, "C-017-2")
    # What a lead's adjudication form sends, posted by a reviewer: the server refuses it.
    form.locator("input[name=adjudicate]").evaluate("el => { el.value = 'True'; }")
    form.get_by_role("radio", name="Partial", exact=True).check()
    form.get_by_label("Reason").fill("I decide.")
    form.get_by_role("button", name="Save").click()
    expect(card(page, "C-017-2").get_by_role("alert")).to_contain_text(
        "Only a lead of this project may do this."
    )
    expect(verdict_form(page, "C-017-2").get_by_label("Reason")).to_have_value("I decide.")
    expect(page.locator("#answer")).to_be_visible()
    assert [p for p in page.console_problems if "status of 403" not in p] == []


# With DEBUG on only: the failure and the lost connection are made by the test's route, not
# by the server, so DEBUG cannot change them.
def test_a_server_failure_or_lost_connection_is_said_in_place(debug):
    page, url = debug("bob")
    form = verdict_form(page, "C-017-2")
    form.get_by_role("radio", name="Partial", exact=True).check()
    form.get_by_label("Reason").fill("Typed before the failure.")

    page.route("**/verdict/", lambda route: route.fulfill(status=500, body="Server Error"))
    form.get_by_role("button", name="Save").click()
    expect(form.get_by_role("alert")).to_contain_text("Not saved: the server failed (500)")
    # The save asked its card back compact, so the rest of the card was inert while it was
    # in flight: usable again once it failed.
    history = card(page, "C-017-2").locator("details.history")
    expect(history).not_to_have_attribute("inert", "")
    history.locator("summary").click()
    expect(history).to_have_attribute("open", "")
    history.locator("summary").click()
    page.unroute("**/verdict/")
    page.route("**/verdict/", lambda route: route.abort())
    form.get_by_role("button", name="Save").click()
    expect(form.get_by_role("alert")).to_contain_text("Not saved: the server could not be reached")
    expect(history).not_to_have_attribute("inert", "")
    expect(form.get_by_label("Reason")).to_have_value("Typed before the failure.")
    expect(form.get_by_role("radio", name="Partial", exact=True)).to_be_checked()

    page.unroute("**/verdict/")
    form.get_by_role("button", name="Save").click()
    expect(card(page, "C-017-2").locator(".verdict-label")).to_contain_text("Partial")


def test_an_ended_session_is_said_in_place_and_nothing_typed_is_lost(both):
    page, url = both("bob")
    form = verdict_form(page, "C-017-2")
    form.get_by_role("radio", name="Partial", exact=True).check()
    form.get_by_label("Reason").fill("Typed before the session ended.")
    page.context.clear_cookies()  # logged out elsewhere, or the session expired
    form.get_by_role("button", name="Save").click()
    expect(form.get_by_role("alert")).to_contain_text("Not saved")
    expect(page.locator("#answer")).to_be_visible()
    expect(form.get_by_label("Reason")).to_have_value("Typed before the session ended.")
    assert page.locator("article.card").count() == 4


def test_a_refused_plain_post_redirects_and_keeps_the_typed_text(plain, live):
    page, url = plain("bob")
    form = verdict_form(page, "C-017-2")
    form.get_by_role("radio", name="Partial", exact=True).check()
    form.get_by_label("Reason").fill("  ")
    form.get_by_label("Unresolved note").fill("kept note")
    form.get_by_role("button", name="Save").click()
    # Redirected after the post: a reload asks for the page again, it never resubmits.
    assert page.url == f"{live.url}{url}#card-C-017-2"
    expect(card(page, "C-017-2").get_by_role("alert")).to_contain_text(REASON_REQUIRED)
    expect(
        verdict_form(page, "C-017-2").get_by_role("radio", name="Partial", exact=True)
    ).to_be_checked()
    expect(verdict_form(page, "C-017-2").get_by_label("Unresolved note")).to_have_value(
        "kept note"
    )
    methods = []
    page.on("request", lambda request: methods.append(request.method))
    page.reload()
    assert methods[0] == "GET"
    expect(page.locator("article.card")).to_have_count(4)


# --- 3. Any claim id the schema allows ---------------------------------------------------------


def odd_keys(lines: list[dict]) -> None:
    """Give the response two claims whose ids are no CSS identifiers: k.1 and a:b."""
    response = lines[-1]
    assert response["kind"] == "response"
    response["claims"] = [
        {"claim_id": "k.1", "text": "Final-sale items are excluded.", "spans": [[94, 123]],
         "citations": [D01]},
        {"claim_id": "a:b", "text": "Refunds start at the warehouse.", "spans": [[132, 192]],
         "citations": [D02]},
    ]  # fmt: skip


def test_a_verdict_is_saved_on_claims_named_k_1_and_a_colon_b(debug):
    page, url = debug("alice", "q017-r3.jsonl", edit=odd_keys)
    for key, label, reason in [
        ("k.1", "Supported", "D-01 excludes final-sale items."),
        ("a:b", "Partial", "D-02 says so for the warehouse only."),
    ]:
        form = verdict_form(page, key)
        form.get_by_role("radio", name=label, exact=True).check()
        form.get_by_label("Reason").fill(reason)
        form.get_by_role("button", name="Save").click()
        expect(card(page, key).locator(".verdict-label")).to_contain_text(label)
        expect(card(page, key)).to_contain_text(reason)
    page.reload()
    expect(card(page, "k.1").locator(".verdict-label")).to_contain_text("Supported")
    expect(card(page, "a:b").locator(".verdict-label")).to_contain_text("Partial")
    assert page.failed_requests == []
    assert page.console_problems == []


# --- 5. A selection keeps its sentence's citation ------------------------------------------------


def test_part_of_a_sentence_keeps_the_marker_that_ends_the_sentence(debug):
    page, url = debug("alice", "q017-r3.jsonl")
    select_answer_text(page, "within 14 calendar days of delivery", ANSWER)
    page.locator("#add-claim").get_by_role("button", name="Add claim").click()
    expect(card(page, "c1")).to_contain_text(D01)
    expect(card(page, "c1")).not_to_contain_text("no citation attached")
    expect(card(page, "c1")).not_to_contain_text("number_not_in_evidence")
    expect(card(page, "c1")).not_to_contain_text("claim_without_citation")


def uncited(lines: list[dict]) -> None:
    """A claim from before the sentence rule: part of a sentence, no citation attached."""
    lines[-1]["claims"] = [
        {"claim_id": "c1", "text": "Returns within 14 calendar days of delivery.",
         "spans": [[53, 88]], "citations": []},
    ]  # fmt: skip


def test_a_claim_without_its_sentences_citation_is_relinked_in_one_action(debug):
    page, url = debug("alice", "q017-r3.jsonl", edit=uncited)
    open_card(card(page, "c1"))
    expect(card(page, "c1")).to_contain_text("no citation attached")
    card(page, "c1").get_by_role("button", name=f"Attach {D01}").click()
    expect(card(page, "c1")).not_to_contain_text("no citation attached")
    expect(card(page, "c1").locator(".attached")).to_contain_text(D01)
    card(page, "c1").locator("details.history summary").click()
    expect(card(page, "c1").locator("details.history")).to_contain_text(
        "Attached the citation of its sentence"
    )
    assert page.failed_requests == []


# --- 4. A whole review, and not one problem in the console or the network ------------------------


def test_a_whole_review_has_no_console_problem_and_no_failed_request(debug):
    page, url = debug("alice", "q017-r3.jsonl")
    form = page.locator("#add-claim")
    # Resizing a field writes an inline style on it, which a swap must not copy back.
    form.get_by_label("Claim text").evaluate("el => { el.style.height = '7em'; }")
    select_answer_text(page, "within 14 calendar days of delivery", ANSWER)
    form.get_by_role("button", name="Add claim").click()
    expect(card(page, "c1")).to_contain_text(D01)

    page.get_by_role("link", name="Suggest a split").click()
    suggestions = page.locator("#suggestions")
    suggestions.get_by_role("button", name="Accept part 2 of suggestion 1", exact=True).click()
    expect(card(page, "c2")).to_contain_text("final-sale items are excluded.")
    suggestions.get_by_role("button", name="Accept suggestion 2", exact=True).click()
    expect(card(page, "c3")).to_contain_text(D02)

    select_answer_text(page, "The sources do not say how long processing takes", ANSWER)
    form = page.locator("#add-claim")
    form.get_by_label("abstention").check()
    form.get_by_label("X1").check()
    form.get_by_role("button", name="Add claim").click()
    expect(card(page, "c4")).to_contain_text("abstention")

    card(page, "c1").get_by_role("link", name="Rewrite, relink or withdraw").click()
    card(page, "c1").get_by_label("Claim text").fill("Returns are accepted for 14 days.")
    card(page, "c1").get_by_label("Reason for the change").fill("Self-contained.")
    card(page, "c1").get_by_role("button", name="Save claim revision").click()
    expect(card(page, "c1")).to_contain_text("Claim c1 revised: revision 2.")

    for key, label, reason in [
        ("c1", "Supported", "D-01 (this snapshot) says 14 calendar days."),
        ("c2", "Supported", "D-01 excludes final-sale items."),
        ("c3", "Partial", "D-02 says the warehouse; the claim adds nothing else."),
        ("c4", "Supported", "No passage gives a duration."),
    ]:
        form = verdict_form(page, key)
        form.get_by_role("radio", name=label, exact=True).check()
        form.get_by_label("Reason").fill(reason)
        form.get_by_role("button", name="Save").click()
        expect(card(page, key).locator(".verdict-label")).to_contain_text(label)

    page.get_by_role("button", name="Keys (?)").click()
    expect(page.get_by_role("dialog", name="Keyboard")).to_be_visible()
    page.get_by_role("button", name="Close").click()
    page.get_by_role("button", name="Decomposition complete").click()
    expect(page.locator("#review-status")).to_contain_text("decomposition complete")
    page.reload()
    expect(page.locator("article.card")).to_have_count(4)
    expect(page.locator("#review-status")).to_contain_text("decomposition complete")
    assert page.console_problems == []
    assert page.failed_requests == []


# --- 6. Save shows progress, then a confirmation, then the next card ----------------------------


def test_save_shows_progress_then_a_confirmation_and_moves_to_the_next_card(debug):
    page, url = debug("bob")
    held = []
    page.route("**/verdict/", lambda route: held.append(route))  # held until let go
    form = verdict_form(page, "C-017-1")
    form.get_by_role("radio", name="Unsupported", exact=True).check()
    form.get_by_label("Reason").fill("D-01 excludes final-sale items.")
    loaded: list[str] = []
    page.on("request", lambda request: loaded.append(request.url))
    form.get_by_role("button", name="Save").click()
    expect(form.get_by_role("button", name="Save")).to_be_disabled()
    expect(form.get_by_text("Saving…")).to_be_visible()
    while not held:  # the route's handler runs when Playwright next pumps its events
        page.wait_for_timeout(20)
    # While it is in flight nothing else in the card can be opened or typed in: the card
    # comes back compact, and would drop it.
    expect(card(page, "C-017-1").locator("details.history")).to_have_attribute("inert", "")
    expect(card(page, "C-017-1").locator(".revise-slot")).to_have_attribute("inert", "")
    held[0].continue_()
    expect(card(page, "C-017-1").locator(".saved")).to_have_text(
        re.compile(r"Saved, revision \d+\.")
    )
    # Nothing else was typed in the card: it came back compact, its label the saved one,
    # and it is not loaded whole again behind the reviewer's back.
    saved = card(page, "C-017-1")
    expect(saved).to_have_attribute("data-compact", "")
    expect(saved.locator(".verdict-label")).to_have_text("Unsupported")
    # Bob judged none of them yet: the next card takes the focus.
    expect(card(page, "C-017-2")).to_be_focused()
    expect(card(page, "C-017-2").locator("form[data-verdict-form]")).to_be_visible()
    page.wait_for_timeout(300)
    expect(saved).to_have_attribute("data-compact", "")
    assert [url for url in loaded if url.endswith("/claims/C-017-1/card/")] == []
    # Focused again, it opens whole with the saved verdict in its history.
    open_card(saved)
    expect(saved.locator("details.history")).to_contain_text("D-01 excludes final-sale items.")
    expect(saved.get_by_role("button", name="Save")).to_be_enabled()


def test_a_save_comes_back_whole_while_something_else_in_the_card_is_open_or_typed(debug):
    page, url = debug("lead", edit=disagreeing)
    disputed = card(page, "C-017-2")
    form = verdict_form(page, "C-017-2")
    disputed.locator("details.history summary").click()
    form.get_by_role("radio", name="Partial", exact=True).check()
    form.get_by_label("Reason").fill("First reading.")
    form.get_by_role("button", name="Save").click()
    expect(disputed.locator(".saved")).to_be_visible()
    # The history was open: the card came back whole, the history still open.
    expect(disputed).not_to_have_attribute("data-compact", "")
    expect(disputed.locator("details.history")).to_have_attribute("open", "")
    disputed.locator("details.history summary").click()
    # A reason typed in the adjudication form, closed again: whole, with the text kept.
    disputed.locator("details.adjudicate summary").click()
    adjudicate = disputed.locator("details.adjudicate form")
    adjudicate.get_by_label("Reason").fill("An adjudication, not sent yet.")
    disputed.locator("details.adjudicate summary").click()
    form = verdict_form(page, "C-017-2")
    form.get_by_label("Reason").fill("Second reading.")
    form.get_by_role("button", name="Save").click()
    expect(disputed.locator(".saved")).to_contain_text("Saved, revision")
    expect(disputed).not_to_have_attribute("data-compact", "")
    expect(disputed.locator("details.adjudicate form").get_by_label("Reason")).to_have_value(
        "An adjudication, not sent yet."
    )
    assert page.console_problems == []


# --- 7. The whole case from the keyboard ---------------------------------------------------------


def test_a_whole_case_is_reviewed_from_the_keyboard(debug):
    page, url = debug("alice", "q017-r3.jsonl")
    keys = page.get_by_role("dialog", name="Keyboard")
    page.keyboard.press("?")
    expect(keys).to_be_visible()
    for text in ["suggest a split", "add claim", "decomposition complete", "save the card"]:
        expect(keys).to_contain_text(text)
    page.keyboard.press("Escape")
    expect(keys).to_be_hidden()

    # Split: p brings the suggestions, Ctrl+Enter accepts one and goes on to the next.
    page.keyboard.press("p")
    suggestions = page.locator("#suggestions")
    expect(suggestions.get_by_label("Suggested claim 1", exact=True)).to_be_focused()
    page.keyboard.press("Control+Enter")
    expect(card(page, "c1")).to_be_visible()
    expect(suggestions.get_by_label("Suggested claim 2", exact=True)).to_be_focused()
    page.keyboard.press("Control+End")
    page.keyboard.press("Backspace")
    page.keyboard.type(" (not before).")
    page.keyboard.press("Control+Enter")
    expect(card(page, "c2")).to_contain_text("warehouse (not before).")
    expect(suggestions.get_by_label("Suggested claim 3", exact=True)).to_be_focused()
    page.keyboard.press("Escape")
    # a: to the claim text first (nothing is selected), then Ctrl+Enter adds it.
    page.keyboard.press("a")
    expect(page.locator("#add-claim").get_by_label("Claim text")).to_be_focused()
    page.keyboard.type("No passage says how long processing takes.")
    page.keyboard.press("Control+Enter")
    expect(card(page, "c3")).to_be_focused()

    # Judge: a digit, r, the reason, Escape, s; the next card not judged takes the focus.
    verdicts = {
        "c3": ("4", "A statement about the sources, not about returns."),
        "c1": ("1", "D-01 says 14 days and excludes final-sale items."),
        "c2": ("3", "D-02 does not say 'not before'."),
    }
    loaded: list[str] = []
    page.on("request", lambda request: loaded.append(request.url))
    for key, (digit, reason) in verdicts.items():
        expect(card(page, key)).to_be_focused()
        page.keyboard.press(digit)
        page.keyboard.press("r")
        page.keyboard.type(reason)
        page.keyboard.press("Escape")
        page.keyboard.press("s")
        expect(card(page, key).locator(".saved")).to_be_visible()
    # Each saved card came back compact and stayed so: the focus had moved on, and none was
    # loaded whole again (a compact card loads itself whole when it takes the focus).
    page.wait_for_timeout(300)
    for key in verdicts:
        expect(card(page, key)).to_have_attribute("data-compact", "")
    assert [url for url in loaded if url.endswith("/card/")] == []
    expect(card(page, "c1").locator(".verdict-label")).to_contain_text("Supported")
    expect(card(page, "c2").locator(".verdict-label")).to_contain_text("Unsupported")
    expect(card(page, "c3").locator(".verdict-label")).to_contain_text("Not assessable")
    expect(page.get_by_role("button", name="Decomposition complete")).to_be_focused()
    page.keyboard.press("c")
    expect(page.locator("#review-status")).to_contain_text("decomposition complete")
    # The labels keep their names; the keys are shown beside them, not read as part of them.
    for name in ["Supported", "Partial", "Unsupported", "Not assessable"]:
        expect(
            verdict_form(page, "c1").get_by_role("radio", name=name, exact=True)
        ).to_be_visible()
    # After a reload every card is compact: j opens each as it takes the focus, and a
    # digit pressed before it arrived still picks the label.
    page.reload()
    page.locator("h1").click()
    page.keyboard.press("j")
    page.keyboard.press("2")
    expect(card(page, "c1")).to_be_focused()
    expect(card(page, "c1").get_by_role("radio", name="Partial", exact=True)).to_be_checked()
    page.keyboard.press("j")
    expect(card(page, "c2")).to_be_focused()
    expect(card(page, "c2").locator("form[data-verdict-form]")).to_be_visible()
    page.keyboard.press("k")
    expect(card(page, "c1")).to_be_focused()
    # Judged again once every card is judged and the decomposition complete: the focus
    # has nowhere to move on to, so it stays on the saved card, which opens whole again.
    page.keyboard.press("r")
    page.keyboard.type("D-01 says 14 days; final-sale items only by the policy page.")
    page.keyboard.press("Escape")
    page.keyboard.press("s")
    expect(card(page, "c1").locator(".verdict-label")).to_contain_text("Partial")
    expect(card(page, "c1")).to_be_focused()
    expect(card(page, "c1").locator("form[data-verdict-form]")).to_be_visible()
    assert page.console_problems == []
    assert page.failed_requests == []


# --- 8. Compact cards, whole on demand ---------------------------------------------------------


def test_a_compact_card_opens_whole_on_focus_and_on_click(debug):
    page, url = debug("bob")
    first, third = card(page, "C-017-1"), card(page, "C-017-3")
    expect(page.locator("article.card.compact")).to_have_count(4)
    expect(first.locator("form")).to_have_count(0)
    expect(first).to_contain_text("The passage explicitly excludes final-sale items")  # reason
    # j gives the first card the focus, and with it its whole self.
    page.locator("h1").click()
    page.keyboard.press("j")
    expect(first).to_be_focused()
    expect(first.locator("form[data-verdict-form]")).to_be_visible()
    # A click anywhere on a compact card opens it too, and it keeps the focus.
    third.locator(".claim-text").click()
    expect(third.locator("form[data-verdict-form]")).to_be_visible()
    expect(third).to_be_focused()
    expect(page.locator("article.card.compact")).to_have_count(2)
    assert page.failed_requests == []
    assert page.console_problems == []


def test_a_leads_card_shows_every_label_marks_superseded_and_adjudicates_disagreements(debug):
    page, url = debug("lead", edit=disagreeing)
    disputed, settled = card(page, "C-017-2"), card(page, "C-017-3")
    labels = disputed.locator(".card-head .labels")
    expect(labels).to_contain_text("You: not judged")
    expect(labels).to_contain_text("seed-protocol (imported): Partial")
    expect(labels).to_contain_text("judge-b (imported): Supported")
    expect(labels).to_contain_text("disagreement")
    # Adjudicate only where the annotators disagree.
    open_card(settled)
    expect(settled.locator("details.adjudicate")).to_have_count(0)
    open_card(disputed)
    expect(disputed.locator("details.adjudicate")).to_have_count(1)

    for label, reason in [("Partial", "First reading."), ("Supported", "Second reading.")]:
        form = verdict_form(page, "C-017-2")
        form.get_by_role("radio", name=label, exact=True).check()
        form.get_by_label("Reason").fill(reason)
        form.get_by_role("button", name="Save").click()
        expect(labels).to_contain_text(f"You: {label}")
    expect(labels).to_contain_text("judge-b (imported): Supported")
    # Nothing typed in the adjudication form beside it: the saved card came back compact.
    expect(disputed).to_have_attribute("data-compact", "")
    open_card(disputed)
    history = disputed.locator("details.history")
    history.locator("summary").click()
    expect(history.locator("li", has_text="First reading.")).to_contain_text("superseded")
    expect(history.locator("li", has_text="Second reading.")).not_to_contain_text("superseded")
    expect(history.locator("li", has_text="judge-b")).not_to_contain_text("superseded")
    assert page.failed_requests == []
    assert page.console_problems == []


def many_readings(lines: list[dict]) -> None:
    """25 imported judges of C-017-2 beside seed-protocol: a history longer than a card shows."""
    lines[-1]["claims"][1]["judgements"].extend(
        {"annotator": f"judge-{n:02}", "support": "partial", "reason": f"Reading {n:02}."}
        for n in range(25)
    )


def test_a_long_history_shows_its_newest_entries_and_the_rest_on_demand(debug):
    from cards.selectors import HISTORY_SHOWN

    page, url = debug("lead", edit=many_readings)
    total = 1 + 1 + 25  # the claim's revision, seed-protocol's verdict, the 25 readings
    open_card(card(page, "C-017-2"))
    history = card(page, "C-017-2").locator("details.history")
    history.locator("summary").click()
    expect(history.locator("ol.history-list > li")).to_have_count(HISTORY_SHOWN)
    expect(history).to_contain_text(f"{total - HISTORY_SHOWN} older entries not shown.")
    history.get_by_role("link", name=re.compile(r"^Show the whole history")).click()
    history = card(page, "C-017-2").locator("details.history")  # the card was swapped
    expect(history).not_to_contain_text("older entries not shown")
    history.locator("summary").click()
    expect(history.locator("ol.history-list > li")).to_have_count(total)
    expect(history.locator("ol.history-list")).to_have_attribute("start", str(total))
    assert page.failed_requests == []
    assert page.console_problems == []


def test_without_javascript_a_case_is_split_relinked_judged_and_completed(plain):
    page, url = plain("alice", "q017-r3.jsonl", edit=uncited)
    open_card(card(page, "c1"))  # the page with c1 whole
    card(page, "c1").get_by_role("button", name=f"Attach {D01}").click()
    expect(card(page, "c1")).to_contain_text("Claim c1 revised: revision 2.")
    expect(card(page, "c1").locator(".attached")).to_contain_text(D01)

    page.get_by_role("link", name="Suggest a split").click()
    suggestions = page.locator("#suggestions")
    suggestions.get_by_role("button", name="Accept suggestion 2", exact=True).click()
    expect(card(page, "c2")).to_contain_text(D02)
    expect(page.locator("#suggestions")).to_contain_text("added as c2")
    page.locator("#suggestions").get_by_label("Merge suggestion 3", exact=True).check()
    page.get_by_label("Text of the merged claim").fill("No processing time is given.")
    page.get_by_role("button", name="Merge selected into one claim").click()
    expect(card(page, "c3")).to_contain_text("201–250")

    form = verdict_form(page, "c2")
    form.get_by_role("radio", name="Supported", exact=True).check()
    form.get_by_label("Reason").fill("D-02 names the warehouse.")
    form.get_by_role("button", name="Save").click()
    expect(card(page, "c2").locator(".saved")).to_have_text("Saved, revision 2.")
    # The bundle carried a claim, so the decomposition counts as complete: reopen, complete.
    page.get_by_role("button", name="Reopen decomposition").click()
    expect(page.locator("#review-status")).to_contain_text("unreviewed")
    page.get_by_role("button", name="Decomposition complete").click()
    expect(page.locator("#review-status")).to_contain_text("decomposition complete")
    assert page.failed_requests == []
