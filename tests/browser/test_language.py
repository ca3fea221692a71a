"""The header's language switch, with JavaScript and without (docs/i18n.md)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import fresh_run, log_in
from tests.browser.test_review import select_answer_text

pytestmark = pytest.mark.browser

RESI = (
    "Può restituire qualsiasi articolo entro 30 giorni con rimborso completo [1], "
    "compresi gli articoli aperti [2]."
)
FRAGMENT = "Può restituire qualsiasi articolo entro 30 giorni"


def test_a_reviewer_reviews_the_italian_returns_card_in_italian_and_switches_back(
    page, live, tmp_path
):
    case = fresh_run(live, tmp_path, "resi-it.jsonl")
    log_in(page, "alice")
    page.goto(case)
    page.get_by_role("button", name="Italiano").click()
    expect(page.locator("html")).to_have_attribute("lang", "it")
    assert page.url.endswith(case)
    expect(page.get_by_role("heading", name="Risposta")).to_be_visible()

    # What app.js writes comes from the page, in its language.
    select_answer_text(page, FRAGMENT, RESI)
    form = page.locator("#add-claim")
    expect(form).to_contain_text(f"Dalla risposta in 0–{len(FRAGMENT)}")
    form.get_by_role("button", name="Aggiungi affermazione").click()
    card = page.locator("#card-c1")
    expect(card).to_contain_text(FRAGMENT)
    expect(card.get_by_text("Parzialmente supportata")).to_be_visible()
    expect(card.get_by_role("button", name="Salva")).to_be_visible()

    page.get_by_role("button", name="Tasti (?)").click()
    keys = page.get_by_role("dialog", name="Tastiera")
    expect(keys).to_contain_text("suggerisci una scomposizione")
    keys.get_by_role("button", name="Chiudi").click()
    expect(keys).to_be_hidden()

    page.get_by_role("button", name="English").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.get_by_role("heading", name="Answer", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Add claim")).to_be_visible()
    expect(page.locator("#card-c1")).to_contain_text("not judged")
    assert page.console_problems == []


def test_the_login_page_switches_to_italian_without_javascript(plain_page):
    plain_page.goto("/login/")
    plain_page.get_by_role("button", name="Italiano").click()
    expect(plain_page.get_by_role("heading", name="Accedi")).to_be_visible()
    expect(plain_page.get_by_label("Nome utente")).to_be_visible()
    expect(plain_page.get_by_role("button", name="Italiano")).to_be_disabled()
