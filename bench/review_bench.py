"""Benchmark of the case review page and the verdict save, against a floor page.

    .venv/bin/python bench/review_bench.py                 # 3 repetitions of 5 s per figure
    .venv/bin/python bench/review_bench.py --profile       # also cProfile both views in-process
    .venv/bin/python bench/review_bench.py --worker-class gthread --threads 4

A benchmark, not a test: it prints figures (medians of repetitions, and ratios
to a floor measured in the same run) and asserts nothing about time.

What it does:

1. Makes a scratch PostgreSQL database (`evidence_review_bench`), migrates it and
   imports a valid `evidence-bundle/1` built here: one case with 20 passages of
   2,048 characters, an answer of 30 cited sentences and 30 claims, each cited
   to one passage and judged by 5 annotators (so 30 claims × (1 claim revision
   + 5 verdict revisions)). Eight reviewers (and one warm-up user) become
   members of the project and log in over HTTP; their session and CSRF cookies
   are what the load clients send.
2. Serves the project with gunicorn (2 sync workers, `config.wsgi:application`,
   DEBUG=0, manifest static files collected into a temporary directory,
   persistent database connections as in `config/settings.py`), with the
   settings of `bench/floor_settings.py`: the project's own plus the floor
   views of `bench/floor.py`. Sync workers, because the views are CPU-bound and
   the machine has 2 cores: a thread more per worker adds GIL hand-offs and a
   database connection, not CPU. They close the connection after each response,
   so every request costs a loopback TCP handshake (tens of µs, outside wrk's
   latency, which starts when the request is written); `--worker-class gthread`
   keeps connections alive instead.
3. Drives it with `wrk` (C, one event loop per thread: it takes little of the
   2 cores the server needs) on loopback, one connection per client, each
   client logged in as its own reviewer:
   - GET the case page, the floor page of the same size as the case page, and
     the floor page of 50 KB (the size the issue names), at 2 and 8 clients,
     interleaved, `--reps` times each; only a 200 counts (a redirect to the
     login page would be fast and wrong);
   - POST verdicts through the HTMX path (HX-Request: true → 200 and the card
     partial). Each client cycles through all 30 claims, reads its own newest
     verdict seq back from the card it gets, and sends it as `seen_own_seq` on
     its next save of that claim, so no save is stale. A save counts only when
     it answers 200 with the `verdict-saved` event; anything else is lost. Each
     repetition starts from a fresh copy of the database (saves append rows,
     and the page grows with them), and afterwards the stored rows are counted
     against the acknowledged saves. Just before, on the same server, the same
     clients POST to the floor save (same middleware and CSRF, the claim locked
     FOR UPDATE, one INSERT, COMMIT, a response of the card's size).
4. Prints the medians, the ratios and, in-process, the queries of both views
   and where their time goes (`--profile` adds cProfile listings).
5. Stops gunicorn and drops the databases, whatever happened.
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import io
import json
import os
import pstats
import random
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432"
DB = "evidence_review_bench"
SLUG, RUN_ID, CASE_ID = "bench-review", "bench-review-r1", "case-1"
PASSAGES, PASSAGE_CHARS, CLAIMS, JUDGEMENTS = 20, 2048, 30, 5
READERS = 8  # one reviewer per load client
WARMUP_USER = "bench-warmup"
PASSWORD = "bench-" + secrets.token_hex(12)
SECRET_KEY = secrets.token_urlsafe(50)
SUPPORTS = ("supported", "partial", "unsupported", "not_assessable")
REASON = "Passage {ref} states the figure in its second sentence, with the same unit and scope."

# --- the synthetic bundle ----------------------------------------------------------------

VOCABULARY = """
pressure valve module firmware threshold sensor warranty calibration ambient limit
continuous operating cycle energy report pilot machine setting nominal rated value
maintenance interval service manual revision section table figure clause annex
customer contract renewal notice period invoice currency monthly annual plan seat
"""


def review_bundle() -> list[dict]:
    """One case sized like the issue's: 20 × 2 KB passages, 30 claims × 5 judgements."""
    from evidence.canonical import text_sha256

    rng = random.Random(20)
    words = VOCABULARY.split()

    def sentence() -> str:
        picked = [rng.choice(words) for _ in range(rng.randint(10, 16))]
        return " ".join(picked).capitalize() + f" {rng.randint(1, 999)}."

    refs = [f"manual@v3#c{j:02d}" for j in range(1, PASSAGES + 1)]
    lines: list[dict] = [
        {
            "kind": "run", "schema": "evidence-bundle/1", "run_id": RUN_ID,
            "label": "Review benchmark", "created_at": "2026-10-01T09:00:00Z",
            "collection_snapshot": "bench-review-snapshot",
            "system": {"model": "bench-generator", "prompt_version": "p1"},
        }
    ]  # fmt: skip
    for j, ref in enumerate(refs, start=1):
        text = f"Section {j}. "
        while len(text) < PASSAGE_CHARS:
            text += sentence() + " "
        text = text[:PASSAGE_CHARS].rstrip() + "."
        doc_id, rest = ref.split("@")
        version, chunk_id = rest.split("#")
        lines.append(
            {
                "kind": "passage", "ref": ref, "doc_id": doc_id, "version": version,
                "chunk_id": chunk_id, "text": text, "sha256": text_sha256(text),
                "title": f"Service manual, section {j}", "url": f"https://example.com/manual#s{j}",
                "version_status": "current",
            }
        )  # fmt: skip
    lines.append(
        {
            "kind": "case", "case_id": CASE_ID,
            "query": "What are the rated limits and service intervals of the P7 machine?",
            "required_facts": [
                {"fact_id": f"G{k}", "text": f"Rated limit {k}.", "evidence": [refs[k - 1]]}
                for k in range(1, 4)
            ],
            "known_gaps": [{"gap_id": "X1", "text": "The manual says nothing about costs."}],
        }
    )  # fmt: skip
    text, citations, claims = "", [], []
    for k in range(CLAIMS):
        ref = refs[k % PASSAGES]
        body = f"Finding {k + 1}: {sentence()[:-1]}"
        marker = f"[{k % PASSAGES + 1}]"
        start = len(text)
        marker_start = start + len(body) + 1
        text += f"{body} {marker}. "
        end = marker_start + len(marker)
        citations.append({"marker": marker, "ref": ref, "start": marker_start, "end": end})
        claims.append(
            {
                "claim_id": f"c{k + 1}", "text": body, "spans": [[start, start + len(body)]],
                "citations": [ref], "facts": [f"G{k + 1}"] if k < 3 else [],
                "judgements": [
                    {
                        "annotator": f"judge-{r}", "support": SUPPORTS[(k + r) % 3],
                        "reason": REASON.format(ref=ref) + f" (judge {r}, pass {k}).",
                    }
                    for r in range(1, JUDGEMENTS + 1)
                ],
            }
        )  # fmt: skip
    lines.append(
        {
            "kind": "response", "case_id": CASE_ID, "text": text.rstrip(),
            "retrieved": [
                {"ref": ref, "rank": i + 1, "score": round(1 - i / 40, 3)}
                for i, ref in enumerate(refs)
            ],
            "citations": citations, "claims": claims,
        }
    )  # fmt: skip
    return lines


