"""The figures page holds each imported judge against the people, and links where they differ."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LiveServer, fresh_run, log_in
from tests.browser.test_review_day import card, save_verdict

pytestmark = pytest.mark.browser


def a_reviewer_finds_c017_2_supported(page, server: LiveServer, tmp_path) -> str:
    """alice judges C-017-2 of a fresh q017-r1 supported, where seed-protocol finds it
    partial; the URL of its case."""
    url = fresh_run(server, tmp_path, "q017-r1.jsonl")
    log_in(page, "alice")
    page.goto(url)
    save_verdict(page, "C-017-2", "Supported", "D-01 gives the 30-day window in so many words.")
    expect(card(page, "C-017-2")).to_contain_text("by alice")
    # The save moved focus to the next card, which loads whole: let it arrive before the
    # caller leaves the page (leaving aborts it, a failed request).
    page.wait_for_load_state("networkidle")
    return url


def test_a_disagreement_with_an_imported_judge_links_to_the_claims_card(page, live, tmp_path):
    url = a_reviewer_finds_c017_2_supported(page, live, tmp_path)
    page.goto(f"{url.split('cases/')[0]}figures/")

    judges = page.get_by_role("region", name="Judges against people")
    expect(judges.get_by_role("heading", name="seed-protocol")).to_be_visible()
    expect(judges).to_contain_text("On the 1 claim both judged: they agree on 0 / 1")
    judges.get_by_text("1 claim where seed-protocol and the people differ").click()
    link = judges.get_by_role("link", name="Q-017 · C-017-2")
    expect(link.locator("xpath=..")).to_contain_text(
        "seed-protocol Partial, alice Supported — The return window is 30 days."
    )
    link.click()

    page.wait_for_url(f"**{url}#card-C-017-2")
    # The card took the focus as the page's target, and its focus opened it whole.
    claim = card(page, "C-017-2")
    expect(claim).to_be_focused()
    expect(claim).not_to_have_class(re.compile(r"\bcompact\b"))
    expect(claim.get_by_label("Reason")).to_be_visible()
    expect(claim).to_be_in_viewport()
    assert page.console_problems == [] and page.failed_requests == []


def test_the_agreement_panel_arrives_after_the_page_and_compares_the_chosen_in_place(
    page, live, tmp_path
):
    url = a_reviewer_finds_c017_2_supported(page, live, tmp_path)
    figures = f"{url.split('cases/')[0]}figures/"
    page.goto(figures)
    panel = page.get_by_role("region", name="Agreement between annotators")
    expect(panel).to_contain_text("alice, seed-protocol: all agree on 0 / 1")
    panel.get_by_role("checkbox", name="alice").check()
    panel.get_by_role("button", name="Compare these").click()
    expect(panel).to_contain_text("No claim has been labelled by two of these annotators yet.")
    expect(panel.get_by_role("checkbox", name="alice")).to_be_checked()
    assert page.url.endswith(figures)  # swapped in place: the figures page is still open
    assert page.console_problems == [] and page.failed_requests == []


def test_without_javascript_the_agreement_panel_is_a_link_to_a_page_of_its_own(plain_page):
    log_in(plain_page, "lead")
    plain_page.goto("/p/demo/runs/q017-r1/figures/?source=annotator:seed-protocol")
    plain_page.get_by_role(
        "link", name="Show the agreement between annotators and the judges against people"
    ).click()
    plain_page.wait_for_url("**/p/demo/runs/q017-r1/figures/agreement/")
    expect(plain_page.get_by_role("heading", level=1)).to_contain_text("Agreement on")
    plain_page.get_by_role("button", name="Compare these").click()
    plain_page.wait_for_url("**/figures/agreement/?*")
    expect(plain_page.get_by_role("region", name="Agreement between annotators")).to_be_visible()
