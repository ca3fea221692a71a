from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DEMO_PASSWORD, log_in, open_card

pytestmark = pytest.mark.browser

# A reviewer of her own, so that what other browser tests do as alice or bob changes nothing.
NEW_REVIEWER = (
    "from django.contrib.auth.models import User\n"
    "from evidence.models import Project, Role\n"
    "from evidence.services import membership_set\n"
    "user, _ = User.objects.get_or_create(username='carol')\n"
    f"user.set_password({DEMO_PASSWORD!r})\n"
    "user.save()\n"
    "membership_set(project=Project.objects.get(slug='demo'), user=user, role=Role.REVIEWER)\n"
)


def progress(page) -> tuple[int, int]:
    text = page.locator("#progress").inner_text()
    done, total = re.search(r"(\d+) of (\d+) done", text).groups()
    return int(done), int(total)


def judge_every_card(page) -> None:
    """Save a verdict of mine on every current card of the case page."""
    ids = page.locator("article.card:not(.withdrawn)").evaluate_all(
        "cards => cards.map(c => c.id)"
    )
    assert ids, "a case to submit has claims"
    for card_id in ids:
        card = page.locator(f'[id="{card_id}"]')
        open_card(card)
        form = card.locator("form[data-verdict-form]")
        form.locator("input[name=support][value=supported]").check()
        form.get_by_label("Reason").fill("The cited passage says so.")
        form.get_by_role("button", name="Save").click()
        expect(page.locator(f'[id="{card_id}"] .card-head')).to_contain_text("by carol")


def test_a_reviewer_walks_two_cases_with_submit_and_next(page, live):
    live.manage("shell", "-c", NEW_REVIEWER)
    log_in(page, "carol")
    page.goto("/p/demo/")
    page.get_by_role("link", name="My work").click()
    done, total = progress(page)
    assert done == 0 and total >= 3

    page.get_by_role("link", name="Next in my queue").click()
    visited = []
    for by_key in (False, True):  # the button, then its key `d`
        page.wait_for_url(re.compile(r"/cases/[^/]+/$"))
        visited.append(page.url)
        judge_every_card(page)
        if by_key:
            page.locator("h1").click()
            page.keyboard.press("d")
        else:
            page.get_by_role("button", name="Submit and next").click()
        page.wait_for_url(lambda url, here=page.url: url != here)
        expect(page.locator(".messages")).to_contain_text("submitted.")
    third = page.url
    assert len({*visited, third}) == 3  # never the same case twice

    # `n` skips the third case without marking it.
    page.locator("h1").click()
    page.keyboard.press("n")
    page.wait_for_url(lambda url: url != third)
    assert page.url not in visited

    page.goto("/p/demo/work/")
    assert progress(page) == (2, total)
    page.get_by_label("Status").select_option("done")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("tbody tr")).to_have_count(2)
    assert page.console_problems == []