# --- databases ---------------------------------------------------------------------------


def pg_admin(*statements: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def pg_scalar(db: str, sql: str) -> Any:
    import psycopg

    with psycopg.connect(f"{PG}/{db}") as conn:
        return conn.execute(sql).fetchone()[0]


def drop(db: str) -> None:
    pg_admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


@dataclass
class Fixture:
    claims: list[str]  # claim keys, page order
    claim_seq: dict[str, int]  # claim key → current claim-revision seq (seen_claim_seq)
    usernames: list[str]


def build_database(static_root: Path) -> Fixture:
    """Migrate the scratch database, import the bundle, make the reviewers; collect static."""
    import django
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections

    drop(DB)
    pg_admin(f'CREATE DATABASE "{DB}"')
    django.setup()
    from cards.models import Claim, ClaimRevision
    from evidence.models import Project, Role
    from evidence.services import membership_set
    from ingest.services import bundle_import

    call_command("migrate", verbosity=0, interactive=False)
    call_command("collectstatic", verbosity=0, interactive=False)
    stream = io.BytesIO(b"".join(json.dumps(line).encode() + b"\n" for line in review_bundle()))
    bundle_import(stream=stream, project_slug=SLUG, create_project=True)
    with connections["default"].cursor() as cursor:  # what the floor save inserts into
        cursor.execute(
            "CREATE TABLE bench_floor_write (id bigserial PRIMARY KEY, claim_id bigint NOT NULL,"
            " author_id bigint NOT NULL, body text NOT NULL, created_at timestamptz DEFAULT now())"
        )
    project = Project.objects.get(slug=SLUG)
    users = get_user_model().objects
    usernames = [f"bench-reviewer-{i}" for i in range(READERS)]
    for username in [*usernames, WARMUP_USER]:
        user = users.create_user(username=username, password=PASSWORD)
        membership_set(project=project, user=user, role=Role.REVIEWER)
    claims = list(
        Claim.objects.filter(response__run__run_id=RUN_ID)
        .order_by("position")
        .values_list("key", flat=True)
    )
    # Ordered by seq, so each claim keeps its newest revision's.
    claim_seq = dict(
        ClaimRevision.objects.filter(claim__key__in=claims)
        .order_by("seq")
        .values_list("claim__key", "seq")
    )
    connections.close_all()  # the database becomes a template: nobody may be connected
    return Fixture(claims=claims, claim_seq=claim_seq, usernames=usernames)


# --- the server and HTTP -----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(db: str, static_root: Path) -> dict[str, str]:
    return os.environ | {
        "DJANGO_SETTINGS_MODULE": "bench.floor_settings",
        "DATABASE_URL": f"{PG}/{db}",
        "DEBUG": "0",
        "SECRET_KEY": SECRET_KEY,
        "ALLOWED_HOSTS": "127.0.0.1",
        "BENCH_STATIC_ROOT": str(static_root),
        "LOG_LEVEL": "WARNING",
    }


@dataclass
class Server:
    port: int
    proc: subprocess.Popen
    log: Path


@contextmanager
def gunicorn(db: str, args: argparse.Namespace, static_root: Path, log: Path) -> Iterator[Server]:
    binary = Path(sys.executable).parent / "gunicorn"
    if not binary.exists():
        sys.exit(f"{binary} is missing: .venv/bin/pip install gunicorn")
    port = free_port()
    command = [
        str(binary), "config.wsgi:application", "--chdir", str(ROOT),
        "--bind", f"127.0.0.1:{port}", "--workers", "2", "--worker-class", args.worker_class,
        "--log-level", "warning", "--error-logfile", str(log),
    ]  # fmt: skip
    if args.worker_class == "gthread":
        command += ["--threads", str(args.threads), "--keep-alive", "5"]
    with log.open("ab") as sink:
        proc = subprocess.Popen(
            command, env=server_env(db, static_root), stdout=sink, stderr=sink, cwd=ROOT
        )
    server = Server(port, proc, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {proc.returncode}:\n{log.read_text()}")
            try:
                if fetch(server, "GET", "/login/")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not answer within 30 s:\n{log.read_text()}")
            time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def fetch(
    server: Server, method: str, path: str, *, cookies: dict[str, str] | None = None,
    headers: dict[str, str] | None = None, body: bytes | None = None,
) -> tuple[int, http.client.HTTPMessage, bytes]:  # fmt: skip
    """One request on its own connection; Set-Cookie values are written back into `cookies`."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        sent = dict(headers or {})
        if cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    if cookies is not None:
        for raw in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in SimpleCookie(raw).items():
                cookies[name] = morsel.value
    return response.status, response.headers, data


def login(server: Server, username: str) -> dict[str, str]:
    """Session and CSRF cookies of `username`, through the real login form."""
    cookies: dict[str, str] = {}
    status, _, page = fetch(server, "GET", "/login/", cookies=cookies)
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    if status != 200 or token is None:
        raise RuntimeError(f"GET /login/ answered {status} without a CSRF token")
    form = {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token[1].decode()}
    status, _, _ = fetch(
        server, "POST", "/login/", cookies=cookies, body=urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    if status != 302 or "sessionid" not in cookies:
        raise RuntimeError(f"logging in {username} answered {status}")
    return cookies


def case_path() -> str:
    return f"/p/{SLUG}/runs/{RUN_ID}/cases/{CASE_ID}/"


def floor_path(size: int) -> str:
    return f"/bench/floor/{SLUG}/{RUN_ID}/?bytes={size}"


def save_form(fixture: Fixture, key: str, csrf: str, own_seq: str = "") -> bytes:
    return urlencode(
        {
            "csrfmiddlewaretoken": csrf, "support": "supported",
            "reason": REASON.format(ref="(warm-up)"), "seen_claim_seq": fixture.claim_seq[key],
            "seen_own_seq": own_seq, "seen_head_seq": "",
        }
    ).encode()  # fmt: skip


def save_once(
    server: Server, fixture: Fixture, cookies: dict[str, str], key: str
) -> tuple[int, int]:
    """One HTMX save by a user who has no verdict on `key` yet: (status, response bytes)."""
    status, headers, body = fetch(
        server, "POST", f"{case_path()}claims/{key}/verdict/", cookies=cookies,
        body=save_form(fixture, key, cookies["csrftoken"]),
        headers={
            "Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true",
            "X-CSRFToken": cookies["csrftoken"],
        },
    )  # fmt: skip
    if status == 200 and "verdict-saved" not in (headers.get("HX-Trigger") or ""):
        return 0, len(body)
    return status, len(body)


# --- wrk ---------------------------------------------------------------------------------

LUA_DONE = r"""
function done(summary, latency, requests)
  local sums = {}
  for _, name in ipairs({"good", "bad"}) do
    sums[name] = 0
    for _, t in ipairs(threads) do sums[name] = sums[name] + (t:get(name) or 0) end
  end
  local codes = ""
  for _, t in ipairs(threads) do codes = codes .. (t:get("codes") or "") end
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "bytes": %d, "good": %d, "bad": %d, ' ..
    '"socket_errors": %d, "p50_us": %d, "p95_us": %d, "p99_us": %d, "max_us": %d, ' ..
    '"codes": "%s"}\n',
    summary.requests, summary.duration, summary.bytes, sums.good, sums.bad,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(95),
    latency:percentile(99), latency.max, codes))
