"""Text no database can store (a NUL byte) in a URL or a form answers 404 or 400, never 500.

PostgreSQL refuses a NUL in any text parameter, so before the check a `%00` in a run id
reached a query and failed there; SQLite stores it. Run on both:
DATABASE_URL=postgres://… .venv/bin/pytest tests/evidence/test_unstorable_text.py
"""

from __future__ import annotations

import pytest

from tests.conftest import import_fixture

RUN = "/p/demo/runs/q017-r1"


@pytest.fixture
def signed_in(client, lead):
    import_fixture("q017-r1.jsonl")
    client.force_login(lead)
    return client


@pytest.mark.parametrize(
    "url",
    [
        "/p/demo/runs/%00/",
        f"{RUN}/cases/Q-%00/",
        f"{RUN}/figures/%00",
        "/p/de%00mo/",
        "/%00",
    ],
)
def test_a_nul_in_the_path_is_not_found(signed_in, url):
    assert signed_in.get(url).status_code == 404


@pytest.mark.parametrize(
    "url",
    [
        "/p/demo/work/?run=%00",
        "/p/demo/work/?status=%00",
        f"{RUN}/figures/?source=%00",
        "/p/demo/compare/?a=q017-r1&b=%00",
        "/p/demo/compare/summary/?a=q017-r1&b=q017-r2&source=%00",
        "/p/demo/audit/?run=%00",
        "/p/demo/work/?%00=1",
    ],
)
def test_a_nul_in_the_query_string_is_a_bad_request(signed_in, url):
    assert signed_in.get(url).status_code == 400


@pytest.mark.parametrize(
    ("url", "data"),
    [
        ("/p/demo/members/", {"username": "ali\x00ce", "role": "reviewer"}),
        (f"{RUN}/assign/", {"reviewer": "\x00", "responses": ["1"]}),
        (f"{RUN}/cases/Q-017/claims/", {"text": "a claim\x00"}),
    ],
)
def test_a_nul_in_a_form_field_is_a_bad_request(signed_in, url, data):
    assert signed_in.post(url, data).status_code == 400


def test_a_nul_in_the_login_form_is_no_server_error(client, lead):
    response = client.post("/login/", {"username": "lead\x00", "password": "x"})
    assert response.status_code in (200, 400)


def test_an_ordinary_query_string_still_works(signed_in):
    assert signed_in.get("/p/demo/work/?run=q017-r1").status_code == 200
