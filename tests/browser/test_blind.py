"""Blind double review in the demo's `demo-blind` project, as two reviewers live it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in

pytestmark = pytest.mark.browser

CASE = "/p/demo-blind/runs/p7-answer-a/cases/P7-Q1/"
KEYS = ("c1", "c4", "c5")
BOB = "Bob: the manual of version 3 says so."
ALICE = "Alice: read against D1 version 3."
COPY = "Alice, having read bob's verdict."


def judge_every_card(page, support: str, reason: str) -> None:
    for key in KEYS:
        card = page.locator(f"#card-{key}")
        form = card.locator("form[data-verdict-form]")
        form.get_by_label(re.compile(f"^{support}")).check()
        form.locator("textarea[name=reason]").fill(reason)
        form.get_by_role("button", name="Save").click()
        expect(page.locator(f"#card-{key} .verdict-label")).to_contain_text(support)


def log_out(page) -> None:
    page.get_by_role("button", name="Log out").click()


def test_a_reviewer_sees_the_others_only_after_completing_her_own_review(page):
    log_in(page, "bob")
    page.goto(CASE)
    judge_every_card(page, "Supported", BOB)
    log_out(page)

    log_in(page, "alice")
    page.goto(CASE)
    status = page.locator("#review-status")
    expect(status).to_contain_text("blind review")
    judge_every_card(page, "Partial", ALICE)
    for hidden in (BOB, "seed-protocol", "bob"):
        expect(page.locator("#workspace")).not_to_contain_text(hidden)

    page.get_by_role("button", name="My review is complete").click()
    # Swapped in place: every card now shows bob's verdict and the imported judgement.
    expect(page.locator("#card-c1")).to_contain_text(BOB)
    expect(page.locator("#card-c1")).to_contain_text("seed-protocol")
    expect(status).not_to_contain_text("blind review")
    expect(status).to_contain_text("Your review is complete")  # the message, in the status row

    card = page.locator("#card-c1")
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
