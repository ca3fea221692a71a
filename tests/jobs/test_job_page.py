"""A job's page: only a lead sees it; while the job runs its status polls and shows progress;
a job whose worker stopped beating shows as failed."""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

import jobs.tasks
from ingest.services import bundle_import
from jobs.models import Job
from jobs.progress import Counts, Heartbeat, progress_path, read_progress, upload_path
from jobs.services import job_start, jobs_sweep
from jobs.tasks import import_run
from replay.models import Run
from tests.jobs.conftest import the_job, upload
from tests.jobs.test_import_jobs import Q017


@pytest.fixture
def running(project, lead) -> Job:
    """An import a worker is running: a million-byte bundle, 40 % read."""
    job = Job.objects.create(
        kind=Job.Kind.IMPORT,
        project=project,
        requested_by=lead,
        size_bytes=1_000_000,
        options={"source_name": "big.jsonl"},
        state=Job.State.RUNNING,
        started_at=timezone.now(),
    )
    heartbeat = Heartbeat(str(job.code))
    heartbeat.import_progress(400_000, 2_500, 1_000)
    return job


def status(client, job: Job) -> str:
    url = reverse("job_detail", args=["demo", job.code])
    return client.get(url, headers={"HX-Request": "true"}).content.decode()


def test_a_running_jobs_status_shows_lines_cases_and_per_cent(client, lead, running):
    client.force_login(lead)
    content = status(client, running)
    assert content.lstrip().startswith(f'<section id="job-{running.code}"')
    assert "2500 lines read, 1000 cases stored so far" in content
    assert 'value="40"' in content


def test_a_running_jobs_status_asks_for_itself_again_and_a_finished_one_stops(
    client, lead, running
):
    client.force_login(lead)
    url = reverse("job_detail", args=["demo", running.code])
    assert f'hx-get="{url}" hx-trigger="every 1s"' in status(client, running)
    Job.objects.filter(pk=running.pk).update(
        state=Job.State.FAILED, finished_at=timezone.now(), errors=["line 3: oops"]
    )
    assert "hx-trigger" not in status(client, running)


def test_the_job_page_is_a_whole_page_without_htmx(client, lead, running):
    client.force_login(lead)
    response = client.get(reverse("job_detail", args=["demo", running.code]))
    assert "<html" in response.content.decode()
    assert "big.jsonl" in response.content.decode()


def test_the_job_page_reads_a_fixed_number_of_queries(
    client, lead, running, django_assert_max_num_queries
):
    client.force_login(lead)
    # session, user, membership, the sweep's running jobs, the job
    with django_assert_max_num_queries(5):
        response = client.get(reverse("job_detail", args=["demo", running.code]))
    assert response.status_code == 200


def test_the_jobs_page_reads_a_fixed_number_of_queries(
    client, lead, running, django_assert_max_num_queries
):
    client.force_login(lead)
    for _ in range(5):
        Job.objects.create(kind=Job.Kind.EXPORT, project=running.project, requested_by=lead)
    with django_assert_max_num_queries(5):
        response = client.get(reverse("job_list", args=["demo"]))
    assert len(response.context["jobs"]) == 6


@pytest.mark.parametrize("name", ["job_detail", "job_download"])
def test_a_reviewer_may_not_see_a_job(client, reviewer, running, name):
    client.force_login(reviewer)
    assert client.get(reverse(name, args=["demo", running.code])).status_code == 403


@pytest.mark.parametrize("name", ["job_detail", "job_download"])
def test_an_outsider_gets_404_for_a_job(client, outsider, running, name):
    client.force_login(outsider)
    assert client.get(reverse(name, args=["demo", running.code])).status_code == 404
    assert client.get(reverse("job_list", args=["demo"])).status_code == 404


def test_a_lead_of_another_project_cannot_reach_this_projects_job_through_theirs(
    client, outsider, running
):
    client.force_login(outsider)
    url = reverse("job_detail", args=["elsewhere", running.code])
    assert client.get(url).status_code == 404


def test_an_unknown_job_is_404(client, lead, project):
    client.force_login(lead)
    assert client.get(reverse("job_detail", args=["demo", uuid.uuid4()])).status_code == 404


def test_the_heartbeat_writes_the_counters_a_reader_sees(project):
    code = str(uuid.uuid4())
    with Heartbeat(code) as heartbeat:
        heartbeat.import_progress(10, 2, 1)
        heartbeat.write()
        counts, beat = read_progress(code)
        assert counts == Counts(10, 2, 1)
        assert abs(beat - time.time()) < 5
    assert read_progress(code) is None  # gone with the job


# --- a worker that stopped beating ------------------------------------------------------------


def age(job: Job, seconds: int) -> None:
    """As if the worker last wrote the job's progress `seconds` ago."""
    path = progress_path(str(job.code))
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_running_job_whose_worker_stopped_beating_shows_as_failed(
    client, lead, running, settings
):
    settings.JOB_STALE_SECONDS = 60
    upload_path(str(running.code)).write_bytes(b"{}\n")
    age(running, 61)
    client.force_login(lead)
    content = status(client, running)
    running.refresh_from_db()
    assert running.state == Job.State.FAILED
    assert "The worker stopped during this job" in running.errors[0]
    assert "Refused: nothing was stored" in content
    assert not upload_path(str(running.code)).exists()
    assert running.cases_stored == 0


