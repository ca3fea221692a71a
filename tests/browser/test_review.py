from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, open_card

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


def utf16(text: str) -> int:
    """The length of `text` as the DOM counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


def select_answer_text(page, fragment: str, answer: str = ANSWER) -> None:
    start = answer.index(fragment)
    page.evaluate(SELECT, [utf16(answer[:start]), utf16(answer[: start + len(fragment)])])


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
    # A new card takes the focus; k goes back to the first one.
    expect(page.locator("#card-c3")).to_be_focused()
    page.keyboard.press("k")
    page.keyboard.press("k")
    for number, (key, reason) in enumerate(verdicts, start=1):
        expect(page.locator(f"#card-c{number}")).to_be_focused()
        page.keyboard.press(key)
        page.keyboard.press("r")
        page.keyboard.type(reason)
        page.keyboard.press("Escape")
        page.keyboard.press("s")
        expect(page.locator(f"#card-c{number} .verdict-label")).not_to_contain_text("not judged")
        expect(page.locator(f"#card-c{number}")).to_contain_text("Saved, revision 2.")
    # Every card judged: the focus waits on "Decomposition complete".
    expect(page.get_by_role("button", name="Decomposition complete")).to_be_focused()
    expect(page.locator("#card-c1 .verdict-label")).to_contain_text("Unsupported")
    expect(page.locator("#card-c2 .verdict-label")).to_contain_text("Supported")
    expect(page.locator("#card-c3 .verdict-label")).to_contain_text("Supported")
    # The answer's spans take the colour (and line style) of their verdicts.
    expect(page.locator("#answer .piece.support-supported").first).to_be_visible()

    page.get_by_role("button", name="Decomposition complete").click()
    expect(page.locator("#review-status")).to_contain_text("decomposition complete")

    # A saved card folds back to compact as the focus moves on; a click opens it whole.
    expect(page.locator("#card-c2")).to_have_attribute("data-compact", "")
    page.locator("#card-c2 .claim-text").click()
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
    open_card(card)
    card.get_by_label("Partial").check()
    card.locator("form[data-verdict-form] textarea[name=reason]").evaluate(
        "el => { el.removeAttribute('required'); el.value = '   '; }"
    )
    card.locator("form[data-verdict-form]").get_by_role("button", name="Save").click()
    expect(page.locator("#card-C-017-2")).to_contain_text("A written reason is required")
    expect(page.locator("#card-C-017-2").get_by_label("Partial")).to_be_checked()


# Two characters outside the BMP: one code point each for Python, two UTF-16 units each
# for the DOM. Spans are code points (bundle.md), so the selection must be converted.
EMOJI_ANSWER = (
    "Shipping is free for members \U0001f69a\U0001f4e6. Returns are accepted within 14 days [1]."
)
RETURNS = "Returns are accepted within 14 days"


def emoji_bundle() -> list[dict]:
    ref, text = "R-01@v2#p1", "Returns are accepted within 14 days of delivery."
    marker = EMOJI_ANSWER.index("[1]")
    return [
        {
            "kind": "run", "schema": "evidence-bundle/1", "run_id": "emoji-r1",
            "created_at": "2026-10-01T12:00:00Z", "collection_snapshot": "emoji@1",
            "system": {"model": "m"},
        },
        {
            "kind": "passage", "ref": ref, "doc_id": "R-01", "version": "v2", "chunk_id": "p1",
            "text": text,
        },
        {"kind": "case", "case_id": "E-1", "query": "How long is the return window?"},
        {
            "kind": "response", "case_id": "E-1", "text": EMOJI_ANSWER,
            "retrieved": [{"ref": ref, "rank": 1}],
            "citations": [{"marker": "[1]", "ref": ref, "start": marker, "end": marker + 3}],
        },
    ]  # fmt: skip


def test_a_selection_after_an_emoji_becomes_a_span_in_code_points(page, live, tmp_path):
    bundle = tmp_path / "emoji.jsonl"
    lines = (json.dumps(line, ensure_ascii=False) for line in emoji_bundle())
    bundle.write_text("\n".join(lines) + "\n", encoding="utf-8")
    live.manage("import_bundle", str(bundle), "--project", "demo")
    log_in(page, "alice")
    page.goto("/p/demo/runs/emoji-r1/cases/E-1/")

    select_answer_text(page, RETURNS, EMOJI_ANSWER)
    start = EMOJI_ANSWER.index(RETURNS)
    form = page.locator("#add-claim")
    # The spans are a hidden field, derived from the selection and shown, never typed.
    expect(form.locator("input[name=spans]")).to_have_value(f"{start}-{start + len(RETURNS)}")
    expect(form).to_contain_text(f"From the answer at {start}–{start + len(RETURNS)}")
    expect(form.get_by_label("Claim text")).to_have_value(RETURNS)
    form.get_by_role("button", name="Add claim").click()

    card = page.locator("#card-c1")
    expect(card).to_contain_text(f"{start}–{start + len(RETURNS)}")
    expect(card).to_contain_text("R-01@v2#p1")  # the marker right after the span
    expect(page.locator("#answer .piece.claimed")).to_have_text(RETURNS)
    assert page.console_problems == []


@pytest.mark.parametrize(
    ("text", "offset", "expected"),
    [
        ("abc", 2, 2),
        ("a\U0001f69ab", 3, 2),  # after the emoji: 3 UTF-16 units, 2 code points
        ("\U0001f69a\U0001f4e6 x", 5, 3),
        ("\u00e9t\u00e9", 3, 3),  # accented letters are one unit and one code point
    ],
)
def test_a_utf16_offset_becomes_a_code_point_offset(page, text, offset, expected):
    page.goto("/login/")
    assert (
        page.evaluate(
            "([text, offset]) => window.evidenceReview.codePointOffset(text, offset)",
            [text, offset],
        )
        == expected
    )
