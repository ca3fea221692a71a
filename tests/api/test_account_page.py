"""The account page: a token made is shown once, by plain post and through HTMX; revoked."""

from __future__ import annotations

import re

from api.models import ApiToken
from api.selectors import valid_token
from api.services import token_create

TOKEN = re.compile(rb"evr_[0-9a-f]{8}_[A-Za-z0-9_-]{43}")


def test_the_account_page_lists_the_users_tokens_only(client, reviewer, second_reviewer):
    token_create(user=reviewer, name="nightly CI")
    token_create(user=second_reviewer, name="bobs laptop")
    client.force_login(reviewer)
    page = client.get("/account/")
    assert page.status_code == 200
    assert b"nightly CI" in page.content
    assert b"bobs laptop" not in page.content
    assert TOKEN.search(page.content) is None


def test_a_token_made_by_plain_post_is_shown_once(client, reviewer):
    client.force_login(reviewer)
    response = client.post("/account/tokens/", {"name": "nightly CI"})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    token = TOKEN.search(response.content).group().decode()
    assert valid_token(token=token).user == reviewer
    assert ApiToken.objects.get().name == "nightly CI"
    assert TOKEN.search(client.get("/account/").content) is None


def test_a_token_made_through_htmx_answers_the_tokens_section(client, reviewer):
    client.force_login(reviewer)
    response = client.post("/account/tokens/", {"name": "ci"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert response.content.lstrip().startswith(b'<section id="tokens"')
    assert TOKEN.search(response.content) is not None


def test_a_name_too_long_is_refused_with_the_reason(client, reviewer):
    client.force_login(reviewer)
    response = client.post("/account/tokens/", {"name": "x" * 101})
    assert response.status_code == 400
    assert b"at most 100 characters" in response.content
    assert not ApiToken.objects.exists()


def test_a_user_revokes_a_token_by_plain_post(client, reviewer):
    row, token = token_create(user=reviewer, name="")
    client.force_login(reviewer)
    response = client.post(f"/account/tokens/{row.prefix}/revoke/")
    assert response.status_code == 302
    assert valid_token(token=token) is None
    assert b"revoked" in client.get("/account/").content


def test_a_user_revokes_a_token_through_htmx(client, reviewer):
    row, token = token_create(user=reviewer, name="")
    client.force_login(reviewer)
    response = client.post(f"/account/tokens/{row.prefix}/revoke/", headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert b"Token evr_" in response.content  # the message, inside the fragment
    assert valid_token(token=token) is None


def test_nobody_revokes_anyone_elses_token(client, reviewer, second_reviewer):
    row, token = token_create(user=second_reviewer, name="")
    client.force_login(reviewer)
    assert client.post(f"/account/tokens/{row.prefix}/revoke/").status_code == 404
    assert valid_token(token=token) is not None


def test_the_account_page_needs_a_login(client, db):
    response = client.get("/account/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
