"""The API's background work: a lead uploads a bundle or asks for an audit package, follows
the job and downloads its package; everyone else is refused as on the pages."""

from __future__ import annotations

import gzip
import io
import uuid

import pytest
from django.core.management import call_command
from django.db import OperationalError
from django.test import Client
from django.utils import timezone

from api.http import ApiError, body_upload
from jobs.models import Job
from replay.models import Run
from tests.conftest import FIXTURES, bundle_bytes, row_counts
from tests.factories import synthetic_bundle

IMPORTS = "/api/projects/demo/imports"
PACKAGES = "/api/projects/demo/audit-packages"
NDJSON = "application/x-ndjson"
Q017 = (FIXTURES / "q017-r1.jsonl").read_bytes()
BROKEN = bundle_bytes(*synthetic_bundle(cases=1)) + b'{"kind": "case"}\nnot json\n'
RAGAS = (FIXTURES.parent / "tests" / "ingest" / "samples" / "ragas-result.jsonl").read_bytes()


def post_bundle(api: Client, data: bytes, query: str = "", content_type: str = NDJSON):
    return api.post(IMPORTS + query, data, content_type=content_type)


def job_path(code: uuid.UUID | str) -> str:
    return f"/api/projects/demo/jobs/{code}"


@pytest.fixture
def queued_export(project, lead) -> Job:
    """An export no worker has run yet."""
    return Job.objects.create(kind=Job.Kind.EXPORT, project=project, requested_by=lead)


# --- uploading ----------------------------------------------------------------------------------


def test_an_upload_answers_202_with_its_job_and_the_jobs_url(api_as, lead):
    response = post_bundle(api_as(lead), Q017)
    job = response.json()
    assert response.status_code == 202
    assert response["Location"] == job["links"]["self"] == job_path(job["code"])
    assert (job["kind"], job["state"], job["requested_by"]) == ("import", "done", "lead")
    assert job["result"]["run_id"] == "q017-r1"
    assert job["links"]["metrics"] == "/api/projects/demo/runs/q017-r1/metrics"
    assert Run.objects.get(run_id="q017-r1").source_name == "api-upload.jsonl"


def test_the_jobs_url_gives_its_state_counters_and_per_cent(api_as, lead):
    api = api_as(lead)
    job = api.get(post_bundle(api, Q017)["Location"]).json()
    assert job["state"] == "done"
    assert job["progress"] == {
        "size_bytes": len(Q017),
        "bytes_read": len(Q017),
        "lines_read": Q017.count(b"\n"),
        "cases_stored": 1,
        "percent": 100,
    }
    assert job["errors"] == []
    assert job["finished_at"] is not None


def test_a_gzipped_body_is_imported(api_as, lead):
    data = gzip.compress((FIXTURES / "q017-r2.jsonl").read_bytes())
    response = post_bundle(api_as(lead), data, content_type="application/gzip")
    assert response.json()["state"] == "done"
    assert Run.objects.get(run_id="q017-r2").source_name == "api-upload.jsonl.gz"


def test_a_failed_import_lists_its_line_errors_and_stores_nothing(api_as, lead):
    before = row_counts()
    api = api_as(lead)
    job = api.get(post_bundle(api, BROKEN)["Location"]).json()
    assert job["state"] == "failed"
    assert any("/case_id: is required" in e for e in job["errors"])
    assert any(e.startswith("line 9: not valid JSON") for e in job["errors"])
    assert job["progress"]["cases_stored"] == 0
    assert job["links"]["metrics"] is None
    assert row_counts() == before


def test_a_dry_run_stores_nothing_and_links_no_run(api_as, lead):
    job = post_bundle(api_as(lead), Q017, "?dry_run=true").json()
    assert (job["state"], job["result"]["dry_run"]) == ("done", True)
    assert job["links"]["metrics"] is None
    assert not Run.objects.exists()


def test_another_format_is_converted_under_the_run_id_given(api_as, lead):
    job = post_bundle(api_as(lead), RAGAS, "?format=ragas&run_id=eval-nov").json()
    assert (job["state"], job["result"]["run_id"]) == ("done", "eval-nov")
    assert job["options"]["source_format"] == "ragas"
    assert Run.objects.get(run_id="eval-nov").responses.count() == 3


def test_a_converted_body_may_choose_its_snapshot(api_as, lead):
    job = post_bundle(api_as(lead), RAGAS, "?format=ragas&run_id=eval-nov&snapshot=rag-12").json()
    assert (job["state"], job["options"]["snapshot"]) == ("done", "rag-12")
    assert Run.objects.get(run_id="eval-nov").snapshot.name == "rag-12"