end
"""

# Each wrk thread has one connection and its own Lua state, so "one thread" is
# "one client": its user, and the seqs it has seen, live in thread globals.
LUA_GET = (
    r"""
local cookies = __COOKIES__
threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("cookie", cookies[(#threads - 1) % #cookies + 1])
end
function init(args)
  req = wrk.format("GET", nil, {["Cookie"] = cookie})
  good, bad, codes = 0, 0, ""
end
function request() return req end
function response(status, headers, body)
  -- A redirect to the login page would be fast and wrong: only a 200 counts.
  if status == 200 then good = good + 1 else
    bad = bad + 1
    if #codes < 60 then codes = codes .. status .. " " end
  end
end
"""
    + LUA_DONE
)

LUA_SAVE = (
    r"""
local users = __USERS__
local claims = __CLAIMS__
local claim_seq = __CLAIM_SEQ__
local prefix, suffix = __PREFIX__, __SUFFIX__
local supports = {"supported", "partial", "unsupported", "not_assessable"}
threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end
function init(args)
  local user = users[(id - 1) % #users + 1]
  headers = {
    ["Cookie"] = user.cookie, ["X-CSRFToken"] = user.csrf, ["HX-Request"] = "true",
    ["Content-Type"] = "application/x-www-form-urlencoded",
  }
  -- Clients start on different claims, then each goes through all of them.
  pos = ((id - 1) * math.floor(#claims / #users)) % #claims
  own, n = {}, 0
  good, bad, codes = 0, 0, ""
end
function request()
  pos = pos % #claims + 1
  current = claims[pos]
  n = n + 1
  local body = "support=" .. supports[n % #supports + 1] ..
    "&reason=Passage+" .. current .. "+states+it+in+its+second+sentence%2C+save+" .. n ..
    "&seen_claim_seq=" .. claim_seq[current] .. "&seen_own_seq=" .. (own[current] or "") ..
    "&seen_head_seq="
  return wrk.format("POST", prefix .. current .. suffix, headers, body)
end
function response(status, headers, body)
  -- The card that comes back carries my newest seq on this claim: the next save sends it.
  local seq = string.match(body, 'name="seen_own_seq" value="(%d+)"')
  if seq then own[current] = seq end
  local trigger = headers["HX-Trigger"] or headers["hx-trigger"] or ""
  if status == 200 and string.find(trigger, "verdict-saved", 1, true) then
    good = good + 1
  else
    bad = bad + 1
    if #codes < 60 then codes = codes .. status .. " " end
  end
end
"""
    + LUA_DONE
)


def lua(value: Any) -> str:
    """A Lua literal for strings, numbers, lists and string-keyed dicts (ASCII only)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{lua(k)}] = {lua(v)}" for k, v in value.items()) + "}"
    return "{" + ", ".join(lua(item) for item in value) + "}"


def cookie_header(cookies: dict[str, str]) -> str:
    return "; ".join(f"{k}={v}" for k, v in cookies.items())


@dataclass
class Load:
    clients: int
    requests: int
    seconds: float
    good: int
    bad: int
    socket_errors: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    bytes_per_request: float
    codes: str

    @property
    def per_second(self) -> float:
        return self.good / self.seconds


def wrk(server: Server, script: Path, path: str, clients: int, seconds: int) -> Load:
    command = [
        "wrk", f"-t{clients}", f"-c{clients}", f"-d{seconds}s", "--timeout", "10s",
        "-s", str(script), f"http://127.0.0.1:{server.port}{path}",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    line = next((x for x in done.stdout.splitlines() if x.startswith("BENCH ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    raw = json.loads(line.removeprefix("BENCH "))
    return Load(
        clients=clients, requests=raw["requests"], seconds=raw["duration_us"] / 1e6,
        good=raw["good"], bad=raw["bad"], socket_errors=raw["socket_errors"],
        p50_ms=raw["p50_us"] / 1000, p95_ms=raw["p95_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000, max_ms=raw["max_us"] / 1000,
        bytes_per_request=raw["bytes"] / max(raw["requests"], 1), codes=raw["codes"].strip(),
    )  # fmt: skip


def get_script(workdir: Path, sessions: list[dict[str, str]]) -> Path:
    script = workdir / "get.lua"
    script.write_text(LUA_GET.replace("__COOKIES__", lua([cookie_header(s) for s in sessions])))
    return script


def save_script(
    workdir: Path, sessions: list[dict[str, str]], fixture: Fixture, prefix: str, suffix: str
) -> Path:
    """POSTs to prefix + claim key + suffix, each client as its own reviewer."""
    users = [{"cookie": cookie_header(s), "csrf": s["csrftoken"]} for s in sessions]
    script = workdir / "save.lua"
    script.write_text(
        LUA_SAVE.replace("__USERS__", lua(users))
        .replace("__CLAIMS__", lua(fixture.claims))
        .replace("__CLAIM_SEQ__", lua(fixture.claim_seq))
        .replace("__PREFIX__", lua(prefix))
        .replace("__SUFFIX__", lua(suffix))
    )
    return script


# --- the measurements --------------------------------------------------------------------


@dataclass
class Figures:
    pages: dict[tuple[str, int], list[Load]]  # (page, clients) → one Load per repetition
    saves: dict[int, list[Load]]  # clients → one Load per repetition
    floor_saves: dict[int, list[Load]]
    stored: dict[int, list[int]]  # clients → verdict rows the reviewers have, per repetition
    sizes: dict[str, int]  # response bytes: case, floor, floor50, save
    db_verdicts_after: dict[int, list[int]]


def check_pages(server: Server, cookies: dict[str, str], fixture: Fixture) -> dict[str, int]:
    status, _, page = fetch(server, "GET", case_path(), cookies=cookies)
    if status != 200:
        raise RuntimeError(f"the case page answered {status}")
    forms = page.count(b"data-verdict-form")
    if forms != len(fixture.claims):
        raise RuntimeError(f"the case page shows {forms} verdict forms, not {len(fixture.claims)}")
    sizes = {"case": len(page)}
    for name, wanted in (("floor", len(page)), ("floor50", 50_000)):
        status, _, body = fetch(server, "GET", floor_path(wanted), cookies=cookies)
        if status != 200:
            raise RuntimeError(f"the floor page answered {status}")
        sizes[name] = len(body)
    return sizes


def measure(args: argparse.Namespace, fixture: Fixture, static_root: Path, work: Path) -> Figures:
    pages: dict[tuple[str, int], list[Load]] = {}
    saves: dict[int, list[Load]] = {}
    floor_saves: dict[int, list[Load]] = {}
    stored: dict[int, list[int]] = {}
    after: dict[int, list[int]] = {}
    log = work / "gunicorn.log"
    with gunicorn(DB, args, static_root, log) as server:
        sessions = [login(server, name) for name in fixture.usernames]
        warm = login(server, WARMUP_USER)
        sizes = check_pages(server, sessions[0], fixture)
        paths = {
            "case": case_path(),
            "floor": floor_path(sizes["case"]),
            "floor50": floor_path(50_000),
        }
        script = get_script(work, sessions)
        for path in paths.values():  # every worker compiles templates and opens its connection
            wrk(server, script, path, max(args.clients), 2)
        for rep in range(args.reps):
            for clients in args.clients:
                for name, path in paths.items():
                    load = wrk(server, script, path, clients, args.duration)
                    pages.setdefault((name, clients), []).append(load)
                    progress(f"rep {rep + 1} {name:8} {clients} clients", load)
    # Sessions live in the database, so every copy of it knows these cookies.
    for rep in range(args.reps):
        for clients in args.clients:
            copy = f"{DB}_save"
            drop(copy)
            pg_admin(f'CREATE DATABASE "{copy}" TEMPLATE "{DB}"')
            try:
                with gunicorn(copy, args, static_root, log) as server:
                    # Warm both workers on the save path with a user the load does not use.
                    for key in fixture.claims[:20]:
                        fetch(server, "GET", case_path(), cookies=warm)
                        status, sizes["save"] = save_once(server, fixture, warm, key)
                        if status != 200:
                            raise RuntimeError(f"the warm-up save on {key} answered {status}")
                    # The floor first: its rows go to a table of its own, the case stays as is.
                    script = save_script(
                        work, sessions[:clients], fixture,
                        f"/bench/floor/{SLUG}/{RUN_ID}/save/", f"/?bytes={sizes['save']}",
                    )  # fmt: skip
                    wrk(server, script, paths["case"], clients, 1)
                    floor = wrk(server, script, paths["case"], clients, args.duration)
                    script = save_script(
                        work, sessions[:clients], fixture, f"{case_path()}claims/", "/verdict/"
                    )
                    load = wrk(server, script, paths["case"], clients, args.duration)
                stored_rows = pg_scalar(
                    copy,
                    "SELECT count(*) FROM cards_verdictrevision v JOIN auth_user u "
                    "ON u.id = v.author_id WHERE u.username LIKE 'bench-reviewer-%'",
                )
                total = pg_scalar(copy, "SELECT count(*) FROM cards_verdictrevision")
            finally:
                drop(copy)
            saves.setdefault(clients, []).append(load)
            floor_saves.setdefault(clients, []).append(floor)
            progress(f"rep {rep + 1} floor save {clients} clients", floor)
            stored.setdefault(clients, []).append(stored_rows)
            after.setdefault(clients, []).append(total)
            progress(f"rep {rep + 1} save     {clients} clients", load, f"stored {stored_rows}")
    return Figures(pages, saves, floor_saves, stored, sizes, after)


def progress(label: str, load: Load, extra: str = "") -> None:
    print(
        f"  {label}: p50 {load.p50_ms:6.2f} ms  p95 {load.p95_ms:6.2f} ms  "
        f"{load.per_second:7.1f}/s  ok {load.good}  not ok {load.bad}"
        f"{'  ' + load.codes if load.codes else ''}  socket errors {load.socket_errors}"
        f"{'  ' + extra if extra else ''}",
        flush=True,
    )


def median(values: list[float]) -> float:
    return statistics.median(values)


def report(args: argparse.Namespace, figures: Figures) -> None:
    pages, saves = figures.pages, figures.saves
    n = args.reps
    names = {
        "case": f"case page ({figures.sizes['case'] / 1000:.1f} KB)",
        "floor": f"floor, same size ({figures.sizes['floor'] / 1000:.1f} KB)",
        "floor50": f"floor, 50 KB ({figures.sizes['floor50'] / 1000:.1f} KB)",
    }
    print(
        f"\nMedians of {n} repetitions of {args.duration} s each "
        f"(gunicorn {args.worker_class}, 2 workers; wrk, 1 connection per client)\n"
    )
    print(
        f"{'GET':34} {'clients':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'req/s':>8}"
        f" {'not 200':>8}"
    )
    for clients in args.clients:
        for key, name in names.items():
            loads = pages[(key, clients)]
            print(
                f"{name:34} {clients:7} {median([x.p50_ms for x in loads]):8.2f}"
                f" {median([x.p95_ms for x in loads]):8.2f}"
                f" {median([x.p99_ms for x in loads]):8.2f}"
                f" {median([x.per_second for x in loads]):8.1f}"
                f" {sum(x.bad + x.socket_errors for x in loads):8}"
            )
    print()
    for clients in args.clients:
        for floor in ("floor", "floor50"):
            ratios = [
                c.p50_ms / f.p50_ms
                for c, f in zip(pages[("case", clients)], pages[(floor, clients)], strict=True)
            ]
            p95 = [
                c.p95_ms / f.p95_ms
                for c, f in zip(pages[("case", clients)], pages[(floor, clients)], strict=True)
            ]
            print(
                f"case / {names[floor]:30} at {clients} clients: p50 × {median(ratios):.2f}"
                f"  p95 × {median(p95):.2f}  (per repetition: "
                f"{', '.join(f'{r:.2f}' for r in ratios)})"
            )
    save_kb = figures.sizes["save"] / 1000
    print(
        f"\n{'POST':34} {'clients':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"
        f" {'saves/s':>8} {'lost':>8}"
    )
    for clients in args.clients:
        for name, loads, stored in (
            (f"verdict save, HTMX ({save_kb:.1f} KB)", saves[clients], figures.stored[clients]),
            (f"floor save ({save_kb:.1f} KB)", figures.floor_saves[clients], None),
        ):
            lost = [
                x.bad + x.socket_errors + (max(0, x.good - rows) if rows is not None else 0)
                for x, rows in zip(loads, stored or [None] * len(loads), strict=True)
            ]
            print(
                f"{name:34} {clients:7} {median([x.p50_ms for x in loads]):8.2f}"
                f" {median([x.p95_ms for x in loads]):8.2f}"
                f" {median([x.p99_ms for x in loads]):8.2f}"
                f" {median([x.per_second for x in loads]):8.1f} {sum(lost):8}"
            )
    print()
    for clients in args.clients:
        pairs = list(zip(saves[clients], figures.floor_saves[clients], strict=True))
        ratios = [c.p50_ms / f.p50_ms for c, f in pairs]
        print(
            f"verdict save / floor save at {clients} clients: p50 × {median(ratios):.2f}"
            f"  saves/s × {median([c.per_second / f.per_second for c, f in pairs]):.2f}"
            f"  (p50 per repetition: {', '.join(f'{r:.2f}' for r in ratios)})"
        )
    for clients in args.clients:
        print(
            f"  {clients} clients: saves acknowledged {[x.good for x in saves[clients]]},"
            f" stored {figures.stored[clients]} (stored − acknowledged = saves in flight when"
            " wrk stopped); verdict rows in the case at the end:"
            f" {figures.db_verdicts_after[clients]} (150 imported + 20 warm-up + the load)"
        )
    print("\nTargets (issue):")
    top = max(args.clients)
    for clients in args.clients:
        ratio = median(
            [
                c.p50_ms / f.p50_ms
                for c, f in zip(pages[("case", clients)], pages[("floor", clients)], strict=True)
            ]
        )
        print(
            f"  case page p50 ≤ 2× floor at {clients} clients: × {ratio:.2f} → "
            f"{'met' if ratio <= 2 else 'NOT met'}"
        )
    save_p50 = median([x.p50_ms for x in saves[top]])
    rate = median([x.per_second for x in saves[top]])
    lost_total = sum(
        x.bad + x.socket_errors + max(0, x.good - s)
        for x, s in zip(saves[top], figures.stored[top], strict=True)
    )
    print(
        f"  save p50 ≤ 15 ms at {top} clients: {save_p50:.2f} ms → "
        f"{'met' if save_p50 <= 15 else 'NOT met'}"
    )
    print(
        f"  ≥ 200 saves/s at {top} clients, 0 lost: {rate:.1f}/s, {lost_total} lost → "
        f"{'met' if rate >= 200 and lost_total == 0 else 'NOT met'}"
    )
    print(
        f"  (a closed loop: {top} clients at 200 saves/s wait {top / 200 * 1000:.0f} ms per save"
        f" on average, and a p50 of 15 ms at {top} clients means about {top / 0.015:.0f} saves/s)"
    )


# --- in-process breakdown ----------------------------------------------------------------


class QueryLog:
    """Every query a block runs, with its time in `execute` (server and transfer), in ms."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.rows: list[tuple[float, str]] = []

    def __enter__(self) -> QueryLog:
        self.wrapper = self.connection.execute_wrapper(self)
        self.wrapper.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wrapper.__exit__(*exc)

    def __call__(self, execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.rows.append(((time.perf_counter() - start) * 1000, sql))

    def print(self, label: str) -> None:
        total = sum(ms for ms, _ in self.rows)
        print(f"\n{label}: {len(self.rows)} queries, {total:.2f} ms in execute:")
        for ms, sql in self.rows:
            print(f"  {ms:6.2f} ms  {' '.join(sql.split())[:140]}")


def composition(html: str) -> None:
    """Where the bytes of the case page are (by the markup of templates/cards/review.html)."""
    cards = re.findall(r'<article class="card.*?</article>', html, re.S)
    print(f"\ncase page: {len(html) / 1000:.1f} KB, of which:")
    start = html.find('<section class="panel" aria-labelledby="passages-h"')
    end = html.find('<dialog id="keys"')
    if 0 <= start < end:
        print(f"  {(end - start) / 1000:6.1f} KB  retrieved passages section")
    if not cards:
        return
    print(f"  {sum(map(len, cards)) / 1000:6.1f} KB  {len(cards)} cards; one card:")
    parts = {
        "verdict form": ('<form class="verdict-form"', "</form>"),
        "  of which the diagnoses help": ('<details class="small diagnoses"', "</details>"),
        "attached passage": ('<div class="attached"', "</div>"),
        "verdicts list": ('<ul class="verdicts"', "</ul>"),
        "history": ('<details class="history"', "</details>"),
        "rewrite form (a checkbox per passage)": ('<details class="revise"', "</details>"),
    }
    card = cards[0]
    for name, (head, tail) in parts.items():
        at = card.find(head)
        if at >= 0:
            print(f"  {(card.find(tail, at) + len(tail) - at) / 1000:10.1f} KB  {name}")


def timed(fn: Callable[[], Any], runs: int) -> float:
    """Median wall time of `fn` in milliseconds."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def breakdown(fixture: Fixture, profile: bool) -> None:
    """Queries and time split of both views, in this process, on the scratch database."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.template.loader import render_to_string
    from django.test import Client, RequestFactory

    from cards import views
    from cards.selectors import review_page
    from cards.services import verdict_save
    from evidence.access import membership_for
    from replay.selectors import run_for_project

    runs = 40
    user = get_user_model().objects.get(username=WARMUP_USER)
    client = Client(SERVER_NAME="127.0.0.1")
    client.force_login(user)
    htmx = {"HTTP_HX_REQUEST": "true"}
    print("\nIn-process breakdown (Django test client, DEBUG=0, same settings and database)")
    for _ in range(5):
        client.get(case_path())
    with QueryLog(connection) as queries:
        response = client.get(case_path())
    assert response.status_code == 200, response.status_code
    queries.print("case page GET")
    composition(response.content.decode())

    request = RequestFactory(SERVER_NAME="127.0.0.1").get(case_path())
    request.user = user
    request.htmx = False
    membership = membership_for(user=user, slug=SLUG)
    run = run_for_project(project=membership.project, run_id=RUN_ID)
    page = review_page(run=run, case_id=CASE_ID, membership=membership)
    context = views._context(page)
    split = {
        "whole request through the middleware": timed(lambda: client.get(case_path()), runs),
        "membership_for + run_for_project": timed(
            lambda: run_for_project(
                project=membership_for(user=user, slug=SLUG).project, run_id=RUN_ID
            ),
            runs,
        ),
        "review_page (selector)": timed(
            lambda: review_page(run=run, case_id=CASE_ID, membership=membership), runs
        ),
        "_context (one VerdictForm per card)": timed(lambda: views._context(page), runs),
        "render cards/review.html": timed(
            lambda: render_to_string("cards/review.html", context, request), runs
        ),
        "  of which: render #card once for each of the 30 cards": timed(
            lambda: [
                render_to_string("cards/review.html#card", context | {"card": card}, request)
                for card in page.cards
            ],
            runs,
        ),
        "floor page (same size) whole request": timed(
            lambda: client.get(floor_path(len(response.content))), runs
        ),
    }
    print(f"\ncase page GET, median of {runs} calls each:")
    for name, ms in split.items():
        print(f"  {ms:7.2f} ms  {name}")

    # Saves by the warm-up user on claims it saved on over HTTP only in the copies, so here
    # each claim starts with no verdict of its own and is then tracked.
    own: dict[str, str] = {}
    keys = iter(fixture.claims * 1000)

    def post() -> None:
        key = next(keys)
        data = {
            "support": "partial", "reason": "In-process save.",
            "seen_claim_seq": fixture.claim_seq[key], "seen_own_seq": own.get(key, ""),
            "seen_head_seq": "",
        }  # fmt: skip
        answer = client.post(f"{case_path()}claims/{key}/verdict/", data, **htmx)
        assert answer.status_code == 200, (answer.status_code, answer.content[:300])
        found = re.search(rb'name="seen_own_seq" value="(\d+)"', answer.content)
        own[key] = found[1].decode()

    post()
    with QueryLog(connection) as queries:
        post()
    queries.print("verdict save POST (HTMX)")

    def service() -> None:
        key = next(keys)
        claim = page.card(key).claim
        saved = verdict_save(
            claim=claim,
            author=user,
            support="supported",
            reason="Service only.",
            seen_claim_seq=fixture.claim_seq[key],
            seen_own_seq=_int(own.get(key)),
        )
        own[key] = str(saved.seq)

    def fresh_page():  # what `_page` does: membership, run, the whole review page
        member = membership_for(user=user, slug=SLUG)
        return review_page(
            run=run_for_project(project=member.project, run_id=RUN_ID),
            case_id=CASE_ID,
            membership=member,
        )

    after = fresh_page()
    card = after.card(fixture.claims[0])
    extra = {"forms": {}, "card": card, "card_message": None, "card_message_key": card.claim.key}
    swap = views._context(after, **extra)
    request.htmx = True
    split = {
        "whole request through the middleware": timed(post, runs),
        "verdict_save (the service: lock, checks, insert, commit)": timed(service, runs),
        "_page: membership + run + review_page (the view does it twice)": timed(fresh_page, runs),
        "_context: a VerdictForm for each of the 30 cards": timed(
            lambda: views._context(after, **extra), runs
        ),
        "render cards/review.html#card-swap (one card + the answer)": timed(
            lambda: render_to_string("cards/review.html#card-swap", swap, request), runs
        ),
    }
    verdicts = pg_scalar(DB, "SELECT count(*) FROM cards_verdictrevision")
    print(f"\nverdict save, median of {runs} calls each ({verdicts} verdicts in the case now):")
    for name, ms in split.items():
        print(f"  {ms:7.2f} ms  {name}")

    if profile:
        for label, fn in (("case page GET", lambda: client.get(case_path())), ("save", post)):
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(20):
                fn()
            profiler.disable()
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats("tottime").print_stats(18)
            stats.sort_stats("cumulative").print_stats(30)
            print(f"\ncProfile of 20 × {label}:")
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip()))


def _int(value: str | None) -> int | None:
    return int(value) if value else None


# --- main --------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="repetitions per figure")
    parser.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    parser.add_argument("--clients", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--worker-class", choices=["sync", "gthread"], default="sync")
    parser.add_argument("--threads", type=int, default=4, help="gthread threads per worker")
    parser.add_argument("--profile", action="store_true", help="cProfile both views too")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: apt-get install -y wrk")
    if max(args.clients) > READERS:
        sys.exit(f"at most {READERS} clients: one reviewer each")

    work = Path(tempfile.mkdtemp(prefix="review-bench-"))
    static_root = work / "static"
    sys.path.insert(0, str(ROOT))
    os.environ.update(server_env(DB, static_root))
    os.environ.pop("PYTEST_VERSION", None)
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{os.cpu_count()} CPUs"
    )
    try:
        started = time.monotonic()
        fixture = build_database(static_root)
        print(
            f"scratch database {DB}: 1 case, {PASSAGES} passages × {PASSAGE_CHARS} chars, "
            f"{len(fixture.claims)} claims × (1 claim + {JUDGEMENTS} verdict revisions) "
            f"in {time.monotonic() - started:.1f} s"
        )
        figures = measure(args, fixture, static_root, work)
        report(args, figures)
        breakdown(fixture, args.profile)
    finally:
        from django.db import connections

        connections.close_all()
        drop(f"{DB}_save")
        if not args.keep:
            drop(DB)
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
