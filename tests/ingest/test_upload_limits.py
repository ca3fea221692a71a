"""A bundle upload is received only from a lead of the project, and only up to its limit.

Django parses a multipart body when the CSRF middleware first reads request.POST, before
any view checks who is asking; every body it parses past FILE_UPLOAD_MAX_MEMORY_SIZE
(2 MB) is written to a temporary file. These tests count those files.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile, TemporaryUploadedFile
from django.test import Client

from replay.models import Run
from tests.conftest import FIXTURES

URL = "/p/demo/import/"
BIG = b"x" * (3 * 1024 * 1024)  # past FILE_UPLOAD_MAX_MEMORY_SIZE: a temporary file


@pytest.fixture
def spooled(monkeypatch) -> list[str]:
    """The names of the temporary files uploads were written to during the test."""
    names: list[str] = []
    init = TemporaryUploadedFile.__init__

    def recording(self, name, *args, **kwargs):
        names.append(name)
        init(self, name, *args, **kwargs)

    monkeypatch.setattr(TemporaryUploadedFile, "__init__", recording)
    return names


def bundle(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def test_an_anonymous_post_with_a_csrf_cookie_but_no_token_spools_nothing(project, spooled):
    client = Client(enforce_csrf_checks=True)
    client.get("/login/")  # sets the CSRF cookie, as any visitor can
    response = client.post(URL, {"bundle": bundle("big.jsonl", BIG)})
    assert response.status_code == 403
    assert spooled == []


def as_browser(user) -> tuple[Client, str]:
    """A client that checks CSRF as a browser's requests are checked, and its token."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/login/")
    return client, client.cookies["csrftoken"].value


def test_a_reviewer_who_may_not_import_spools_nothing(reviewer, spooled):
    client, token = as_browser(reviewer)
    response = client.post(URL, {"csrfmiddlewaretoken": token, "bundle": bundle("b", BIG)})
    assert response.status_code == 403
    assert spooled == []


def test_a_member_of_another_project_spools_nothing(outsider, spooled):
    client, token = as_browser(outsider)
    response = client.post(URL, {"csrfmiddlewaretoken": token, "bundle": bundle("b", BIG)})
    assert response.status_code == 404
    assert spooled == []


def test_an_upload_announced_larger_than_the_limit_is_not_received(
    client, lead, settings, spooled
):
    settings.BUNDLE_UPLOAD_MAX_BYTES = 1000
    client.force_login(lead)
    response = client.post(URL, {"bundle": bundle("big.jsonl", BIG)})
    assert response.status_code == 400
    assert spooled == []
    assert (
        "The file is larger than 1,000 bytes; uploads are limited to 1,000 bytes "
        "(BUNDLE_UPLOAD_MAX_BYTES)."
    ) in response.text
    assert "This field is required" not in response.text


def test_an_upload_is_cut_off_at_the_limit_while_it_streams(client, lead, settings):
    # Content-Length within the limit's slack for form fields, the file itself past it.
    settings.BUNDLE_UPLOAD_MAX_BYTES = len(BIG) - 1000
    client.force_login(lead)
    response = client.post(URL, {"bundle": bundle("big.jsonl", BIG)})
    assert response.status_code == 400
    assert f"uploads are limited to {len(BIG) - 1000:,} bytes" in response.text
    assert Run.objects.count() == 0


def test_a_lead_uploads_a_bundle_over_the_memory_size_through_a_temporary_file(
    client, lead, spooled
):
    data = (FIXTURES / "q017-r1.jsonl").read_bytes()
    padded = data + b"\n" * (3 * 1024 * 1024)  # blank lines: still the same bundle
    client.force_login(lead)
    response = client.post(URL, {"bundle": bundle("q017-r1.jsonl", padded)})
    assert response.status_code == 302
    assert spooled == ["q017-r1.jsonl"]
    assert Run.objects.filter(run_id="q017-r1").exists()
