"""What every benchmark shares: scratch databases, Django here or in a child, timing, tables.

Benchmarks are scripts (`.venv/bin/python bench/NAME.py`): they import this
module as `harness`, and it puts the checkout on `sys.path` so the apps import
too. A benchmark prints figures (medians of several runs, each beside a floor
or baseline measured in the same run) and asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def log(message: str) -> None:
    """Progress, on stderr: stdout is for the figures (and a child's JSON line)."""
    print(message, file=sys.stderr, flush=True)


def memory_kb(field_name: str) -> int:
    """VmRSS (now) or VmHWM (peak) of this process, in KiB.

    Not `getrusage().ru_maxrss`: on Linux a child's starts at the RSS its parent
    had when it forked, so it reports the benchmark's memory, not the child's.
    """
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field_name} in /proc/self/status")


def gc_timer() -> list[float]:
    """Accumulate the time the cyclic garbage collector runs, from now on, into a 1-list."""
    import gc

    total, started = [0.0], [0.0]

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            total[0] += time.perf_counter() - started[0]

    gc.callbacks.append(callback)
    return total


# --- Django, in this process or in a child ---------------------------------------------------


def django_env(database_url: str, **overrides: str) -> dict[str, str]:
    """The environment of a Django process on `database_url`: production-like, DEBUG=0."""
    return os.environ | {
        "DATABASE_URL": database_url,
        "DEBUG": "0",
        "SECRET_KEY": "bench",
        "ALLOWED_HOSTS": "testserver",
        "STATIC_MANIFEST": "0",
        # Served over plain http (gunicorn on 127.0.0.1, the test client): no https.
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "SECURE_COOKIES": "0",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        **overrides,
    }


def setup_django(env: dict[str, str]) -> None:
    """Configure Django in this process, in the environment `env` (see `django_env`)."""
    os.environ.update(env)
    os.environ.pop("PYTEST_VERSION", None)  # run from a test session: still not a test
    import django

    django.setup()


def migrate(database_url: str) -> None:
    """Migrate in a child process, so this one never loads Django for it."""
    done = subprocess.run(
        [PYTHON, "manage.py", "migrate", "--no-input", "-v0"],
        cwd=ROOT, env=django_env(database_url), capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"migrate failed:\n{done.stdout}\n{done.stderr}")


