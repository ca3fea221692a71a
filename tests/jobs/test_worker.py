"""The real thing: django-tasks-db's `db_worker` in a subprocess, on a database of its own.

A job queued by one process is run by the worker; a worker told to stop (SIGTERM)
finishes the job it runs and leaves the queued ones queued; a worker killed mid-import
leaves nothing behind, and its job is swept to failed.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import AUDIT_KEY, ROOT, bundle_bytes, sqlite_copy, sqlite_env
from tests.factories import synthetic_bundle

MANAGE = [sys.executable, str(ROOT / "manage.py")]
QUEUE = """
import json, os
from django.contrib.auth.models import User
from django.core.files import File
from evidence.models import Project
from jobs.services import import_queue
project, _ = Project.objects.get_or_create(slug="work", defaults={"name": "Work"})
lead, _ = User.objects.get_or_create(username="worker-lead")
codes = []
for path in json.loads(os.environ["BUNDLES"]):
    with open(path, "rb") as stream:
        job = import_queue(project=project, user=lead, upload=File(stream, name=path))
    codes.append(str(job.code))
print(json.dumps(codes))
"""


EXPORT = """
from django.contrib.auth.models import User
from evidence.models import Project
from jobs.services import export_queue
project = Project.objects.get(slug="work")
job = export_queue(project=project, user=User.objects.get(username="worker-lead"))
print(job.code)
"""


class Database:
    """A database for subprocesses, read back with plain SQL."""

    def __init__(self, env: dict[str, str]):
        self.env = env

    def rows(self, sql: str) -> list[tuple]:
        url = self.env["DATABASE_URL"]
        if url.startswith("sqlite"):
            with closing(sqlite3.connect(urlsplit(url).path)) as db:
                return db.execute(sql).fetchall()
        import psycopg

        with psycopg.connect(url) as db:
            return db.execute(sql).fetchall()

    def job(self, code: str) -> dict:
        # SQLite keeps a UUID as 32 hex digits; PostgreSQL reads them as a uuid too.
        hex_code = uuid.UUID(code).hex
        state, errors, result = self.rows(
            f"SELECT state, errors, result FROM jobs_job WHERE code = '{hex_code}'"
        )[0]
        as_json = lambda v: json.loads(v) if isinstance(v, str) else v  # noqa: E731
        return {"state": state, "errors": as_json(errors), "result": as_json(result)}

    def task_status(self, code: str) -> str:
        """django-tasks-db's own row of the job's task."""
        hex_code = uuid.UUID(code).hex
        (task_id,) = self.rows(f"SELECT task_id FROM jobs_job WHERE code = '{hex_code}'")[0]
        return self.rows(
            "SELECT status FROM django_tasks_database_dbtaskresult "
            f"WHERE id = '{uuid.UUID(task_id).hex}' OR CAST(id AS TEXT) = '{task_id}'"
        )[0][0]

    def runs(self, run_id: str) -> int:
        return self.rows(f"SELECT count(*) FROM replay_run WHERE run_id = '{run_id}'")[0][0]


@pytest.fixture
def database(request, tmp_path) -> Iterator[Database]:
    base = os.environ.get("DATABASE_URL", "")
    jobs = tmp_path / "jobs"
    if base.startswith(("postgres://", "postgresql://")):
        name = f"evidence_jobs_{uuid.uuid4().hex[:8]}"
        admin(base, f'CREATE DATABASE "{name}"')
        env = {**os.environ, "DATABASE_URL": urlunsplit(urlsplit(base)._replace(path=f"/{name}"))}
        env.pop("PYTEST_VERSION", None)
        env |= {"DEBUG": "1", "JOBS_DIR": str(jobs)}
        try:
            subprocess.run([*MANAGE, "migrate", "-v0"], env=env, cwd=ROOT, check=True)
            yield Database(env)
        finally:
            admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        path = sqlite_copy(request.getfixturevalue("demo_sqlite"), tmp_path / "own.sqlite3")
        yield Database(sqlite_env(path) | {"JOBS_DIR": str(jobs)})


def admin(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(
        urlunsplit(urlsplit(url)._replace(path="/postgres")), autocommit=True
    ) as c:
        c.execute(statement)


def queue(database: Database, *bundles: Path) -> list[str]:
    done = subprocess.run(
        [*MANAGE, "shell", "-c", QUEUE],
        env=database.env | {"BUNDLES": json.dumps(list(map(str, bundles)))},
        cwd=ROOT, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def worker(database: Database, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*MANAGE, "db_worker", "--no-reload", "--no-startup-delay", "--interval", "0.2", *args],
        env=database.env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def bundle(tmp_path: Path, run_id: str, cases: int) -> Path:
    path = tmp_path / f"{run_id}.jsonl"
    path.write_bytes(bundle_bytes(*synthetic_bundle(run_id=run_id, cases=cases, passages=4)))
    return path


def slow_upload(database: Database, code: str) -> bytes:
    """The job's stored upload replaced by a pipe, and its bytes, for `feed` to write.

    The job then runs for as long as the test takes to write them: a stop or a kill
    reaches it mid-import whatever the machine's speed. (Before, a 3,000-case import made
    the job long enough, 4 s a test.)
    """
    path = Path(database.env["JOBS_DIR"]) / f"{code}.upload"
    data = path.read_bytes()
    path.unlink()
    os.mkfifo(path)
    return data


@contextmanager
def feed(process: subprocess.Popen, database: Database, code: str) -> Iterator[Callable]:
    """Once the worker's job has opened its upload (`slow_upload`), a function that writes
    bytes to it; the upload ends when the block does."""
    path = Path(database.env["JOBS_DIR"]) / f"{code}.upload"
    deadline = time.monotonic() + 60
    while True:
        try:  # Without a reader yet, a non-blocking open is refused (ENXIO), not held.
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or process.poll() is not None:
                raise AssertionError(f"the worker never read job {code}'s upload") from exc
            if time.monotonic() > deadline:
                raise AssertionError(f"job {code} did not start") from exc
            time.sleep(0.05)
    os.set_blocking(fd, True)

    def send(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    try:
        yield send
    finally:
        os.close(fd)


def wait_until_running(database: Database, code: str, *, lines: int = 1) -> None:
    """Until the job's worker has reported reading `lines` lines."""
    progress = Path(database.env["JOBS_DIR"]) / f"{code}.progress"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if json.loads(progress.read_text())["lines_read"] >= lines:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"job {code} did not start")


