"""More than one machine, simulated on this one: two app servers, two workers, one database.

docs/deploy.md's shape, as subprocesses on loopback: two gunicorn instances
(config/gunicorn.py, DEBUG=0, one gthread worker of 4 threads each, on two ports) and
two `manage.py db_worker` processes, all on one scratch PostgreSQL database and one
JOBS_DIR (the shared volume of a real site). A lead uploads bundles through the
upload page, alternately on either server, and asks for an audit package of q017-r1,
while 8 clients save verdicts on that run's claims, each request on the other server
than its last. The 8 clients are 4 reviewers in two windows each, so a save is refused
as stale (409) whenever the same reviewer's other window saved on that claim since; the
client then takes the fresh form from the card it got back and saves the same reason
again, as a person would.

Afterwards: every claim's chain (claim and verdict revisions) numbers 1..n and each
row seals its document and links to the one before (`cards.chain`); every
acknowledged save is stored exactly once, with the seq it was acknowledged with, and
a refused one not at all; every job is done, started by one worker once (our Job
row's `worker`, django-tasks-db's `worker_ids`), each imported run stored once, and the
package, downloaded from the other server, passes `audit.verify` with the key; each
process stops with status 0 on SIGTERM; every line they logged is JSON
(LOG_FORMAT=json), and each save's access line carries the X-Request-ID its client
sent. The figures (saves a second, 409s, jobs per worker) are printed:
`pytest -m deploy -s` shows them (docs/performance.md).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
import requests
from django.db import connection
from psycopg import sql

from audit.verify import verify
from cards.chain import claim_revision_document, seal, verdict_revision_document
from tests.conftest import AUDIT_KEY, ROOT, bundle_bytes, free_port
from tests.conftest import wait_healthy as healthy
from tests.factories import synthetic_bundle

pytestmark = [
    pytest.mark.deploy,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="two servers and two workers share one PostgreSQL database; SQLite is one file",
    ),
]

PROJECT, RUN_ID, CASE_ID = "demo", "q017-r1", "Q-017"
REVIEWERS = 4  # each in two windows: 8 clients
CLIENTS = 8
SAVE_SECONDS = 10
IMPORTS = 6
IMPORT_CASES = 500  # each bundle: 500 cases of 4 passages, 2 claims and their verdicts
PASSWORD = "shape-" + secrets.token_hex(8)
MANAGE = [sys.executable, str(ROOT / "manage.py")]
GUNICORN = Path(sys.executable).parent / "gunicorn"
OWN_SEQ = re.compile(r'name="seen_own_seq"[^>]*?value="(\d*)"')

# Run in the scratch database once it is migrated and holds the demo: the reviewers, and
# the claims they judge with the seq of their newest claim revision.
SETUP = f"""
import json
from django.contrib.auth.models import User
from cards.models import Claim
from evidence.models import Project, Role
from evidence.services import membership_set
project = Project.objects.get(slug={PROJECT!r})
for i in range({REVIEWERS}):
    user = User.objects.create_user(username=f"shape-{{i}}", password={PASSWORD!r})
    membership_set(project=project, user=user, role=Role.REVIEWER)
