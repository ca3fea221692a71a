"""Benchmark of the bundle import on PostgreSQL and SQLite, against a raw-load floor.

    .venv/bin/python bench/import_bench.py                   # N=10,000, 3 runs, both databases
    .venv/bin/python bench/import_bench.py --rss-scaling     # also N=100,000 once on PostgreSQL
    .venv/bin/python bench/import_bench.py --profile         # also one cProfiled PostgreSQL import

A benchmark, not a test: it prints figures (medians, ratios to a floor measured
in the same run) and asserts nothing about time.

What happens, per database and run:

1. A synthetic, valid `evidence-bundle/1` file is generated once per N
   (`bundles.import_bundle_lines`): N cases, each with 10 passages of ~1 KB, a
   case line with 2 required facts, and a response with a ~1 KB answer, 10
   retrieved refs, 2 citations with offsets and 5 claims, each with one
   judgement.
2. A fresh scratch database is made from a migrated template (PostgreSQL:
   `CREATE DATABASE … TEMPLATE`; SQLite: a copy of a migrated file).
3. A child process (`--child`) runs `ingest.services.bundle_import` on the file
   and reports the wall time of that call and its peak RSS, so every import has
   its own process and its own peak. The peak is `VmHWM` of /proc/self/status,
   not `getrusage().ru_maxrss`: on Linux a child's ru_maxrss starts at the RSS
   its parent had when it forked (the benchmark holds the dumped rows then), so
   it would report the parent's memory, not the import's. The child also reports
   its own CPU time and the time spent in Python's cyclic garbage collector.
   PostgreSQL runs a CHECKPOINT before each timed section.
4. The floor (`import_floor.py`): the rows the import stored are read back and
   loaded again with the raw driver (COPY / executemany), in one transaction,
   timed to COMMIT, twice: into *bare* tables (no foreign keys, no triggers),
   "the floor" of the issue, and into the *full* migrated schema, which shows
   what the schema itself costs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bundles import import_bundle_lines, write_jsonl
from harness import (
    PG,
    Postgres,
    code_state,
    django_env,
    gc_timer,
    log,
    memory_kb,
    report_to_parent,
    run_child,
    sources_digest,
    table,
)
from import_floor import PostgresFloor, SqliteFloor

PROJECT = "bench"


# --- the child: one import in its own process ------------------------------------------------


def child(bundle: str, profile: str | None) -> None:
    """Run one import with Django and report seconds, peak RSS and the summary."""
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
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            if profiler:
                profiler.enable()
            summary = bundle_import(stream=stream, project_slug=PROJECT, create_project=True)
        except BundleInvalid as exc:
            report_to_parent({"error": exc.lines()})
            sys.exit(1)
        finally:
            if profiler:
                profiler.disable()
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
    if profiler:
        profiler.dump_stats(profile)
    report_to_parent(
        {
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            "rss_before_kb": rss_before,
            "peak_rss_kb": memory_kb("VmHWM"),
            "gc_seconds": gc_seconds[0],
            "summary": summary.as_dict(),
        }
    )


def import_in_child(database_url: str, bundle: Path, profile: Path | None = None) -> dict:
    args = ["--child", str(bundle)] + (["--profile-out", str(profile)] if profile else [])
    # DEBUG=1 as in every earlier run of this benchmark, so the figures stay comparable.
    return run_child(__file__, *args, env=django_env(database_url, DEBUG="1"))


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
            f"{self.median('cpu_seconds'):.2f}",
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
    "CPU s",
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
  CPU: the importing process's own CPU time in that call (the database's is not in it): on a
  busy machine it moves far less than the wall time. GC: the part of the wall time spent in
  Python's cyclic garbage collector.
floor s: the same rows loaded raw (PostgreSQL COPY / SQLite executemany), one transaction,
  to COMMIT; bare = no foreign keys, no triggers; full = the migrated schema.
peak RSS: VmHWM of the importing process, largest of the runs (in brackets: its RSS after
  django.setup(), before the import)."""


def print_profile(path: Path, limit: int) -> None:
    import pstats

    for order in ("tottime", "cumulative"):
        print(f"\n--- cProfile of one PostgreSQL import, top {limit} by {order} ---")
        stats = pstats.Stats(str(path), stream=sys.stdout)
        stats.strip_dirs().sort_stats(order).print_stats(limit)


def describe(result: dict) -> str:
    text = (
        f"import {result['seconds']:.2f} s (CPU {result['cpu_seconds']:.2f} s, "
        f"GC {result['gc_seconds']:.2f} s), "
        f"peak RSS {result['peak_rss_kb'] / 1024:.0f} MB"
    )
    if "floor_bare" in result:
        text += f", floor bare {result['floor_bare']:.2f} s, full {result['floor_schema']:.2f} s"
    return text


def write_bundle(workdir: Path, n: int) -> Path:
    return write_jsonl(workdir / f"bundle-{n}.jsonl", import_bundle_lines(n))


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
    parser.add_argument("--pg", default=PG, help=f"PostgreSQL server URL ({PG})")
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
    pg = PostgresFloor(Postgres(args.pg), import_in_child) if use_pg else None
    lite = SqliteFloor(workdir, import_in_child) if args.db in ("sqlite", "both") else None
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
        print(table(HEADER, [row.cells() for row in rows]))
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
