from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in

pytestmark = pytest.mark.browser

ANSWER = (
    "Items bought directly from the store can be returned within 14 calendar days of delivery, "
    "but final-sale items are excluded [D-01]. Refund processing starts once the item reaches "
    "the warehouse [D-02]. The sources do not say how long processing takes."
)

SELECT = """([start, end]) => {
  const answer = document.getElementById("answer");
  const walker = document.createTreeWalker(answer, NodeFilter.SHOW_TEXT);
  let seen = 0, range = document.createRange(), node;
  while ((node = walker.nextNode())) {
    const length = node.textContent.length;
    if (seen <= start && start <= seen + length) range.setStart(node, start - seen);
    if (seen <= end && end <= seen + length) { range.setEnd(node, end - seen); break; }
    seen += length;
  }
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  answer.dispatchEvent(new MouseEvent("mouseup", {bubbles: true}));
}"""


def select_answer_text(page, fragment: str) -> None:
    start = ANSWER.index(fragment)
    page.evaluate(SELECT, [start, start + len(fragment)])


def test_a_reviewer_splits_judges_by_keyboard_and_completes_a_case(page):
    log_in(page, "alice")
    page.goto("/p/demo/runs/q017-r3/cases/Q-017/")
    expect(page.get_by_text("No claims yet")).to_be_visible()

    claims = [
        ("Items bought directly from the store can be returned within 14 calendar days of delivery",  # noqa: E501
         "Direct purchases can be returned within 14 calendar days of delivery.", "G1"),
        ("final-sale items are excluded", "Final-sale items are excluded from returns.", "G2"),
        ("Refund processing starts once the item reaches the warehouse",
         "Refund processing starts when the item reaches the warehouse.", "G3"),
    ]  # fmt: skip
    for number, (fragment, rewritten, fact) in enumerate(claims, start=1):
        select_answer_text(page, fragment)
        form = page.locator("#add-claim")
        expect(form.get_by_label("Claim text")).to_have_value(fragment)
        form.get_by_label("Claim text").fill(rewritten)
        form.get_by_label(fact, exact=True).check()
        form.get_by_role("button", name="Add claim").click()
        expect(page.locator(f"#card-c{number}")).to_contain_text(rewritten)
    expect(page.locator("article.card")).to_have_count(3)
    # Citations right after a span are attached automatically.
    expect(page.locator("#card-c2")).to_contain_text("D-01@returns-v4#p04")
    expect(page.locator("#card-c3")).to_contain_text("D-02@refunds-v2#p07")

    verdicts = [
        ("3", "The passage (this snapshot) says 14 days; the claim matches it, but D-01 drifted."),
        ("1", "D-01 excludes final-sale items explicitly."),
        ("1", "D-02 gives arrival at the warehouse as the start."),
    ]
    page.locator("body").click(position={"x": 5, "y": 5})
    for number, (key, reason) in enumerate(verdicts, start=1):
        page.keyboard.press("j")
        expect(page.locator(f"#card-c{number}")).to_be_focused()
        page.keyboard.press(key)
        page.keyboard.press("r")
        page.keyboard.type(reason)
        page.keyboard.press("Escape")
        page.keyboard.press("s")
        expect(page.locator(f"#card-c{number} .verdict-label")).not_to_contain_text("not judged")
    expect(page.locator("#card-c1 .verdict-label")).to_contain_text("Unsupported")
    expect(page.locator("#card-c2 .verdict-label")).to_contain_text("Supported")
    expect(page.locator("#card-c3 .verdict-label")).to_contain_text("Supported")
    # The answer's spans take the colour (and line style) of their verdicts.
    expect(page.locator("#answer .piece.support-supported").first).to_be_visible()

    page.get_by_role("button", name="Decomposition complete").click()
    expect(page.locator("#review-status")).to_contain_text("decomposition complete")

    history = page.locator("#card-c2 details.history")
    history.locator("summary").click()
    expect(history).to_contain_text("split the claim")
    expect(history).to_contain_text("judged it supported")
    expect(history).to_contain_text("D-01 excludes final-sale items explicitly.")

    page.reload()
    expect(page.locator("article.card")).to_have_count(3)
    expect(page.locator("#review-status")).to_contain_text("decomposition complete")
    assert page.console_problems == []


def test_a_blank_reason_is_refused_and_the_typed_label_is_kept(page):
    log_in(page, "bob")
    page.goto("/p/demo/runs/q017-r1/cases/Q-017/")
    card = page.locator("#card-C-017-2")
    card.get_by_label("Partial").check()
    card.locator("form[data-verdict-form] textarea[name=reason]").evaluate(
        "el => { el.removeAttribute('required'); el.value = '   '; }"
    )
    card.locator("form[data-verdict-form]").get_by_role("button", name="Save").click()
    expect(page.locator("#card-C-017-2")).to_contain_text("A written reason is required")
    expect(page.locator("#card-C-017-2").get_by_label("Partial")).to_be_checked()
