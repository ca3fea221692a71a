"""Benchmark of the bundle import on PostgreSQL and SQLite, against a raw-load floor.

    .venv/bin/python bench/import_bench.py                   # N=10,000, 3 runs, both databases
    .venv/bin/python bench/import_bench.py --rss-scaling     # also N=100,000 once on PostgreSQL
    .venv/bin/python bench/import_bench.py --profile         # also one cProfiled PostgreSQL import

A benchmark, not a test: it prints figures (medians, ratios to a floor measured
in the same run) and asserts nothing about time.

What happens, per database and run:

1. A synthetic, valid `evidence-bundle/1` file is generated once per N: N cases,
   each with 10 passages of ~1 KB, a case line with 2 required facts, and a
   response with a ~1 KB answer, 10 retrieved refs, 2 citations with offsets and
   5 claims, each with one judgement.
2. A fresh scratch database is made from a migrated template (PostgreSQL:
   `CREATE DATABASE … TEMPLATE`; SQLite: a copy of a migrated file).
3. A child process (`--child`) runs `ingest.services.bundle_import` on the file
   and reports the wall time of that call and its peak RSS, so every import has
   its own process and its own peak. The peak is `VmHWM` of /proc/self/status,
   not `getrusage().ru_maxrss`: on Linux a child's ru_maxrss starts at the RSS
   its parent had when it forked (the benchmark holds the dumped rows then), so
   it would report the parent's memory, not the import's. The child also reports
   the time spent in Python's cyclic garbage collector. PostgreSQL runs a
   CHECKPOINT before each timed section.
4. The floor: the rows the import stored in the 11 tables it fills are read back
   and loaded again with the raw driver, in one transaction, timed to COMMIT:
   - PostgreSQL: `COPY (SELECT * …) TO STDOUT` into memory, then the same bytes
     with psycopg `cursor.copy("COPY … FROM STDIN")`.
   - SQLite: `SELECT *` into Python tuples, then `executemany` of `INSERT`s with
     the standard `sqlite3` module (WAL, synchronous=NORMAL, like the app).
   Each is loaded twice: into *bare* tables (same columns, defaults, CHECK,
   UNIQUE and indexes; no foreign keys, no triggers; PostgreSQL:
   `CREATE TABLE … (LIKE … INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING
   INDEXES)`) and into the *full* migrated schema (plus foreign keys, checked at
   COMMIT, and the append-only and chain-sequence triggers). The bare load is
   "the floor" of the issue; the full-schema load shows what the schema itself
   costs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432"
PG_TEMPLATE, PG_RUN, PG_FLOOR = "evidence_bench_tpl", "evidence_bench_run", "evidence_bench_floor"
PROJECT = "bench"
RUN_ID = "bench-r1"

# The tables one import fills, parents first. evidence_project and
# evidence_snapshot (one row each) are loaded before the timed floor.
TABLES = (
    "evidence_passage",
    "evidence_case",
    "evidence_expectation",
    "replay_run",
    "replay_response",
    "replay_retrieval",
    "replay_citation",
    "cards_claim",
    "cards_claimrevision",
    "cards_verdictrevision",
    "cards_responsereview",
)
PARENT_TABLES = ("evidence_project", "evidence_snapshot")


# --- the synthetic bundle ----------------------------------------------------------------

VOCABULARY = """
pressure valve module firmware threshold sensor warranty calibration ambient limit
continuous operating cycle energy report pilot machine setting nominal rated value
maintenance interval service manual revision section table figure clause annex
customer contract renewal notice period invoice currency monthly annual plan seat
"""
WORDS = VOCABULARY.split()
SUPPORTS = ("supported", "partial", "unsupported", "not_assessable")


def sentence_pool(size: int = 1009, seed: int = 7) -> list[str]:
    """Reusable sentences of ~100 characters; passages and answers are cut from these."""
    rng = random.Random(seed)
    pool = []
    for _ in range(size):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < 95:
            words.append(rng.choice(WORDS))
        pool.append(" ".join(words).capitalize() + f" {rng.randint(1, 999)}.")
    return pool


def passage_text(pool: list[str], i: int, j: int) -> str:
    head = f"Document {i}, chunk {j}. "
    body = " ".join(pool[(i * 31 + j * 17 + k * 13) % len(pool)] for k in range(10))
    return head + body  # ~1,050 characters


def answer_parts(pool: list[str], i: int, refs: list[str]) -> tuple[str, list[dict], list[list]]:
    """A ~1 KB answer of 5 sentences; the first two end with a citation marker."""
    sentences, citations, spans = [], [], []
    pos = 0
    for k in range(5):
        body = f"Finding {k + 1} for case {i}: " + pool[(i * 7 + k * 101) % len(pool)][:-1]
        body += " and " + pool[(i * 11 + k * 53) % len(pool)][:-1].lower()
        if k < 2:
            marker = f"[{k + 1}]"
            start = pos + len(body) + 1
            citations.append({"marker": marker, "ref": refs[k], "start": start, "end": start + 3})
            sentence = f"{body} {marker}."
        else:
            sentence = body + "."
        spans.append([pos, pos + len(sentence)])
        sentences.append(sentence)
        pos += len(sentence) + 1
    return " ".join(sentences), citations, spans


def bundle_lines(n: int):
    """Yield the JSON lines of a valid bundle with n cases (see the module docstring)."""
    pool = sentence_pool()
    yield {
        "kind": "run",
        "schema": "evidence-bundle/1",
        "run_id": RUN_ID,
        "label": f"Import benchmark, {n} cases",
        "created_at": "2026-10-01T09:00:00Z",
        "collection_snapshot": "bench-snapshot",
        "system": {"model": "bench-generator", "prompt_version": "p1"},
    }
    for i in range(n):
        refs = [f"doc{i}@v1#c{j}" for j in range(1, 11)]
        for j, ref in enumerate(refs, start=1):
            text = passage_text(pool, i, j)
            yield {
                "kind": "passage",
                "ref": ref,
                "doc_id": f"doc{i}",
                "version": "v1",
                "chunk_id": f"c{j}",
                "text": text,
                "sha256": hashlib.sha256(text.encode()).hexdigest(),
                "title": f"Document {i}",
                "version_status": "current",
            }
        case_id = f"case-{i:06d}"
        yield {
            "kind": "case",
            "case_id": case_id,
            "query": f"Question {i}: what do the documents say about {WORDS[i % len(WORDS)]}?",
            "required_facts": [
                {"fact_id": "F1", "text": f"First fact of case {i}.", "evidence": [refs[0]]},
                {"fact_id": "F2", "text": f"Second fact of case {i}.", "evidence": [refs[1]]},
            ],
            "relevant_refs": refs[:3],
        }
        text, citations, spans = answer_parts(pool, i, refs)
        yield {
            "kind": "response",
            "case_id": case_id,
            "answer_id": f"a{i}",
            "text": text,
            "retrieved": [
                {"ref": ref, "rank": r, "score": round(1 - r / 20, 3)}
                for r, ref in enumerate(refs, start=1)
            ],
            "citations": citations,
            "claims": [
                {
                    "claim_id": f"c{k + 1}",
                    "text": f"Claim {k + 1} of case {i}: {pool[(i + k * 97) % len(pool)]}",
                    "spans": [spans[k]],
                    "citations": [refs[k]],
                    "facts": ["F1"] if k == 0 else ["F2"] if k == 1 else [],
                    "judgements": [
                        {
                            "annotator": "bench-judge",
                            "support": SUPPORTS[(i + k) % 4],
                            "reason": f"Passage {refs[k]} was read against claim {k + 1}.",
                        }
                    ],
                }
                for k in range(5)
            ],
        }


def write_bundle(workdir: Path, n: int) -> Path:
    path = workdir / f"bundle-{n}.jsonl"
    started = time.perf_counter()
    with path.open("w", encoding="utf-8") as out:
        for line in bundle_lines(n):
            out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
            out.write("\n")
    seconds = time.perf_counter() - started
    log(f"bundle: {n:,} cases, {path.stat().st_size / 1e6:,.0f} MB, written in {seconds:.0f} s")
    return path


# --- the child: one import in its own process ------------------------------------------------


def memory_kb(field_name: str) -> int:
    """VmRSS (now) or VmHWM (peak) of this process, in KiB; ru_maxrss where there is no /proc."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


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