def test_a_running_job_that_beats_is_left_running(lead, running, settings):
    settings.JOB_STALE_SECONDS = 60
    age(running, 30)
    assert jobs_sweep(project=running.project) == 0
    running.refresh_from_db()
    assert running.state == Job.State.RUNNING


def test_a_running_job_that_never_beat_is_judged_by_when_it_started(lead, running, settings):
    settings.JOB_STALE_SECONDS = 60
    progress_path(str(running.code)).unlink()
    Job.objects.filter(pk=running.pk).update(started_at=timezone.now() - timezone.timedelta(60))
    assert jobs_sweep() == 1


def test_a_swept_job_is_not_run_when_its_task_comes_at_last(lead, running):
    Job.objects.filter(pk=running.pk).update(
        state=Job.State.FAILED, finished_at=timezone.now(), errors=["swept"]
    )
    assert job_start(code=str(running.code)) is None
    import_run.call(code=str(running.code))
    running.refresh_from_db()
    assert (running.state, running.errors) == (Job.State.FAILED, ["swept"])


def test_an_import_whose_upload_is_gone_fails_instead_of_running_forever(project, lead):
    job = Job.objects.create(kind=Job.Kind.IMPORT, project=project, options={})
    with pytest.raises(FileNotFoundError):
        import_run.call(code=str(job.code))
    job.refresh_from_db()
    assert job.state == Job.State.FAILED
    assert job.errors[0].startswith("The job failed (FileNotFoundError")


def test_an_import_swept_while_its_worker_was_silent_stores_nothing_after_all(
    client, lead, monkeypatch, settings
):
    # A worker that is alive but was not heard from (stopped, starved, its JOBS_DIR out of
    # reach) is swept to "failed, nothing stored"; when it wakes up, its import must not
    # commit behind the job's back.
    def swept_first(**kwargs):
        settings.JOB_STALE_SECONDS = -60  # every running job looks stale
        assert jobs_sweep() == 1
        return bundle_import(**kwargs)

    monkeypatch.setattr(jobs.tasks, "bundle_import", swept_first)
    client.force_login(lead)
    upload(client, "q017-r1.jsonl", Q017)
    job = the_job()
    assert job.state == Job.State.FAILED
    assert "The worker stopped during this job" in job.errors[0]
    assert job.cases_stored == 0
    assert not Run.objects.filter(run_id="q017-r1").exists()


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite: the import holds the only write lock"
)
@pytest.mark.django_db(transaction=True)
def test_an_import_swept_from_another_connection_mid_import_stores_nothing(
    project, lead, monkeypatch, settings
):
    # The race itself: on PostgreSQL the sweep (another process, its own connection) can
    # commit while the import's transaction is open; the import must see it before it commits.
    progress = jobs.tasks.Heartbeat.import_progress
    swept = []

    def sweep_elsewhere(heartbeat, *args):
        progress(heartbeat, *args)
        if not swept:
            settings.JOB_STALE_SECONDS = -60
            thread = threading.Thread(target=lambda: swept.append(sweep_and_close()))
            thread.start()
            thread.join()

    monkeypatch.setattr(jobs.tasks.Heartbeat, "import_progress", sweep_elsewhere)
    # Queued and committed as a worker finds it (the immediate backend would run the task
    # inside import_queue's transaction, where no other connection sees the job).
    job = Job.objects.create(
        kind=Job.Kind.IMPORT, project=project, requested_by=lead, options=IMPORT_OPTIONS
    )
    upload_path(str(job.code)).write_bytes(Q017)
    import_run.call(code=str(job.code))
    job.refresh_from_db()
    assert swept == [1]
    assert (job.state, job.cases_stored) == (Job.State.FAILED, 0)
    assert "The worker stopped during this job" in job.errors[0]
    assert not Run.objects.filter(run_id="q017-r1").exists()


IMPORT_OPTIONS = {
    "source_name": "q017-r1.jsonl",
    "dry_run": False,
    "new_expectation_versions": False,
}


def sweep_and_close() -> int:
    try:
        return jobs_sweep()
    finally:
        connection.close()  # the thread's own connection


def test_an_export_swept_while_its_worker_was_silent_leaves_no_package_after_all(
    client, lead, demo_runs, jobs_dir, monkeypatch, settings
):
    # The export's counterpart of the import above: its worker wakes up after the sweep
    # failed its job; it must not name a package, record it or anchor it behind the job.
    from audit.models import AuditExport
    from tests.audit.test_audit_export import export_job

    build = jobs.tasks.audit_package

    def swept_first(**kwargs):
        package = build(**kwargs)
        settings.JOB_STALE_SECONDS = -60  # every running job looks stale
        assert jobs_sweep() == 1
        return package

    monkeypatch.setattr(jobs.tasks, "audit_package", swept_first)
    client.force_login(lead)
    job = export_job(client, "run=q017-r1")
    assert job.state == Job.State.FAILED
    assert "The worker stopped during this job" in job.errors[0]
    assert not AuditExport.objects.exists()
    assert sorted(path.name for path in jobs_dir.iterdir()) == []
    assert client.get(reverse("job_download", args=["demo", job.code])).status_code == 404