claims = Claim.objects.filter(response__run__project=project, response__run__run_id={RUN_ID!r})
print(json.dumps({{c.key: c.revisions.order_by("-seq").first().seq for c in claims}}))
"""


@dataclass
class Site:
    """The scratch database and the environment every process of the site shares."""

    database: str
    url: str
    env: dict[str, str]
    folder: Path
    claims: dict[str, int] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [*MANAGE, *args], env=self.env, cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"manage.py {args[0]}:\n{done.stderr[-2000:]}"
        return done.stdout

    def start(self, name: str, command: list[str], **env: str) -> subprocess.Popen:
        log = (self.folder / f"{name}.log").open("ab")
        process = subprocess.Popen(
            command, env=self.env | env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # a group of its own: gunicorn's workers go with it
        )  # fmt: skip
        log.close()
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")[-3000:]

    def rows(self, query: str, *params) -> list[tuple]:
        with psycopg.connect(self.url) as db:
            return db.execute(query, params).fetchall()


def admin_connection() -> psycopg.Connection:
    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"] or None, port=settings["PORT"] or None, dbname="postgres",
        user=settings["USER"] or None, password=settings["PASSWORD"] or None, autocommit=True,
    )  # fmt: skip


@pytest.fixture
def site(tmp_path) -> Iterator[Site]:
    settings = connection.settings_dict
    # Named after the configured database, so that sessions sharing a server keep apart.
    name = f"{settings['NAME']}_shape_{uuid.uuid4().hex[:8]}"[:63]
    user, password = settings["USER"] or "", settings["PASSWORD"] or ""
    credentials = quote(user, safe="") + (f":{quote(password, safe='')}" if password else "")
    host, port = settings["HOST"] or "127.0.0.1", settings["PORT"] or 5432
    url = f"postgres://{credentials}@{host}:{port}/{name}"
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": url,
        # Production's settings, served over plain http on loopback (as the benchmarks).
        "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
        "STATIC_MANIFEST": "0", "SECURE_SSL_REDIRECT": "0", "SECURE_HSTS_SECONDS": "0",
        "SECURE_COOKIES": "0", "LOG_LEVEL": "WARNING", "LOG_FORMAT": "json",
        "DEMO_PASSWORD": PASSWORD,
        "JOBS_DIR": str(tmp_path / "jobs"), "AUDIT_SIGNING_KEY": AUDIT_KEY,
        "AUDIT_ANCHOR_DIR": str(tmp_path / "anchors"), "WEB_WORKERS": "1", "WEB_THREADS": "4",
    }  # fmt: skip
    for variable in ("PYTEST_VERSION", "TASKS_BACKEND", "TLS_CERT", "TLS_KEY"):
        env.pop(variable, None)  # a test run's settings: the immediate task backend
    with admin_connection() as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    scratch = Site(database=name, url=url, env=env, folder=tmp_path)
    try:
        yield scratch
    finally:
        for process in scratch.processes.values():  # whatever a failure left running
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        with admin_connection() as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def wait_healthy(site: Site, name: str, port: int) -> None:
    """Until /healthz answers 200: the database reachable and every migration applied."""
    healthy(site.processes[name], port, lambda: site.log(name))


def login(port: int, username: str) -> requests.Session:
    session = requests.Session()
    page = session.get(f"http://127.0.0.1:{port}/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert page.status_code == 200 and token, page.status_code
    answer = session.post(
        f"http://127.0.0.1:{port}/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token[1]},
        allow_redirects=False, timeout=30,
    )  # fmt: skip
    assert answer.status_code == 302 and "sessionid" in session.cookies, username
    # No idle connection kept: the next windows log in first, and gunicorn closes a
    # keep-alive connection idle for 2 s; a save sent on it as it closed was reset (a
    # browser sends it again, requests does not for a POST), failing a full PostgreSQL run.
    session.close()  # its cookies stay; the next request opens a connection
    return session


@dataclass
class Client:
    """One browser window of a reviewer: saves on each claim in turn, on either server."""

    index: int
    username: str
    session: requests.Session
    ports: list[int]
    claims: dict[str, int]
    acked: list[tuple[str, str, int, str]] = field(default_factory=list)  # user, key, seq, reason
    refused: list[str] = field(default_factory=list)  # the reasons of the stale attempts
    other: list[str] = field(default_factory=list)  # anything else: the test fails
    requests: int = 0
    seconds: list[float] = field(default_factory=list)  # each POST, 200 or 409

    def run(self, until: float) -> None:
        own: dict[str, str] = {}
        keys = sorted(self.claims)
        n = 0
        while time.monotonic() < until and not self.other:
            key = keys[(self.index + n) % len(keys)]
            reason = f"Window {self.index} of {self.username}, save {n} on {key}."
            n += 1
            for _attempt in range(10):  # a stale form is saved again, from the fresh card
                port = self.ports[self.requests % len(self.ports)]
                self.requests += 1
                sent = time.monotonic()
                answer = self.session.post(
                    f"http://127.0.0.1:{port}/p/{PROJECT}/runs/{RUN_ID}/cases/{CASE_ID}"
                    f"/claims/{key}/verdict/",
                    data={
                        "support": ("supported", "partial", "unsupported")[n % 3],
                        "reason": reason, "seen_claim_seq": self.claims[key],
                        "seen_own_seq": own.get(key, ""), "seen_head_seq": "",
                    },
                    headers={
                        "HX-Request": "true", "X-CSRFToken": self.session.cookies["csrftoken"],
                        # As a proxy names each request: the servers log it, and send it back.
                        "X-Request-ID": f"shape-{self.index}-{self.requests}",
                    },
                    timeout=60,
                )  # fmt: skip
                self.seconds.append(time.monotonic() - sent)
                if answer.headers.get("X-Request-ID") != f"shape-{self.index}-{self.requests}":
                    self.other.append(f"X-Request-ID {answer.headers.get('X-Request-ID')}")
                    return
                fresh = OWN_SEQ.search(answer.text)
                if fresh:
                    own[key] = fresh[1]
                trigger = answer.headers.get("HX-Trigger-After-Settle", "")
                if answer.status_code == 200 and "verdict-saved" in trigger:
                    seq = json.loads(trigger)["verdict-saved"]["seq"]
                    self.acked.append((self.username, key, seq, reason))
                    break
                if answer.status_code == 409 and fresh:
                    self.refused.append(reason)
                    continue
                self.other.append(f"{answer.status_code} on {key}: {answer.text[:300]}")
                return
            else:
                self.other.append(f"{key}: still stale after 10 attempts")


def queue_jobs(lead: requests.Session, ports: list[int], bundles: list[Path]) -> list[str]:
    """The lead uploads each bundle through the upload page, on either server in turn, then
    asks for an audit package of the run being judged: the jobs' codes, the export's last."""
    session = lead
    codes = []
    for i, path in enumerate(bundles):
        page = f"http://127.0.0.1:{ports[i % len(ports)]}/p/{PROJECT}/import/"
        with path.open("rb") as stream:
            answer = session.post(
                page,
                data={"source_format": "bundle", "run_id": ""},
                files={"bundle": (path.name, stream, "application/x-ndjson")},
                headers={"X-CSRFToken": session.cookies["csrftoken"]},
                allow_redirects=False, timeout=60,
            )  # fmt: skip
        assert answer.status_code == 302, (answer.status_code, answer.text[:500])
        codes.append(answer.headers["Location"].rstrip("/").rsplit("/", 1)[-1])
    answer = session.post(
        f"http://127.0.0.1:{ports[-1]}/p/{PROJECT}/audit/export/", data={"run": RUN_ID},
        headers={"X-CSRFToken": session.cookies["csrftoken"]}, allow_redirects=False, timeout=60,
    )  # fmt: skip
    assert answer.status_code == 302, (answer.status_code, answer.text[:500])
    codes.append(answer.headers["Location"].rstrip("/").rsplit("/", 1)[-1])
    return codes


def package_verified(site: Site, lead: requests.Session, port: int, code: str) -> dict:
    """The export's package, downloaded from `port` (the other server than the one that
    queued it), checked by the standalone verifier with the signing key: its counts."""
    (package_id,) = site.rows("SELECT result->>'package_id' FROM jobs_job WHERE code = %s", code)[
        0
    ]
    answer = lead.get(f"http://127.0.0.1:{port}/p/{PROJECT}/jobs/{code}/package.zip", timeout=60)
    assert answer.status_code == 200, answer.status_code
    path = site.folder / "package.zip"
    path.write_bytes(answer.content)
    return verify(str(path), package_id, AUDIT_KEY.encode())


def wait_for_jobs(site: Site, codes: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = site.rows("SELECT state FROM jobs_job WHERE code::text = ANY(%s)", codes)
        if len(states) == len(codes) and all(s in {"done", "failed"} for (s,) in states):
            return
        time.sleep(0.25)
    raise AssertionError(
        f"jobs not over after {timeout} s: {site.rows('SELECT code, state FROM jobs_job')}\n"
        + "\n".join(site.log(f"worker-{i}") for i in (1, 2))
    )


CLAIM_ROWS = """
SELECT cr.claim_id, p.slug, r.run_id, k.case_id, c.key, cr.seq, cr.text, cr.kind, cr.spans,
       cr.citations, cr.facts, cr.gaps, cr.withdrawn, cr.reason, cr.annotator, cr.origin,
       cr.created_at, cr.prev_sha256, cr.sha256
  FROM cards_claimrevision cr JOIN cards_claim c ON c.id = cr.claim_id
  JOIN replay_response rs ON rs.id = c.response_id JOIN replay_run r ON r.id = rs.run_id
  JOIN evidence_project p ON p.id = r.project_id JOIN evidence_case k ON k.id = rs.case_id
