"""Blind double review in the demo's `demo-blind` project, as two reviewers live it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, open_card

pytestmark = pytest.mark.browser

CASE = "/p/demo-blind/runs/p7-answer-a/cases/P7-Q1/"
KEYS = ("c1", "c4", "c5")
BOB = "Bob: the manual of version 3 says so."
ALICE = "Alice: read against D1 version 3."
COPY = "Alice, having read bob's verdict."


def judge_every_card(page, support: str, reason: str) -> None:
    for key in KEYS:
        card = page.locator(f"#card-{key}")
        open_card(card)
        form = card.locator("form[data-verdict-form]")
        form.get_by_label(re.compile(f"^{support}")).check()
        form.locator("textarea[name=reason]").fill(reason)
        form.get_by_role("button", name="Save").click()
        expect(page.locator(f"#card-{key} .verdict-label")).to_contain_text(support)


def log_out(page) -> None:
    page.get_by_role("button", name="Log out").click()


def test_a_reviewer_sees_the_others_only_after_completing_her_own_review(page):
    log_in(page, "bob", fresh=True)
    page.goto(CASE)
    judge_every_card(page, "Supported", BOB)
    log_out(page)

    log_in(page, "alice", fresh=True)
    page.goto(CASE)
    status = page.locator("#review-status")
    expect(status).to_contain_text("blind review")
    judge_every_card(page, "Partial", ALICE)
    # While blind, a card's header has my label and nothing of anyone else's.
    labels = page.locator("#card-c1 .card-head .labels")
    expect(labels).to_have_text(re.compile(r"^\s*You: Partial\s*$"))
    for hidden in (BOB, "seed-protocol", "bob"):
        expect(page.locator("#workspace")).not_to_contain_text(hidden)

    page.get_by_role("button", name="My review is complete").click()
    # Swapped in place: every header now has bob's label and the imported judgement's.
    expect(labels).to_contain_text("You: Partial")
    expect(labels).to_contain_text("bob: Supported")
    expect(labels).to_contain_text("seed-protocol (imported):")
    expect(status).not_to_contain_text("blind review")
    expect(status).to_contain_text("Your review is complete")  # the message, in the status row

    card = page.locator("#card-c1")
    open_card(card)
    expect(card.locator(".verdicts")).to_contain_text(BOB)  # the whole card: his reason
    form = card.locator("form[data-verdict-form]")
    form.get_by_label(re.compile("^Supported")).check()
    form.locator("textarea[name=reason]").fill(COPY)
    form.get_by_role("button", name="Save").click()
    expect(page.locator("#card-c1 .verdicts")).to_contain_text("informed revision")
    history = page.locator("#card-c1 details.history")
    history.locator("summary").click()
    expect(history.locator("li", has_text=COPY)).to_contain_text("informed revision")
    expect(history.locator("li", has_text=ALICE)).not_to_contain_text("informed revision")
    assert page.console_problems == []
