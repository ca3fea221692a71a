"""Who the API lets in: a valid token's user, never a session; every refusal as JSON."""

from __future__ import annotations

import pytest
from django.test import Client

from api.models import ApiToken
from api.services import token_create, token_revoke
from tests.api.conftest import bearer


def test_a_request_without_a_token_is_401_with_the_scheme_to_use(client, project):
    response = client.get("/api/projects")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in response.json()["error"]


@pytest.mark.parametrize(
    "header", ["Bearer evr_0123abcd_" + "a" * 43, "Bearer nonsense", "Basic YWxpY2U6cHc="]
)
def test_a_token_never_issued_is_401(project, header):
    response = Client(headers={"Authorization": header}).get("/api/projects")
    assert response.status_code == 401
    assert "not valid" in response.json()["error"]


def test_a_revoked_token_is_401(reviewer):
    row, token = token_create(user=reviewer, name="")
    assert Client(headers=bearer(token)).get("/api/projects").status_code == 200
    token_revoke(token=row)
    assert Client(headers=bearer(token)).get("/api/projects").status_code == 401


def test_a_logged_in_browser_without_a_token_is_401(client, reviewer):
    client.force_login(reviewer)
    assert client.get("/").status_code == 200
    assert client.get("/api/projects").status_code == 401


def test_the_token_decides_who_asks_not_the_session(client, reviewer, outsider, token_of):
    client.force_login(reviewer)
    response = client.get("/api/projects/demo/runs", headers=bearer(token_of(outsider)))
    assert response.status_code == 404


def test_a_request_with_a_token_needs_no_csrf_token_and_other_methods_are_405(reviewer, token_of):
    api = Client(enforce_csrf_checks=True, headers=bearer(token_of(reviewer)))
    response = api.post("/api/projects")
    assert response.status_code == 405
    assert response["Allow"] == "GET"
    assert response.json() == {"error": "POST is not allowed here; use GET."}


def test_an_answer_is_neither_cached_nor_sets_a_cookie(reviewer, token_of):
    response = Client(headers=bearer(token_of(reviewer))).get("/api/projects")
    assert response["Cache-Control"] == "no-store"
    assert not response.cookies


def test_a_request_notes_when_its_token_was_last_used(reviewer, token_of):
    api = Client(headers=bearer(token_of(reviewer)))
    assert ApiToken.objects.get().last_used_at is None
    api.get("/api/projects")
    assert ApiToken.objects.get().last_used_at is not None


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/nothing-here", 404),
        ("/api/projects/de%00mo/runs", 404),
        ("/api/projects?x=%00", 400),
    ],
)
def test_errors_raised_before_a_view_are_json_under_api(client, project, path, status):
    response = client.get(path)
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert "error" in response.json()


def test_errors_outside_the_api_stay_pages(client, reviewer):
    client.force_login(reviewer)
    response = client.get("/p/no-such-project/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_the_openapi_document_is_public(client, db):
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    assert response.json()["openapi"] == "3.1.0"