"""
VERDICT_ROWS = """
SELECT v.claim_id, v.seq, v.annotator, v.origin, v.association, v.support, v.contradicts,
       v.reason, v.diagnosis, v.citation_relevance, v.note, v.stated_at, s.seq, v.created_at,
       v.prev_sha256, v.sha256
  FROM cards_verdictrevision v LEFT JOIN cards_verdictrevision s ON s.id = v.supersedes_id
"""


def broken_chains(site: Site) -> tuple[int, list[str]]:
    """How many chains there are, and what is wrong with any: each claim's claim and verdict
    revisions number 1..n, and each row seals its document (`cards.chain`, rebuilt from the
    row alone) and links to the row before."""
    chains: dict[int, list[tuple[int, str | None, str, dict]]] = {}
    names: dict[int, dict[str, str]] = {}
    with psycopg.connect(site.url) as db:
        for row in db.execute(CLAIM_ROWS):
            claim, project, run_id, case_id, key, seq, *fields, prev, digest = row
            names[claim] = {
                "project": project, "run_id": run_id, "case_id": case_id, "claim_id": key,
            }  # fmt: skip
            text, kind, spans, citations, facts, gaps, withdrawn, reason, annotator, origin = (
                fields[:10]
            )
            document = claim_revision_document(
                **names[claim], seq=seq, text=text, kind=kind, spans=spans,
                citations=citations, facts=facts, gaps=gaps, withdrawn=withdrawn,
                reason=reason, annotator=annotator, origin=origin, created_at=fields[10],
                prev_sha256=prev,
            )  # fmt: skip
            chains.setdefault(claim, []).append((seq, prev, digest, document))
        for row in db.execute(VERDICT_ROWS):
            claim, seq, annotator, origin, association, support, contradicts, reason = row[:8]
            diagnosis, relevance, note, stated_at, supersedes, created_at, prev, digest = row[8:]
            document = verdict_revision_document(
                **names[claim], seq=seq, annotator=annotator, origin=origin,
                association=association, support=support, contradicts=contradicts,
                reason=reason, diagnosis=diagnosis, citation_relevance=relevance, note=note,
                stated_at=stated_at, supersedes=supersedes, created_at=created_at,
                prev_sha256=prev,
            )  # fmt: skip
            chains[claim].append((seq, prev, digest, document))
    problems = []
    for claim, chain in chains.items():
        chain.sort(key=lambda item: item[0])
        where = "/".join(names[claim].values())
        if [seq for seq, *_ in chain] != list(range(1, len(chain) + 1)):
            problems.append(f"{where}: seqs {[seq for seq, *_ in chain]}")
        previous = None
        for seq, prev, digest, document in chain:
            if prev != previous or digest != seal(document):
                problems.append(f"{where}: revision {seq} does not seal or link")
            previous = digest
    return len(chains), problems


def json_lines(site: Site) -> list[dict]:
    """Every line every process logged, each one JSON object (LOG_FORMAT=json)."""
    entries = []
    for name in site.processes:
        for line in (site.folder / f"{name}.log").read_text().splitlines():
            try:
                entries.append(json.loads(line) | {"from": name})
            except ValueError:
                raise AssertionError(f"{name} logged a line that is not JSON: {line!r}") from None
    return entries


def stop_all(site: Site) -> dict[str, int]:
    """SIGTERM to every process at once, as a supervisor stopping the site: their statuses."""
    for process in site.processes.values():
        process.send_signal(signal.SIGTERM)
    statuses = {}
    for name, process in site.processes.items():
        try:
            statuses[name] = process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            log = site.log(name)
            raise AssertionError(f"{name} did not stop within 60 s of SIGTERM:\n{log}") from None
    return statuses


def test_two_servers_and_two_workers_on_one_database(site, tmp_path):
    began = time.monotonic()
    site.manage("migrate", "--no-input", "-v0")
    site.manage("load_demo")
    site.claims = json.loads(site.manage("shell", "-c", SETUP).strip().splitlines()[-1])
    assert len(site.claims) == 4

    ports = [free_port(), free_port()]
    for i, port in enumerate(ports, 1):
        site.start(
            f"web-{i}", [str(GUNICORN), "-c", "config/gunicorn.py"], BIND=f"127.0.0.1:{port}"
        )
    workers = {}
    for i in (1, 2):
        name = f"worker-{i}"
        command = [*MANAGE, "db_worker", "--no-reload", "--no-startup-delay", "--interval", "0.2"]
        workers[name] = site.start(name, [*command, "--worker-id", f"shape-{name}"]).pid
    for i, port in enumerate(ports, 1):
        wait_healthy(site, f"web-{i}", port)
    ready = time.monotonic() - began

    bundles = []
    for i in range(IMPORTS):
        path = tmp_path / f"shape-r{i}.jsonl"
        lines = synthetic_bundle(run_id=f"shape-r{i}", cases=IMPORT_CASES, passages=4)
        path.write_bytes(bundle_bytes(*lines))
        bundles.append(path)
    clients = []
    for i in range(CLIENTS):
        username = f"shape-{i % REVIEWERS}"
        # The two windows of a reviewer start on different servers.
        turn = ports if i < REVIEWERS else ports[::-1]
        session = login(turn[0], username)
        clients.append(Client(i, username, session, turn, site.claims))

    started = time.monotonic()
    until = started + SAVE_SECONDS
    threads = [threading.Thread(target=client.run, args=(until,)) for client in clients]
    for thread in threads:
        thread.start()
    lead = login(ports[0], "lead")
    codes = queue_jobs(lead, ports, bundles)
    for thread in threads:
        thread.join(timeout=SAVE_SECONDS + 120)
    saved_for = time.monotonic() - started
    saves_ended = datetime.now(UTC)
    assert not any(thread.is_alive() for thread in threads), "a client is stuck"
    wait_for_jobs(site, codes, timeout=120)
    jobs_over = time.monotonic() - started
    package = package_verified(site, lead, ports[0], codes[-1])
    assert package["chains"] > 0 and package["signed"] == 1, package

    # Each process stops on SIGTERM, with status 0: the servers finish their requests,
    # the workers the job they run (none by now).
    for session in [lead, *(client.session for client in clients)]:
        session.close()  # no idle keep-alive connection for a server to wait out
    stopping = time.monotonic()
    statuses = stop_all(site)
    stopped = time.monotonic() - stopping
    assert statuses == dict.fromkeys(statuses, 0), "\n".join(map(site.log, statuses))

    # Every line logged is JSON; each save's access line, on whichever server took it,
    # carries the id the client sent; the workers logged each task they ran.
    entries = json_lines(site)
    logged = Counter(
        entry["request_id"]
        for entry in entries
        if entry["logger"] == "gunicorn.access" and entry["path"].endswith("/verdict/")
    )
    sent = {f"shape-{c.index}-{n}" for c in clients for n in range(1, c.requests + 1)}
    assert logged == Counter(sent)
    tasks = [
        e for e in entries if e["from"].startswith("worker") and "state=RUNNING" in e["message"]
    ]
    assert len(tasks) == IMPORTS + 1

    # Every save was either acknowledged or refused as stale, nothing else.
    assert [c.other for c in clients] == [[]] * CLIENTS
    acked = [save for client in clients for save in client.acked]
    refused = [reason for client in clients for reason in client.refused]
    assert acked, "no save went through"
    # Each acknowledged save stored exactly once, with the seq it was acknowledged with; a
    # refused attempt stored nothing (its reason is stored once, by the attempt that took).
    stored = Counter(
        site.rows(
            "SELECT u.username, c.key, v.seq, v.reason FROM cards_verdictrevision v "
            "JOIN auth_user u ON u.id = v.author_id JOIN cards_claim c ON c.id = v.claim_id "
            "WHERE u.username LIKE 'shape-%%'"
        )
    )
    assert stored == Counter(acked)
    assert len({reason for *_, reason in acked}) == len(acked)

    chains, problems = broken_chains(site)
    assert problems == []

    # Every job (the imports, the export) done once, by one worker; each run stored once.
    jobs = site.rows(
        "SELECT j.code::text, j.state, j.errors, j.worker, j.started_at, j.finished_at,"
        " j.kind, t.status, t.worker_ids"
        " FROM jobs_job j JOIN django_tasks_database_dbtaskresult t ON t.id::text = j.task_id"
    )
    assert sorted(job[0] for job in jobs) == sorted(codes)
    pids = {str(pid): name for name, pid in workers.items()}
    ran_by: Counter[str] = Counter()
    for code, state, errors, worker, started_at, finished_at, _, status, worker_ids in jobs:
        assert (state, errors, status) == ("done", [], "SUCCESSFUL"), code
        assert started_at is not None and finished_at is not None
        assert len(worker_ids) == 1 and worker_ids[0] in {f"shape-{n}" for n in workers}, code
        # Our row names the process that started it: the worker that claimed the task.
        assert pids[worker.rsplit(":", 1)[1]] == worker_ids[0].removeprefix("shape-"), code
        ran_by[worker_ids[0]] += 1
    runs = site.rows(
        "SELECT run_id, count(*) FROM replay_run WHERE run_id LIKE 'shape-r%%' GROUP BY run_id"
    )
    assert sorted(runs) == [(f"shape-r{i}", 1) for i in range(IMPORTS)]
    # The imports ran while the clients saved (this machine's clock is the database's).
    during = sum(1 for job in jobs if job[4] < saves_ended and job[6] == "import")
    assert during, "no import started while the clients saved"
    took = sorted((job[5] - job[4]).total_seconds() for job in jobs if job[6] == "import")
    seconds = sorted(t for client in clients for t in client.seconds)
    p50, p95 = (seconds[int(len(seconds) * q)] * 1000 for q in (0.5, 0.95))
    print(
        f"\ndeploy shape: {len(acked)} saves acknowledged in {saved_for:.1f} s "
        f"({len(acked) / saved_for:.1f}/s) by {CLIENTS} clients through 2 servers, "
        f"{len(refused)} stale (409) and saved again (POST p50 {p50:.0f} ms, p95 {p95:.0f} ms, "
        f"{len(seconds) / saved_for:.1f}/s); {IMPORTS} imports of "
        f"{IMPORT_CASES} cases ({during} started while the clients saved; {took[0]:.1f} to "
        f"{took[-1]:.1f} s each) done by 2 workers "
        f"with the export ({dict(sorted(ran_by.items()))}), "
        f"all over {jobs_over:.1f} s after the first save; {chains} chains verified; "
        f"site ready (migrate, demo, servers up) in {ready:.1f} s, stopped in {stopped:.1f} s"
    )
