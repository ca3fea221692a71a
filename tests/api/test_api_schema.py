"""Every operation of /api/openapi.json, fuzzed (schemathesis): no 500, no answer outside
its schema, no operation that forgets its token. Short and the same on every run: few
examples, derandomized, nothing kept between runs."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck
from hypothesis import settings as examples
from schemathesis.transport.serialization import serialize_binary

from api import urls
from api.openapi import EXAMPLE_JOB, document
from jobs.models import Job
from jobs.progress import package_path
from tests.api.conftest import bearer

# Read when the module is collected, without a database: schemathesis's lazy loading from a
# fixture (`schemathesis.pytest.from_fixture`) reads a pytest attribute that pytest 9 dropped.
# test_the_served_document_is_the_one_fuzzed closes the gap.
schema = schemathesis.openapi.from_dict(document())
schema.app = WSGIHandler()  # requests go to Django in this process, in the test's transaction


@schemathesis.serializer("application/x-ndjson", "application/gzip")
def bundle_body(ctx, value) -> bytes:
    """An upload's body as the bytes generated: the import decides what they are."""
    return serialize_binary(value)


@pytest.fixture
def served(settings) -> Iterator[None]:
    """Requests through the WSGI handler inside the test's transaction, as Django's test
    client sends them: without closing the connection when a request starts or ends
    (on PostgreSQL that would end the transaction the demo data lives in)."""
    settings.ALLOWED_HOSTS = ["localhost"]  # the host of schemathesis's WSGI requests
    # Jobs are queued, not run: this test holds the API's answers to its document; the
    # jobs themselves run in tests/api/test_api_jobs.py. Running each generated upload and
    # export made this test take 40-60 s.
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def example_job(project, lead) -> Job:
    """A done export with the documented example code, and a package file to download."""
    job = Job.objects.create(
        code=EXAMPLE_JOB,
        kind=Job.Kind.EXPORT,
        project=project,
        requested_by=lead,
        state=Job.State.DONE,
        finished_at=timezone.now(),
        result={"package_id": "0" * 64, "runs": []},
    )
    package_path(EXAMPLE_JOB).write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
    return job


def test_the_served_document_is_the_one_fuzzed(client, db):
    assert client.get("/api/openapi.json").json() == schema.raw_schema


@schema.parametrize()
@examples(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")),  # `make fuzz`: more
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_operation_answers_as_its_schema_says(
    case, served, demo_runs, lead, token_of, example_job
):
    # A lead of `demo`: the documented examples (demo, q017-r1, q017-r2, the job) answer 2xx.
    case.call_and_validate(headers=bearer(token_of(lead)))


def test_every_api_url_is_in_the_document():
    documented = {"/api" + path for path in schema.raw_schema["paths"]} | {"/api/openapi.json"}
    routed = {
        "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern.pattern))
        for pattern in urls.urlpatterns
        if str(pattern.pattern).startswith("api/")
    }
    assert routed == documented


def test_no_parameter_the_document_allows_may_hold_a_nul_character():
    # Every operation answers 400 to a NUL in its URL (evidence.middleware): a parameter
    # whose schema admitted one would promise an answer the API cannot give (a fuzzed
    # `annotators=%00` once did).
    from jsonschema import Draft202012Validator

    for path, operations in schema.raw_schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                validator = Draft202012Validator(
                    parameter["schema"], format_checker=Draft202012Validator.FORMAT_CHECKER
                )
                value = "annotator:a\x00b" if parameter["name"] == "source" else "a\x00b"
                probe = [value] if parameter["schema"].get("type") == "array" else value
                assert not validator.is_valid(probe), (method, path, parameter["name"])