def child(bundle: str, profile: str | None) -> None:
    """Run one import with Django and print one JSON line: seconds, peak RSS, row counts."""
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from ingest.services import BundleInvalid, bundle_import

    rss_before = memory_kb("VmRSS")
    gc_seconds = gc_timer()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    with open(bundle, "rb") as stream:
        started = time.perf_counter()
        try:
            if profiler:
                profiler.enable()
            summary = bundle_import(stream=stream, project_slug=PROJECT, create_project=True)
        except BundleInvalid as exc:
            print(json.dumps({"error": exc.lines()}))
            sys.exit(1)
        finally:
            if profiler:
                profiler.disable()
        seconds = time.perf_counter() - started
    if profiler:
        profiler.dump_stats(profile)
    peak = memory_kb("VmHWM")
    print(
        json.dumps(
            {
                "seconds": seconds,
                "rss_before_kb": rss_before,
                "peak_rss_kb": peak,
                "gc_seconds": gc_seconds[0],
                "summary": summary.as_dict(),
            }
        )
    )


def run_child(database_url: str, bundle: Path, profile: Path | None = None) -> dict:
    env = os.environ | {
        "DEBUG": "1",
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    command = [PYTHON, str(Path(__file__).resolve()), "--child", str(bundle)]
    if profile:
        command += ["--profile-out", str(profile)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        result = {}
    if done.returncode != 0 or "error" in result or "seconds" not in result:
        raise RuntimeError(f"import failed:\n{done.stdout}\n{done.stderr}")
    return result


def migrate(database_url: str) -> None:
    env = os.environ | {"DEBUG": "1", "DATABASE_URL": database_url}
    done = subprocess.run(
        [PYTHON, "manage.py", "migrate", "--no-input"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"migrate failed:\n{done.stdout}\n{done.stderr}")


# --- PostgreSQL ------------------------------------------------------------------------------


class Postgres:
    def __init__(self, base_url: str):
        import psycopg

        self.psycopg = psycopg
        self.base_url = base_url.rstrip("/")
        self.admin = psycopg.connect(f"{self.base_url}/postgres", autocommit=True)

    def url(self, name: str) -> str:
        return f"{self.base_url}/{name}"

    def connect(self, name: str, **kwargs):
        return self.psycopg.connect(self.url(name), **kwargs)

    def drop(self, name: str) -> None:
        self.admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def fresh(self, name: str, template: str | None = None) -> str:
        self.drop(name)
        self.admin.execute(
            f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else "")
        )
        return self.url(name)

    def checkpoint(self) -> None:
        """Start every timed section with no dirty pages of the previous one to flush."""
        self.admin.execute("CHECKPOINT")

    def setup(self) -> None:
        migrate(self.fresh(PG_TEMPLATE))

    def dump(self, name: str) -> dict[str, bytearray]:
        """The rows of every table the import filled, in COPY text format."""
        data = {}
        with self.connect(name) as conn, conn.cursor() as cur:
            for table in PARENT_TABLES + TABLES:
                buffer = bytearray()
                with cur.copy(f"COPY (SELECT * FROM {table} ORDER BY id) TO STDOUT") as copy:
                    for chunk in copy:
                        buffer += chunk
                data[table] = buffer
        return data

    @staticmethod
    def load(cur, table: str, data: bytearray) -> None:
        with cur.copy(f"COPY {table} FROM STDIN") as copy:
            copy.write(data)

    def floor_bare(self, data: dict[str, bytearray]) -> float:
        """Same bytes into LIKE copies (no FKs, no triggers), in a fresh migrated database.

        Not in the run's database: autovacuum may be busy there with the rows just imported.
        """
        self.fresh(PG_FLOOR, template=PG_TEMPLATE)
        with self.connect(PG_FLOOR, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA bench_floor")
            for table in TABLES:
                conn.execute(
                    f"CREATE TABLE bench_floor.{table} (LIKE public.{table} INCLUDING DEFAULTS "
                    "INCLUDING CONSTRAINTS INCLUDING INDEXES)"
                )
            self.checkpoint()
            started = time.perf_counter()
            with conn.transaction(), conn.cursor() as cur:
                for table in TABLES:
                    self.load(cur, f"bench_floor.{table}", data[table])
            seconds = time.perf_counter() - started
        self.drop(PG_FLOOR)
        return seconds

    def floor_schema(self, data: dict[str, bytearray]) -> float:
        """Same bytes into a fresh migrated database: FKs (deferred to COMMIT), triggers."""
        self.fresh(PG_FLOOR, template=PG_TEMPLATE)
        with self.connect(PG_FLOOR, autocommit=True) as conn:
            with conn.transaction(), conn.cursor() as cur:
                for table in PARENT_TABLES:
                    self.load(cur, table, data[table])
            self.checkpoint()
            started = time.perf_counter()
            with conn.transaction(), conn.cursor() as cur:
                for table in TABLES:
                    self.load(cur, table, data[table])
            seconds = time.perf_counter() - started
        self.drop(PG_FLOOR)
        return seconds

    def one_run(self, bundle: Path, floors: bool, profile: Path | None = None) -> dict:
        url = self.fresh(PG_RUN, template=PG_TEMPLATE)
        self.checkpoint()
        result = run_child(url, bundle, profile)
        if floors:
            data = self.dump(PG_RUN)
            self.drop(PG_RUN)
            result["floor_bare"] = self.floor_bare(data)
            result["floor_schema"] = self.floor_schema(data)
            del data
        self.drop(PG_RUN)
        return result

    def cleanup(self) -> None:
        for name in (PG_RUN, PG_FLOOR, PG_TEMPLATE):
            self.drop(name)
        self.admin.close()


# --- SQLite ----------------------------------------------------------------------------------


def sqlite_regexp(pattern: str | None, value: Any) -> bool | None:
    """What Django registers as REGEXP, which the CHECK constraints of the schema call."""
    if pattern is None or value is None:
        return None
    return bool(re.search(pattern, str(value)))


def sqlite_connect(path: Path, *, foreign_keys: bool) -> sqlite3.Connection:
    """The pragmas the app's settings use, plus Django's own `foreign_keys = ON` and REGEXP."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.create_function("REGEXP", 2, sqlite_regexp, deterministic=True)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA foreign_keys={'ON' if foreign_keys else 'OFF'}")
    return conn


class Sqlite:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.template = workdir / "template.sqlite3"
        self.run_file = workdir / "run.sqlite3"
        self.floor_file = workdir / "floor.sqlite3"

    @staticmethod
    def url(path: Path) -> str:
        return f"sqlite:///{path}"

    @staticmethod
    def remove(path: Path) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    def fresh(self, path: Path) -> Path:
        self.remove(path)
        shutil.copyfile(self.template, path)
        return path

    def setup(self) -> None:
        self.remove(self.template)
        migrate(self.url(self.template))
        with sqlite3.connect(self.template) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("PRAGMA journal_mode=DELETE")  # one self-contained file to copy

    def dump(self, path: Path) -> dict[str, tuple[list[str], list[tuple]]]:
        data = {}
        with sqlite3.connect(path) as conn:
            for table in PARENT_TABLES + TABLES:
                cur = conn.execute(f"SELECT * FROM {table} ORDER BY id")  # noqa: S608
                data[table] = ([d[0] for d in cur.description], cur.fetchall())
        return data

    @staticmethod
    def load(conn: sqlite3.Connection, table: str, columns: list[str], rows: list) -> None:
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" * len(columns))
        conn.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)  # noqa: S608

    def floor(self, data: dict, *, bare: bool) -> float:
        path = self.fresh(self.floor_file)
        conn = sqlite_connect(path, foreign_keys=not bare)
        try:
            if bare:
                triggers = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
                for (name,) in triggers.fetchall():
                    conn.execute(f'DROP TRIGGER "{name}"')
            conn.execute("BEGIN IMMEDIATE")
            for table in PARENT_TABLES:
                self.load(conn, table, *data[table])
            conn.execute("COMMIT")
            started = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            for table in TABLES:
                self.load(conn, table, *data[table])
            conn.execute("COMMIT")
            seconds = time.perf_counter() - started
        finally:
            conn.close()
        self.remove(path)
        return seconds

    def one_run(self, bundle: Path, floors: bool, profile: Path | None = None) -> dict:
        path = self.fresh(self.run_file)
        result = run_child(self.url(path), bundle, profile)
        if floors:
            data = self.dump(path)
            result["floor_bare"] = self.floor(data, bare=True)
            result["floor_schema"] = self.floor(data, bare=False)
            del data
        self.remove(path)
        return result

    def cleanup(self) -> None:
        for path in (self.run_file, self.floor_file, self.template):
            self.remove(path)


# --- reporting -------------------------------------------------------------------------------


@dataclass
class Row:
    db: str
    n: int
    runs: list[dict] = field(default_factory=list)

    def median(self, key: str) -> float | None:
        values = [r[key] for r in self.runs if key in r]
        return statistics.median(values) if values else None

    def cells(self) -> list[str]:
        seconds = self.median("seconds")
        bare, schema = self.median("floor_bare"), self.median("floor_schema")
        peak = max(r["peak_rss_kb"] for r in self.runs) / 1024
        before = min(r["rss_before_kb"] for r in self.runs) / 1024
        return [
            self.db,
            f"{self.n:,}",
            str(len(self.runs)),
            f"{seconds:.2f}",
            f"{self.median('gc_seconds'):.2f}",
            f"{self.n / seconds:,.0f}",
            f"{peak:,.0f} ({before:.0f})",
            f"{bare:.2f}" if bare else "—",
            f"{seconds / bare:.1f}×" if bare else "—",
            f"{schema:.2f}" if schema else "—",
            f"{seconds / schema:.1f}×" if schema else "—",
        ]


HEADER = [
    "db",
    "N",
    "runs",
    "import s (median)",
    "of which GC s",
    "cases/s",
    "peak RSS MB (at start)",
    "floor s (bare)",
    "import/floor",
    "floor s (full schema)",
    "import/full",
]


LEGEND = """
import s: wall time of bundle_import() in a fresh process and a fresh database, median of runs;
  GC: the part of it spent in Python's cyclic garbage collector.
floor s: the same rows loaded raw (PostgreSQL COPY / SQLite executemany), one transaction,
  to COMMIT; bare = no foreign keys, no triggers; full = the migrated schema.
peak RSS: VmHWM of the importing process, largest of the runs (in brackets: its RSS after
  django.setup(), before the import)."""


def table(rows: list[Row]) -> str:
    cells = [HEADER] + [row.cells() for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(HEADER))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |"
        for line in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def print_profile(path: Path, limit: int) -> None:
    import pstats

    for order in ("tottime", "cumulative"):
        print(f"\n--- cProfile of one PostgreSQL import, top {limit} by {order} ---")
        stats = pstats.Stats(str(path), stream=sys.stdout)
        stats.strip_dirs().sort_stats(order).print_stats(limit)


def sources_digest() -> str:
    """A hash of the app's Python sources (migrations included): others may edit them."""
    digest = hashlib.sha256()
    for app in ("config", "evidence", "cards", "replay"):
        for path in sorted((ROOT / app).rglob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def code_state() -> str:
    """The commit the run measured, how dirty the checkout was, and the sources' hash."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.count("\n")
    except OSError:
        head, dirty = "?", 0
    return f"commit {head or '?'} + {dirty} modified files, sources {sources_digest()}"


def describe(result: dict) -> str:
    text = (
        f"import {result['seconds']:.2f} s (GC {result['gc_seconds']:.2f} s), "
        f"peak RSS {result['peak_rss_kb'] / 1024:.0f} MB"
    )
    if "floor_bare" in result:
        text += f", floor bare {result['floor_bare']:.2f} s, full {result['floor_schema']:.2f} s"
    return text


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="cases in the bundle (10,000)")
    parser.add_argument("--runs", type=int, default=3, help="imports per database (3)")
    parser.add_argument("--db", choices=("postgres", "sqlite", "both"), default="both")
    parser.add_argument(
        "--rss-scaling",
        action="store_true",
        help="also import N=100,000 once on PostgreSQL (with its floor) and compare peak RSS",
    )
    parser.add_argument(
        "--profile", action="store_true", help="also run one PostgreSQL import under cProfile"
    )
    parser.add_argument("--pg", default=DEFAULT_PG, help=f"PostgreSQL server URL ({DEFAULT_PG})")
    parser.add_argument("--child", metavar="BUNDLE", help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.profile_out)
        return

    workdir = Path(tempfile.mkdtemp(prefix="import-bench-"))
    state, digest = code_state(), sources_digest()
    log(f"code: {state}")
    use_pg = args.db in ("postgres", "both") or args.rss_scaling or args.profile
    pg = Postgres(args.pg) if use_pg else None
    lite = Sqlite(workdir) if args.db in ("sqlite", "both") else None
    rows: list[Row] = []
    try:
        bundle = write_bundle(workdir, args.n)
        targets: list[tuple[str, Any]] = []
        if pg:
            pg.setup()
            if args.db in ("postgres", "both"):
                targets.append(("postgresql", pg))
        if lite:
            lite.setup()
            targets.append(("sqlite", lite))
        for name, db in targets:
            row = Row(name, args.n)
            for i in range(args.runs):
                result = db.one_run(bundle, floors=True)
                row.runs.append(result)
                log(f"{name} run {i + 1}/{args.runs}: {describe(result)}")
            s = row.runs[0]["summary"]
            log(
                f"{name} wrote: {s['passages']['new']:,} passages, {s['responses']:,} "
                f"responses, {s['retrieved']:,} retrievals, {s['citations']:,} citations, "
                f"{s['claims']:,} claims, {s['verdicts']:,} verdicts"
            )
            rows.append(row)
        if args.profile:
            profile = workdir / "import.prof"
            pg.one_run(bundle, floors=False, profile=profile)
            print_profile(profile, 15)
        if args.rss_scaling:
            big_n = 100_000
            if not any(r.db == "postgresql" and r.n == args.n for r in rows):
                small = Row("postgresql", args.n, [pg.one_run(bundle, floors=False)])
                rows.append(small)
            bundle.unlink()
            big = write_bundle(workdir, big_n)
            result = pg.one_run(big, floors=True)
            log(f"postgresql N={big_n:,}: {describe(result)}")
            rows.append(Row("postgresql", big_n, [result]))
            big.unlink()

        print()
        print(table(rows))
        print(LEGEND)
        print(f"\ncode: {state}")
        if sources_digest() != digest:
            print(f"WARNING: the sources changed during the run, now: {code_state()}")
        if args.rss_scaling:
            pg_rows = {r.n: r for r in rows if r.db == "postgresql"}
            small_rss = max(r["peak_rss_kb"] for r in pg_rows[args.n].runs) / 1024
            big_rss = pg_rows[100_000].runs[0]["peak_rss_kb"] / 1024
            print(
                f"\nRSS scaling on PostgreSQL: N={args.n:,} → {small_rss:,.0f} MB, "
                f"N=100,000 → {big_rss:,.0f} MB (×{big_rss / small_rss:.1f})"
            )
    finally:
        if pg:
            pg.cleanup()
        if lite:
            lite.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