def test_a_queued_import_is_run_by_the_database_worker(database, tmp_path):
    good = bundle(tmp_path, "worker-r1", cases=3)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(bundle_bytes(*synthetic_bundle(run_id="worker-r2", cases=1)) + b"{oops\n")
    first, second = queue(database, good, bad)
    assert database.job(first)["state"] == "queued"
    done = subprocess.run(
        [*MANAGE, "db_worker", "--batch", "--no-reload", "--no-startup-delay"],
        env=database.env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    imported = database.job(first)
    assert (imported["state"], imported["result"]["run_id"]) == ("done", "worker-r1")
    assert database.runs("worker-r1") == 1
    refused = database.job(second)
    assert refused["state"] == "failed"
    assert refused["errors"][0].startswith("line 8: not valid JSON")
    assert database.runs("worker-r2") == 0
    assert list(Path(database.env["JOBS_DIR"]).iterdir()) == []


def test_a_worker_told_to_stop_finishes_its_job_and_leaves_the_next_queued(database, tmp_path):
    running, waiting = queue(
        database, bundle(tmp_path, "long-r1", cases=100), bundle(tmp_path, "next-r1", cases=1)
    )
    lines = slow_upload(database, running).splitlines(keepends=True)
    process = worker(database)
    with feed(process, database, running) as send:  # the job has opened its upload: it runs
        send(b"".join(lines[:300]))
        process.send_signal(signal.SIGTERM)
        send(b"".join(lines[300:]))
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    assert database.job(running)["state"] == "done"
    assert database.runs("long-r1") == 1
    assert database.job(waiting)["state"] == "queued"


def test_a_worker_killed_mid_import_leaves_nothing_and_its_job_fails(database, tmp_path):
    counted = (
        "SELECT (SELECT count(*) FROM replay_response), (SELECT count(*) FROM evidence_passage)"
    )
    before = database.rows(counted)
    (code,) = queue(database, bundle(tmp_path, "killed-r1", cases=600))
    lines = slow_upload(database, code).splitlines(keepends=True)
    # The heartbeat writes the lines read while the job waits for more.
    process = worker(Database(database.env | {"JOB_HEARTBEAT_SECONDS": "1"}))
    with feed(process, database, code) as send:
        # 1.2 MB: the import reads 1 MB at a time (ingest.bundle.open_bundle).
        send(b"".join(lines[:2700]))
        # 2,000 lines read: 333 cases, 13 batches of 25 written in the import's transaction.
        wait_until_running(database, code, lines=2000)
        process.kill()
        process.wait(timeout=30)
    assert database.job(code)["state"] == "running"  # until someone looks
    time.sleep(1.1)
    assert sweep(database) == "1"
    job = database.job(code)
    assert job["state"] == "failed"
    assert "The worker stopped during this job" in job["errors"][0]
    assert database.runs("killed-r1") == 0
    assert database.rows(counted) == before
    assert list(Path(database.env["JOBS_DIR"]).iterdir()) == []
    assert database.task_status(code) == "FAILED"  # not RUNNING forever


def sweep(database: Database) -> str:
    """One sweep in a command of its own, as a page would; what it returned."""
    done = subprocess.run(
        [*MANAGE, "shell", "-c", "from jobs.services import jobs_sweep; print(jobs_sweep())"],
        env=database.env | {"JOB_STALE_SECONDS": "1"},
        cwd=ROOT, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.splitlines()[-1]  # after the shell's note of its imports


def test_a_worker_killed_mid_export_leaves_no_partial_package_and_its_job_fails(
    database, tmp_path
):
    database = Database(
        database.env | {"AUDIT_SIGNING_KEY": AUDIT_KEY, "AUDIT_ANCHOR_DIR": str(tmp_path / "a")}
    )
    queue(database, bundle(tmp_path, "exported-r1", cases=200))
    subprocess.run(
        [*MANAGE, "db_worker", "--batch", "--no-reload", "--no-startup-delay"],
        env=database.env, cwd=ROOT, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    exports = "SELECT count(*) FROM replay_auditexport"
    before = database.rows(exports)
    code = subprocess.run(
        [*MANAGE, "shell", "-c", EXPORT],
        env=database.env, cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.splitlines()[-1]  # fmt: skip
    # The package is written beside its name first: a pipe there, which the test reads a
    # little of and then leaves full, holds the worker mid-write whatever the machine's speed.
    partial = Path(database.env["JOBS_DIR"]) / f"{code}.partial"
    os.mkfifo(partial)
    process = worker(Database(database.env | {"JOB_HEARTBEAT_SECONDS": "1"}))
    fd = os.open(partial, os.O_RDONLY | os.O_NONBLOCK)
    try:
        read = b""
        deadline = time.monotonic() + 60
        while len(read) < 1000:
            assert time.monotonic() < deadline, "the export never wrote its package"
            assert process.poll() is None, process.communicate()[0]
            with suppress(BlockingIOError):
                read += os.read(fd, 1000)
            time.sleep(0.05)
        assert read.startswith(b"PK")  # a zip, on its way
        time.sleep(0.5)  # the pipe fills; the worker waits in write()
        assert database.job(code)["state"] == "running"
        process.kill()
        process.wait(timeout=30)
    finally:
        os.close(fd)
    assert database.task_status(code) == "RUNNING"  # the worker had no time to say
    time.sleep(1.1)
    assert sweep(database) == "1"
    job = database.job(code)
    assert job["state"] == "failed"
    assert "The worker stopped during this job" in job["errors"][0]
    assert list(Path(database.env["JOBS_DIR"]).iterdir()) == []  # no .partial, no .zip
    assert database.task_status(code) == "FAILED"
    assert database.rows(exports) == before