def test_a_converted_body_the_importer_refuses_names_the_bodys_own_line(api_as, lead):
    api = api_as(lead)
    post_bundle(api, RAGAS, "?format=ragas&run_id=eval-nov")
    changed = RAGAS.replace(
        b'"We ship to all EU countries and to Norway.", "Items', b'"EU.", "Items'
    )
    job = post_bundle(api, changed, "?format=ragas&run_id=eval-dec").json()
    assert job["state"] == "failed"
    # Line 6 of the converted bundle, which the pipeline never saw, is line 2 of its body.
    assert job["errors"][0].startswith(
        "line 2: its passage line, /text: passage shipping-policy_p02@1#1 already has"
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?format=csv", "format is one of bundle, ragas, alce, jsonl-simple."),
        ("?dry_run=maybe", "dry_run is true or false."),
        ("?run_id=a%20b", "run_id holds 1 to 100 letters, digits, dots, _, : or -."),
        (
            "?format=ragas&snapshot=a%09b",
            "snapshot holds at most 200 characters, none a control character.",
        ),
        (
            "?format=ragas&snapshot=" + "s" * 201,
            "snapshot holds at most 200 characters, none a control character.",
        ),
        (
            "?formt=alce&dry_run=true&x=1",
            "Unknown query parameter: formt, x. "
            "The document (/api/openapi.json) lists each operation's.",
        ),
    ],
)
def test_a_wrong_parameter_is_400_and_queues_nothing(api_as, lead, query, message):
    response = post_bundle(api_as(lead), Q017, query)
    assert (response.status_code, response.json()) == (400, {"error": message})
    assert not Job.objects.exists()


def test_a_body_past_the_upload_limit_is_413_and_queues_nothing(api_as, lead, settings, jobs_dir):
    settings.BUNDLE_UPLOAD_MAX_BYTES = 1000
    response = post_bundle(api_as(lead), Q017)
    assert response.status_code == 413
    assert (
        "uploads are limited to 1,000 bytes (BUNDLE_UPLOAD_MAX_BYTES)" in response.json()["error"]
    )
    assert not Job.objects.exists()
    assert list(jobs_dir.iterdir()) == []


def test_a_body_longer_than_its_content_length_says_is_still_cut_at_the_limit():
    class Request:
        META = {"CONTENT_LENGTH": "10"}
        content_type = NDJSON
        read = io.BytesIO(b"x" * 5000).read

    with pytest.raises(ApiError) as refused:
        body_upload(Request(), name="a.jsonl", limit=1000)
    assert refused.value.status == 413


def test_a_chunked_body_without_a_content_length_is_411(api_as, lead):
    api = api_as(lead)
    response = api.generic(
        "POST", IMPORTS, Q017, content_type=NDJSON, CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
    )  # fmt: skip
    assert response.status_code == 411
    assert "Content-Length" in response.json()["error"]
    assert not Job.objects.exists()


def test_a_post_with_no_body_at_all_queues_a_job_that_refuses_it_as_empty(api_as, lead):
    # HTTP: no Content-Length and no chunks is an empty body, which the document allows.
    api = api_as(lead)
    response = api.generic("POST", IMPORTS, b"", CONTENT_TYPE=NDJSON, CONTENT_LENGTH="")
    assert response.status_code == 202
    job = response.json()
    assert job["state"] == "failed" and job["errors"]