def run_child(script: str, *args: str, env: dict[str, str]) -> dict:
    """Run `script args` in a fresh Python process; its last stdout line is a JSON object.

    One process per measurement: each has its own peak RSS, and nothing the
    previous measurement left in memory or caches counts against it.
    """
    done = subprocess.run(
        [PYTHON, script, *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        result = None
    if done.returncode != 0 or not isinstance(result, dict) or "error" in result:
        raise RuntimeError(
            f"{Path(script).name} {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        )
    return result


def report_to_parent(result: dict) -> None:
    """A child's answer: one JSON line, the last one on stdout."""
    print(json.dumps(result), flush=True)


# --- PostgreSQL -------------------------------------------------------------------------------


class Postgres:
    """Throwaway databases on one server, made and dropped through one admin connection."""

    def __init__(self, base_url: str = PG):
        import psycopg

        self.psycopg = psycopg
        self.base_url = base_url.rstrip("/")
        self.admin = psycopg.connect(f"{self.base_url}/postgres", autocommit=True)

    def url(self, name: str) -> str:
        return f"{self.base_url}/{name}"

    def connect(self, name: str, **kwargs: Any):
        return self.psycopg.connect(self.url(name), **kwargs)

    def drop(self, name: str) -> None:
        self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def fresh(self, name: str, *, template: str | None = None) -> str:
        """An empty database (or a copy of `template`, a migrated one): its URL."""
        self.drop(name)
        self.admin.execute(
            f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")
        )
        return self.url(name)

    @contextmanager
    def scratch(self, name: str, *, template: str | None = None) -> Iterator[str]:
        """A fresh database for the block, dropped after it whatever happened."""
        try:
            yield self.fresh(name, template=template)
        finally:
            self.drop(name)

    def scalar(self, name: str, sql: str) -> Any:
        with self.connect(name) as conn:
            return conn.execute(sql).fetchone()[0]

    def checkpoint(self) -> None:
        """Start a timed section with no dirty pages of the previous one left to flush."""
        self.admin.execute("CHECKPOINT")

    def close(self) -> None:
        self.admin.close()


@contextmanager
def django_on_scratch(pg: Postgres, name: str, *, keep: bool = False) -> Iterator[None]:
    """Django in this process on a fresh, migrated database `name`, dropped after the block;
    with `keep`, the database is kept, and reused as it is when it exists already."""
    if keep:
        exists = pg.admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        url = pg.url(name) if exists.fetchone() else pg.fresh(name)
        scratch: Any = contextlib.nullcontext(url)
    else:
        scratch = pg.scratch(name)
    with scratch as url:
        setup_django(django_env(url))
        from django.core.management import call_command
        from django.db import connections

        try:
            call_command("migrate", verbosity=0)
            yield
        finally:
            connections.close_all()


def in_process_main(doc: str, database: str, measure: Callable[[int, int], None]) -> None:
    """The command line of a benchmark measured in this process: `measure(n, runs)`, with
    Django on a fresh, migrated database `database` (PostgreSQL, or with `--db sqlite` a
    file of that name in a temporary directory), dropped at the end unless `--keep`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="cases in a run (10,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each figure (3)")
    parser.add_argument("--db", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the database (SQLite: in var/bench/) and reuse it on the next run with "
        "--keep: the runs are imported once (the same data before and after a change)",
    )
    args = parser.parse_args()
    log(f"code: {code_state()}")
    if args.db == "sqlite":
        with contextlib.ExitStack() as stack:
            if args.keep:
                folder = ROOT / "var" / "bench"
                folder.mkdir(parents=True, exist_ok=True)
            else:
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            setup_django(django_env(sqlite_url(folder / f"{database}.sqlite3")))
            from django.core.management import call_command
            from django.db import connections

            try:
                call_command("migrate", verbosity=0)
                measure(args.n, args.runs)
            finally:
                connections.close_all()
        return
    pg = Postgres()
    try:
        with django_on_scratch(pg, database, keep=args.keep):
            measure(args.n, args.runs)
    finally:
        pg.close()


def database_name() -> str:
    """The database a benchmark measured, for its table's caption."""
    from django.db import connection

    return {"postgresql": "PostgreSQL", "sqlite": "SQLite"}.get(
        connection.vendor, connection.vendor
    )


def lead_client(project: Any) -> Any:
    """Django's test client, logged in as a lead of `project`: pages rendered in-process."""
    from django.contrib.auth.models import User
    from django.test import Client

    from evidence.models import Role
    from evidence.services import membership_set

    user = User.objects.filter(username="bench-lead").first()  # a kept database has one
    user = user or User.objects.create_user("bench-lead", password=None)
    membership_set(project=project, user=user, role=Role.LEAD)
    client = Client()
    client.force_login(user)
    return client


# --- SQLite -----------------------------------------------------------------------------------


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def sqlite_remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def sqlite_template(path: Path) -> None:
    """A migrated database in one self-contained file, to copy for each run."""
    sqlite_remove(path)
    migrate(sqlite_url(path))
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")


def sqlite_copy(template: Path, path: Path) -> Path:
    sqlite_remove(path)
    shutil.copyfile(template, path)
    return path


# --- timing -----------------------------------------------------------------------------------


class Timer:
    """The samples of one figure: `time(fn)` once per run, then read `median`.

    Each sample is the wall time and the CPU time of this process (`time.process_time`):
    on a shared machine the wall time includes waiting for other work, the CPU time
    does not (the database server's own CPU is in neither but the wall time)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.cpu: list[float] = []
        self.query_counts: list[int] = []  # one per run, when counted

    def time(self, fn: Callable[[], object], *, count_queries: bool = False) -> None:
        if not count_queries:
            self._sample(fn)
            return
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as queries:
            self._sample(fn)
        self.query_counts.append(len(queries.captured_queries))

    def _sample(self, fn: Callable[[], object]) -> None:
        started, cpu = time.perf_counter(), time.process_time()
        fn()
        self.seconds.append(time.perf_counter() - started)
        self.cpu.append(time.process_time() - cpu)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    @property
    def queries(self) -> str:
        """The query count, the same in every run (else each run's, which is a finding)."""
        if not self.query_counts:
            return "—"
        if len(set(self.query_counts)) == 1:
            return str(self.query_counts[0])
        return "/".join(map(str, self.query_counts))


def timed(fn: Callable[[], object], runs: int) -> Timer:
    """`fn` run `runs` times in a row."""
    timer = Timer()
    for _ in range(runs):
        timer.time(fn)
    return timer


def interleaved(
    figures: dict[str, Callable[[], object]], runs: int, *, count_queries: bool = False
) -> dict[str, Timer]:
    """Each figure once per round, `runs` rounds: a slow spell of the machine hits all alike."""
    timers = {name: Timer() for name in figures}
    for _ in range(runs):
        for name, fn in figures.items():
            timers[name].time(fn, count_queries=count_queries)
    return timers


# --- reporting --------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table, columns padded: the first left-aligned, the others right-aligned."""
    cells = [list(header), *[list(row) for row in rows]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]

    def line(values: list[str]) -> str:
        padded = [
            value.ljust(width) if i == 0 else value.rjust(width)
            for i, (value, width) in enumerate(zip(values, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), rule, *(line(values) for values in cells[1:])])


def versus_baseline(timers: dict[str, Timer], labels: dict[str, str], *, baseline: str) -> str:
    """Each figure's median seconds (wall and CPU of this process), its queries, and its
    ratio to the baseline's median wall time."""
    base = timers[baseline].median
    return table(
        ["what", "seconds", "cpu s", "queries", "× baseline"],
        [
            [
                labels[name],
                f"{timer.median:.3f}",
                f"{timer.cpu_median:.3f}",
                timer.queries,
                f"{timer.median / base:.2f}",
            ]
            for name, timer in timers.items()
        ],
    )


def replayed(fn: Callable[[], object]) -> Callable[[], None]:
    """A floor for `fn`: the SQL it ran once, replayed through the bare cursor, every row
    fetched (in chunks of 2,000, server-side on PostgreSQL, as `.iterator()` reads them)
    and thrown away. The same queries and rows, none of the work done with them."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    fn()  # once before: what it reads once per process (a run's project, say) is read
    with CaptureQueriesContext(connection) as captured:
        fn()
    # What Django logs of a server-side cursor is its DECLARE … FOR SELECT …: keep the SELECT.
    statements = [
        query["sql"].split(" FOR ", 1)[1] if query["sql"].startswith("DECLARE ") else query["sql"]
        for query in captured.captured_queries
    ]

    def replay() -> None:
        for sql in statements:
            with connection.chunked_cursor() as cursor:
                cursor.execute(sql)
                if cursor.description is None:
                    continue
                while cursor.fetchmany(2000):
                    pass

    return replay


def sources_digest() -> str:
    """A hash of the apps' Python sources (migrations included): others may edit them."""
    digest = hashlib.sha256()
    for app in ("config", "evidence", "replay", "cards", "compare", "ingest", "audit"):
        for path in sorted((ROOT / app).rglob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def code_state() -> str:
    """The commit a run measured, how dirty the checkout was, and the sources' hash."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT, capture_output=True, text=True,
        ).stdout.count("\n")  # fmt: skip
    except OSError:
        head, dirty = "?", 0
    return f"commit {head or '?'} + {dirty} modified files, sources {sources_digest()}"
