"""The side-by-side page of large runs shows its pairs at once and loads its summary after
(the browser tests' servers count every comparison as large: COMPARE_INLINE_PAIRS=0)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations

pytestmark = pytest.mark.browser

# Pairs of runs and sources no other browser test compares: nothing of them is kept yet.
COMPARE = "/p/demo/compare/?a=q017-r2&b=q017-r3&source=annotator:seed-protocol"
PLAIN = "/p/demo/compare/?a=q017-r2&b=q017-r3&source=consensus"


def test_the_summary_loads_in_place_after_the_pairs(server_page):
    page = server_page
    log_in(page, "lead")
    with page.expect_response(lambda response: "/compare/summary/" in response.url) as loaded:
        page.goto(COMPARE)
    assert loaded.value.status == 200
    expect(page.get_by_role("heading", name="Q-017")).to_be_visible()
    band = page.get_by_role("region", name="Summary")
    expect(band).to_contain_text("of 1 pairs comparable")
    expect(page.get_by_role("heading", name="Figures over the")).to_be_visible()
    expect(page.locator("#summary a[hx-get]")).to_have_count(0)  # the placeholder is gone
    assert serious_violations(page) == []
    # The form around it still works: another source, the summary loaded again.
    page.get_by_label("Verdicts from").select_option("default")
    page.get_by_role("button", name="Compare").click()
    expect(page.get_by_role("region", name="Summary")).to_contain_text("pairs comparable")
    assert page.console_problems == [] and page.failed_requests == []


def test_without_javascript_the_summary_is_a_link_to_the_page_with_it(plain_page):
    page = plain_page
    log_in(page, "lead")
    page.goto(PLAIN)
    expect(page.get_by_role("heading", name="Q-017")).to_be_visible()
    link = page.get_by_role("link", name="Show how many pairs are comparable")
    link.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("region", name="Summary")).to_contain_text("of 1 pairs comparable")
    expect(page.get_by_role("heading", name="Q-017")).to_be_visible()  # the pairs too