def test_a_body_of_another_type_is_415(api_as, lead):
    response = post_bundle(api_as(lead), Q017, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert "Content-Type: application/x-ndjson" in response.json()["error"]
    assert not Job.objects.exists()


def test_an_upload_the_database_cannot_queue_is_503_and_leaves_no_file(
    api_as, lead, jobs_dir, monkeypatch
):
    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(Job, "save", locked)
    response = post_bundle(api_as(lead), Q017)
    assert response.status_code == 503
    assert "nothing was queued" in response.json()["error"]
    assert list(jobs_dir.iterdir()) == []


def test_the_upload_is_only_posted(api_as, lead):
    response = api_as(lead).get(IMPORTS)
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json() == {"error": "GET is not allowed here; use POST."}


# --- audit packages -----------------------------------------------------------------------------


def test_a_downloaded_package_is_the_one_export_audit_writes(api_as, demo_runs, lead, tmp_path):
    api = api_as(lead)
    query = "?runs=q017-r1&compare=q017-r1&compare=q017-r2&source=annotator:seed-protocol"
    response = api.post(PACKAGES + query)
    job = response.json()
    assert response.status_code == 202
    assert (job["kind"], job["state"]) == ("export", "done")
    download = api.get(job["links"]["package"])
    assert download.status_code == 200
    assert download["Content-Type"] == "application/zip"
    assert job["result"]["package_id"][:12] in download["Content-Disposition"]
    out = tmp_path / "package.zip"
    call_command(
        "export_audit", "--project", "demo", "--run", "q017-r1",
        "--compare", "q017-r1", "q017-r2", "--annotator", "seed-protocol", "--out", str(out),
        stdout=io.StringIO(),
    )  # fmt: skip
    assert b"".join(download.streaming_content) == out.read_bytes()


def test_an_export_of_a_run_the_project_lacks_is_404_and_queues_nothing(api_as, lead):
    response = api_as(lead).post(PACKAGES + "?runs=no-such-run")
    assert response.status_code == 404
    assert "'no-such-run' does not exist" in response.json()["error"]
    assert not Job.objects.exists()


def test_a_comparison_names_two_runs(api_as, lead):
    response = api_as(lead).post(PACKAGES + "?compare=q017-r1")
    assert response.status_code == 400
    assert response.json()["error"].startswith("compare names two runs")


def test_there_is_no_package_until_the_export_is_done(api_as, lead, queued_export):
    response = api_as(lead).get(job_path(queued_export.code) + "/package")
    assert response.status_code == 404
    assert response.json() == {"error": "This job made no package (yet)."}


def test_an_import_has_no_package(api_as, lead):
    api = api_as(lead)
    code = post_bundle(api, Q017).json()["code"]
    assert api.get(job_path(code) + "/package").status_code == 404


# --- who may ---------------------------------------------------------------------------------


def requests(job: Job) -> list[tuple[str, str]]:
    return [
        ("POST", IMPORTS),
        ("POST", PACKAGES),
        ("GET", job_path(job.code)),
        ("GET", job_path(job.code) + "/package"),
    ]


@pytest.mark.parametrize("index", range(4), ids=["import", "export", "job", "package"])
def test_an_outsider_gets_404(api_as, outsider, queued_export, index):
    method, path = requests(queued_export)[index]
    response = api_as(outsider).generic(method, path, Q017, content_type=NDJSON)
    assert (response.status_code, response.json()) == (404, {"error": "No such project."})


@pytest.mark.parametrize("index", range(4), ids=["import", "export", "job", "package"])
def test_a_reviewer_gets_403(api_as, reviewer, queued_export, index):
    method, path = requests(queued_export)[index]
    response = api_as(reviewer).generic(method, path, Q017, content_type=NDJSON)
    assert response.status_code == 403
    assert response.json()["error"].startswith("Only a lead of Demo may")


@pytest.mark.parametrize("index", range(4), ids=["import", "export", "job", "package"])
def test_no_token_gets_401(client, queued_export, index):
    method, path = requests(queued_export)[index]
    response = client.generic(method, path, Q017, content_type=NDJSON)
    assert response.status_code == 401


def test_a_reviewer_is_refused_before_the_body_is_measured(api_as, reviewer, settings):
    settings.BUNDLE_UPLOAD_MAX_BYTES = 10
    assert post_bundle(api_as(reviewer), Q017).status_code == 403
    assert not Job.objects.exists()


def test_a_lead_of_another_project_cannot_reach_this_projects_job_through_theirs(
    api_as, outsider, queued_export
):
    path = f"/api/projects/elsewhere/jobs/{queued_export.code}"
    assert api_as(outsider).get(path).status_code == 404


def test_an_unknown_job_is_404(api_as, lead):
    response = api_as(lead).get(job_path(uuid.uuid4()))
    assert (response.status_code, response.json()) == (404, {"error": "No such job."})


# --- a job's state ------------------------------------------------------------------------------


def test_a_job_whose_worker_stopped_reads_as_failed(api_as, lead, project, settings):
    settings.JOB_STALE_SECONDS = 60
    job = Job.objects.create(
        kind=Job.Kind.IMPORT, project=project, state=Job.State.RUNNING,
        started_at=timezone.now() - timezone.timedelta(seconds=61),
    )  # fmt: skip
    answer = api_as(lead).get(job_path(job.code)).json()
    assert answer["state"] == "failed"
    assert answer["errors"][0].startswith("The worker stopped during this job")


def test_a_jobs_state_reads_a_fixed_number_of_queries(
    api_as, lead, queued_export, django_assert_max_num_queries
):
    api = api_as(lead)
    # token, its last use, membership, the sweep's running jobs, the job with its requester
    with django_assert_max_num_queries(5):
        response = api.get(job_path(queued_export.code))
    assert response.json()["state"] == "queued"
