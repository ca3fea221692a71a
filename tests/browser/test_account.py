"""A user makes an API token on their account page, uses it, and revokes it, in a browser.

Served as `make run` serves it (DEBUG on): the token is shown once in place, the API takes
it, and once revoked refuses it.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in

pytestmark = pytest.mark.browser


def test_a_user_makes_a_token_uses_it_and_revokes_it(page, live):
    log_in(page, "bob")
    page.goto("/")
    page.get_by_role("link", name="bob", exact=True).click()
    expect(page.get_by_role("heading", name="Your account", level=1)).to_be_visible()

    name = "nightly-ci-browser"
    page.get_by_label("Name of a new token").fill(name)
    page.get_by_role("button", name="Make a token").click()
    shown = page.get_by_label("Token", exact=True)
    expect(shown).to_have_value(re.compile(r"^evr_[0-9a-f]{8}_\S{20,}$"))
    token = shown.input_value()
    expect(page.get_by_role("row", name=re.compile(name))).to_be_visible()

    bearer = {"Authorization": f"Bearer {token}"}
    assert page.request.get("/api/projects", headers=bearer).status == 200

    row = page.get_by_role("row", name=re.compile(name))
    row.get_by_role("button", name=re.compile(r"^Revoke")).click()
    expect(page.get_by_role("status")).to_contain_text("revoked")
    expect(page.get_by_role("row", name=re.compile(name))).to_contain_text("revoked")
    assert page.request.get("/api/projects", headers=bearer).status == 401
    # The token was shown once: nothing on the page holds it any more.
    assert token not in page.content()
    assert page.console_problems == [] and page.failed_requests == []
