"""A bundle upload queues an import job: its page shows its state, its line errors, its run."""

from __future__ import annotations

import gzip

import pytest
from django.db import OperationalError
from django.urls import reverse

from jobs.models import Job
from replay.models import Run
from tests.conftest import FIXTURES, bundle_bytes, row_counts
from tests.factories import synthetic_bundle
from tests.jobs.conftest import job_url, the_job, upload

Q017 = (FIXTURES / "q017-r1.jsonl").read_bytes()
BROKEN = bundle_bytes(*synthetic_bundle(cases=1)) + b'{"kind": "case"}\nnot json\n'


def test_a_plain_upload_queues_a_job_and_opens_its_page(client, lead):
    client.force_login(lead)
    response = upload(client, "q017-r1.jsonl", Q017)
    job = the_job()
    assert response.status_code == 302
    assert response["Location"] == job_url(job)
    assert (job.kind, job.state, job.requested_by) == (Job.Kind.IMPORT, Job.State.DONE, lead)
    run = Run.objects.get(run_id="q017-r1")
    assert (run.imported_by, run.source_name) == (lead, "q017-r1.jsonl")
    page = client.get(job_url(job)).content.decode()
    assert "Imported run" in page
    assert reverse("run_detail", args=["demo", "q017-r1"]) in page


def test_a_finished_import_records_what_it_read_and_stored(client, lead):
    client.force_login(lead)
    upload(client, "q017-r1.jsonl", Q017)
    job = the_job()
    assert job.size_bytes == len(Q017)
    assert (job.bytes_read, job.percent) == (len(Q017), 100)
    assert job.lines_read == Q017.count(b"\n")
    assert job.cases_stored == 1
    assert job.result["run_id"] == "q017-r1"
    assert job.started_at is not None and job.finished_at is not None


def test_an_htmx_upload_swaps_the_jobs_status_into_the_page(client, lead):
    client.force_login(lead)
    response = upload(client, "q017-r1.jsonl", Q017, htmx=True)
    content = response.content.decode()
    assert response.status_code == 200
    assert content.lstrip().startswith('<section id="result"')
    assert f'id="job-{the_job().code}"' in content
    assert "Imported run" in content
    assert "<html" not in content


def test_a_failed_import_shows_its_line_errors_and_stores_nothing(client, lead):
    client.force_login(lead)
    before = row_counts()
    upload(client, "bad.jsonl", BROKEN)
    job = the_job()
    assert job.state == Job.State.FAILED
    assert any("/case_id: is required" in e for e in job.errors)
    assert any(e.startswith("line 9: not valid JSON") for e in job.errors)
    assert row_counts() == before
    assert job.cases_stored == 0
    page = client.get(job_url(job)).content.decode()
    assert "Refused: nothing was stored" in page
    assert "line 9: not valid JSON" in page


def test_a_dry_run_job_reports_and_stores_nothing(client, lead):
    client.force_login(lead)
    upload(client, "a.jsonl", (FIXTURES / "p7-answer-a.jsonl").read_bytes(), dry_run="on")
    job = the_job()
    assert job.state == Job.State.DONE
    assert job.cases_stored == 0
    assert "Dry run passed: p7-answer-a" in client.get(job_url(job)).content.decode()
    assert Run.objects.count() == 0


@pytest.mark.parametrize("data", [Q017, BROKEN], ids=["imported", "refused"])
def test_the_upload_is_removed_once_its_job_is_over(client, lead, jobs_dir, data):
    client.force_login(lead)
    upload(client, "b.jsonl", data)
    assert not the_job().active
    assert list(jobs_dir.iterdir()) == []


def test_the_upload_page_lists_recent_imports_with_their_state(client, lead):
    client.force_login(lead)
    upload(client, "bad.jsonl", BROKEN)
    content = client.get(reverse("bundle_upload", args=["demo"])).content.decode()
    assert "Recent imports" in content
    assert job_url(the_job()) in content
    assert "Failed" in content


def test_a_reviewer_may_not_queue_an_import(client, reviewer):
    client.force_login(reviewer)
    response = upload(client, "q017-r1.jsonl", Q017)
    assert response.status_code == 403
    assert Job.objects.count() == 0


def test_an_invalid_form_queues_nothing(client, lead):
    client.force_login(lead)
    response = client.post(reverse("bundle_upload", args=["demo"]), {})
    assert response.status_code == 400
    assert Job.objects.count() == 0


def test_a_gzipped_bundle_is_imported_through_htmx(client, lead):
    client.force_login(lead)
    data = gzip.compress((FIXTURES / "q017-r2.jsonl").read_bytes())
    upload(client, "q017-r2.jsonl.gz", data, htmx=True)
    assert the_job().state == Job.State.DONE
    assert Run.objects.filter(run_id="q017-r2").exists()


def test_a_refused_htmx_upload_shows_its_problems_in_the_result_partial(client, lead):
    client.force_login(lead)
    response = upload(client, "bad.jsonl", b"\xff\xfe\n", htmx=True)
    content = response.content.decode()
    assert content.lstrip().startswith('<section id="result"')
    assert "Refused: nothing was stored" in content
    assert "not valid UTF-8" in content
    assert "<html" not in content


def locked(*args, **kwargs):
    raise OperationalError("database is locked")


def test_an_upload_the_database_cannot_queue_says_so_and_leaves_no_file(
    client, lead, jobs_dir, monkeypatch
):
    monkeypatch.setattr(Job, "save", locked)
    client.force_login(lead)
    response = upload(client, "q017-r1.jsonl", Q017)
    assert response.status_code == 503
    assert "nothing was queued. Try again in a moment." in response.content.decode()
    assert Job.objects.count() == 0
    assert list(jobs_dir.iterdir()) == []


def test_an_export_the_database_cannot_queue_comes_back_with_a_message(
    client, lead, demo_runs, monkeypatch
):
    monkeypatch.setattr(Job, "save", locked)
    client.force_login(lead)
    response = client.post(reverse("export_start", args=["demo"]), follow=True)
    assert response.redirect_chain[-1][0] == reverse("audit_export", args=["demo"])
    assert "Export refused: The database did not take the job" in response.content.decode()
    assert Job.objects.count() == 0


def test_the_upload_page_reads_a_fixed_number_of_queries(
    client, lead, django_assert_max_num_queries
):
    client.force_login(lead)
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        upload(client, name, BROKEN)
    # session, user, membership, the sweep's running jobs, the recent imports and their leads
    with django_assert_max_num_queries(5):
        response = client.get(reverse("bundle_upload", args=["demo"]))
    assert len(response.context["jobs"]) == 3
