"""Benchmark of the audit export on PostgreSQL and SQLite: its time, its peak RSS, the zip floor.

    .venv/bin/python bench/export_bench.py                     # N=10,000 and 2,000, 3 runs, both
    .venv/bin/python bench/export_bench.py --levels 1,3,6,9    # also the export at other levels
    .venv/bin/python bench/export_bench.py --profile           # also one cProfiled export
    .venv/bin/python bench/export_bench.py --n 1000 --small 200 --runs 1 --db sqlite  # a look

A benchmark, not a test: it prints figures (medians, and ratios to a floor
measured in the same run) and asserts nothing about time or memory.

What happens, per database:

1. A scratch database is made (PostgreSQL: BENCH_DB, created and dropped; SQLite:
   a file in a temporary folder) and migrated, and two runs in the import
   benchmark's shape (`bundles.import_bundle_lines`: per case 10 passages of
   ~1 KB, a ~1 KB answer, 10 retrieved refs, 2 citations, 5 claims with one
   judgement each, by `bench-judge`) are imported with `bundle_import` in a
   child: `big` with N cases and `small` with `--small` cases (default 2,000),
   each in its own snapshot. PostgreSQL then runs VACUUM (ANALYZE), as
   autovacuum would have long before anyone exports.
2. Each export runs `export_audit --project bench --run RUN --annotator
   bench-judge --out FILE` (the cards then show the verdicts the figures
   count) in a child process of its own, which reports the wall time of the
   command, its CPU and GC time, and its peak RSS: `VmHWM` of /proc/self/status,
   read after the export, and the RSS it had before it (Django loaded,
   connected). A flat export has the same peak for `small` and `big`. One
   export of each run, not timed, comes first: it warms the caches and leaves
   one anchor, and the anchors file is put back to that one anchor before each
   timed export, so every export checks the same earlier package
   (audit.anchors). PostgreSQL runs a CHECKPOINT before each.
3. The floor, in this process and the same run, after each export: the
   members of the package the export produced are extracted to a temporary
   directory (once, not timed), then written into a new zip with the standard
   library alone (`zipfile`, each member's ZipInfo from `audit.zipstream.zip_info`:
   the exporter's deflate level, date, system and zip64, an unseekable output
   as the exporter's) while `hashlib` computes each member's SHA-256, reading
   each file in 64 KiB chunks, in one thread. It is what any exporter of these
   bytes must pay. Its wall and CPU times are both reported: on a shared
   machine the CPU times, and their ratio, move less.
4. `--levels`: the big run exported again at each deflate level (the child sets
   `audit.zipstream.COMPRESS_LEVEL`), each beside the floor at that level, in
   rounds: the time against size that chose `COMPRESS_LEVEL`.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from bundles import import_bundle_lines, write_jsonl
from harness import (
    Postgres,
    code_state,
    django_env,
    gc_timer,
    log,
    memory_kb,
    migrate,
    report_to_parent,
    run_child,
    sources_digest,
    sqlite_remove,
    sqlite_url,
    table,
)

from audit.zipstream import COMPRESS_LEVEL, zip_info

# The scratch database (created, then dropped): BENCH_DB names another, so that benches
# run side by side do not drop each other's.
NAME = os.environ.get("BENCH_DB", "evidence_export_bench")
PROJECT = "bench"
ANNOTATOR = "bench-judge"  # who judged every claim (bundles.import_bundle_lines)
CHUNK = 64 * 1024
FIGURES = ("export", "cpu", "gc", "peak", "before", "floor", "floor_cpu")
# A fixed key: the bench never reads or makes the checkout's var/audit-signing.key.
KEY = "bench-" + "0" * 58


# --- the children: the import, and one export each ---------------------------------------------


def import_runs(bundles: list[str]) -> None:
    """Import the bundles into a new project, in order (in a child: Django stays out of here)."""
    import django

    django.setup()
    from ingest.services import bundle_import

    started = time.perf_counter()
    for number, path in enumerate(bundles):
        with open(path, "rb") as stream:
            bundle_import(stream=stream, project_slug=PROJECT, create_project=number == 0)
    report_to_parent({"seconds": time.perf_counter() - started})


def export(run_id: str, out: str, profile: str | None, level: int | None) -> None:
    """One export_audit, timed, with its CPU, GC and memory (optionally under cProfile, or
    at another deflate level than COMPRESS_LEVEL)."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    import audit.zipstream

    if level is not None:
        audit.zipstream.COMPRESS_LEVEL = level
    connection.ensure_connection()
    rss_before = memory_kb("VmRSS")
    gc_seconds = gc_timer()
    printed = io.StringIO()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    started, cpu_started = time.perf_counter(), time.process_time()
    call_command(
        "export_audit", "--project", PROJECT, "--run", run_id, "--annotator", ANNOTATOR,
        "--out", out, stdout=printed,
    )  # fmt: skip
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile)
    report_to_parent(
        {
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            "gc_seconds": gc_seconds[0],
            "rss_before_kb": rss_before,
            "peak_rss_kb": memory_kb("VmHWM"),
            "package_id": printed.getvalue().strip(),
        }
    )


# --- the floor: zip and hash the same bytes with the standard library ---------------------------


class Unseekable(io.RawIOBase):
    def __init__(self, out) -> None:
        self.out = out

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        return self.out.write(data)

    def tell(self) -> int:
        raise io.UnsupportedOperation("unseekable")


def extract(package: Path, folder: Path) -> list[tuple[str, Path]]:
    """The package's members as files, in the package's order (not timed)."""
    folder.mkdir()
    files = []
    with zipfile.ZipFile(package) as archive:
        for number, info in enumerate(archive.infolist()):
            path = folder / f"{number:03d}"
            with archive.open(info) as source, path.open("wb") as target:
                while chunk := source.read(CHUNK):
                    target.write(chunk)
            files.append((info.filename, path))
    return files


def floor(files: list[tuple[str, Path]], out: Path, level: int = COMPRESS_LEVEL) -> list[float]:
    """Seconds (wall, CPU) to zip and hash the files, at `level`, as the exporter's members
    are."""
    started, cpu_started = time.perf_counter(), time.process_time()
    digests = []
    with out.open("wb") as raw, zipfile.ZipFile(Unseekable(raw), "w") as archive:
        for name, path in files:
            info = zip_info(name)
            info.compress_level = level
            digest = hashlib.sha256()
            with path.open("rb") as source, archive.open(info, "w", force_zip64=True) as target:
                while chunk := source.read(CHUNK):
                    digest.update(chunk)
                    target.write(chunk)
            digests.append(digest.hexdigest())
    return [time.perf_counter() - started, time.process_time() - cpu_started]


# --- one database -------------------------------------------------------------------------------


class Database:
    """A scratch database with both runs imported, exported `runs` times each."""

    def __init__(self, name: str, work: Path, pg: Postgres | None):
        self.name, self.pg = name, pg
        self.work = work / name
        self.work.mkdir()
        self.anchors = self.work / "anchors"
        if pg:
            self.url = pg.fresh(NAME)
        else:
            self.file = self.work / "export.sqlite3"
            self.url = sqlite_url(self.file)
        self.env = django_env(self.url, AUDIT_ANCHOR_DIR=str(self.anchors), AUDIT_SIGNING_KEY=KEY)
        self.seeds: dict[str, tuple[bytes | None, bytes | None]] = {}

    def setup(self, bundles: list[Path]) -> None:
        migrate(self.url)
        imported = run_child(__file__, "--import", *map(str, bundles), env=self.env)
        log(f"{self.name}: imported both runs in {imported['seconds']:.0f} s")
        if self.pg:
            with self.pg.connect(NAME, autocommit=True) as conn:
                conn.execute("VACUUM (ANALYZE)")

    def export(
        self, run_id: str, package: Path, profile: Path | None = None, level: int | None = None
    ) -> dict:
        if self.pg:
            self.pg.checkpoint()
        args = ["--export", run_id, str(package)]
        if profile:
            args += ["--profile-out", str(profile)]
        if level is not None:
            args += ["--level", str(level)]
        return run_child(__file__, *args, env=self.env)

    def anchor_files(self) -> tuple[Path, Path]:
        """The project's anchors file and its log's checkpoint (audit.anchor_log)."""
        return self.anchors / f"{PROJECT}.jsonl", self.anchors / f"{PROJECT}.checkpoint.json"

    def reset_anchors(self, run_id: str) -> None:
        """The anchors file and its checkpoint as the run's warm-up export left them: one
        earlier package (a checkpoint ahead of its file is refused as a file cut short)."""
        for path, data in zip(self.anchor_files(), self.seeds[run_id], strict=True):
            if data is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(data)

    def measure(self, run_id: str, runs: int) -> dict[str, list]:
        package = self.work / f"{run_id}.zip"
        for path in self.anchor_files():
            path.unlink(missing_ok=True)
        warm = self.export(run_id, package)
        self.seeds[run_id] = tuple(
            path.read_bytes() if path.exists() else None for path in self.anchor_files()
        )
        files = extract(package, self.work / f"{run_id}-members")
        figures: dict[str, list] = {key: [] for key in FIGURES}
        ids = {warm["package_id"]}
        for attempt in range(runs):
            self.reset_anchors(run_id)
            result = self.export(run_id, package)
            ids.add(result["package_id"])
            figures["export"].append(result["seconds"])
            figures["cpu"].append(result["cpu_seconds"])
            figures["gc"].append(result["gc_seconds"])
            figures["peak"].append(result["peak_rss_kb"] / 1024)
            figures["before"].append(result["rss_before_kb"] / 1024)
            wall, cpu = floor(files, self.work / "floor.zip")
            figures["floor"].append(wall)
            figures["floor_cpu"].append(cpu)
            log(
                f"{self.name} {run_id} run {attempt + 1}/{runs}: export {result['seconds']:.2f} s "
                f"(CPU {result['cpu_seconds']:.2f}, GC {result['gc_seconds']:.2f}), "
                f"peak {result['peak_rss_kb'] / 1024:.0f} MiB, floor {wall:.2f} s (CPU {cpu:.2f})"
            )
        if len(ids) != 1:
            log(f"warning: {run_id} exported to different package ids: {sorted(ids)}")
        figures["sizes"] = [
            package.stat().st_size / 1e6,
            sum(path.stat().st_size for _, path in files) / 1e6,
        ]
        figures["files"] = files
        return figures

    def levels(self, files: list[tuple[str, Path]], levels: list[int], runs: int) -> str:
        """The big run exported at each deflate level, beside the floor of its members at
        that level, in rounds (a slow spell of the machine hits every level alike)."""
        package, out = self.work / "level.zip", self.work / "level-floor.zip"
        keys = ("export", "cpu", "floor", "floor_cpu", "zip")
        figures = {level: {key: [] for key in keys} for level in levels}
        for _ in range(runs):
            for level in levels:
                self.reset_anchors("big")
                result = self.export("big", package, level=level)
                wall, cpu = floor(files, out, level)
                for key, value in zip(
                    keys,
                    (
                        result["seconds"], result["cpu_seconds"], wall, cpu,
                        package.stat().st_size / 1e6,
                    ),
                    strict=True,
                ):  # fmt: skip
                    figures[level][key].append(value)
                log(
                    f"{self.name} level {level}: export {result['seconds']:.2f} s "
                    f"(CPU {result['cpu_seconds']:.2f}), floor {wall:.2f} s (CPU {cpu:.2f})"
                )
        rows = []
        for level in levels:
            f = {key: statistics.median(values) for key, values in figures[level].items()}
            rows.append(
                [
                    f"{level}{' (COMPRESS_LEVEL)' if level == COMPRESS_LEVEL else ''}",
                    f"{f['zip']:.1f}", f"{f['export']:.2f}", f"{f['cpu']:.2f}",
                    f"{f['floor']:.2f}", f"{f['floor_cpu']:.2f}",
                    f"{f['export'] / f['floor']:.2f}", f"{f['cpu'] / f['floor_cpu']:.2f}",
                ]
            )  # fmt: skip
        header = [
            "level", "zip MB", "export s", "CPU s", "floor s", "floor CPU s", "× floor",
            "CPU ÷ floor CPU",
        ]  # fmt: skip
        return table(header, rows)

    def close(self) -> None:
        if self.pg:
            self.pg.drop(NAME)
        else:
            sqlite_remove(self.file)


def print_profile(path: Path, limit: int) -> None:
    import pstats

    for order in ("tottime", "cumulative"):
        print(f"\n--- cProfile of one export of the big run, top {limit} by {order} ---")
        stats = pstats.Stats(str(path), stream=sys.stdout)
        stats.strip_dirs().sort_stats(order).print_stats(limit)


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="cases of the big run (10,000)")
    parser.add_argument("--small", type=int, default=2_000, help="cases of the small run (2,000)")
    parser.add_argument("--runs", type=int, default=3, help="timed exports of each run (3)")
    parser.add_argument("--db", choices=("postgres", "sqlite", "both"), default="both")
    parser.add_argument(
        "--levels", help="also the big run exported at these deflate levels, e.g. 1,3,6,9"
    )
    parser.add_argument(
        "--profile", action="store_true", help="also one export of the big run under cProfile"
    )
    args = parser.parse_args()
    state, digest = code_state(), sources_digest()
    log(f"code: {state}")
    work = Path(tempfile.mkdtemp(prefix="export-bench-"))
    pg = Postgres() if args.db in ("postgres", "both") else None
    results: list[tuple[str, dict[str, dict]]] = []
    levels = profile = None
    try:
        bundles = [
            write_jsonl(
                work / f"{run_id}.jsonl", import_bundle_lines(cases, run_id, f"{run_id}@1")
            )
            for run_id, cases in (("big", args.n), ("small", args.small))
        ]
        names = {"postgres": ["postgresql"], "sqlite": ["sqlite"]}.get(
            args.db, ["postgresql", "sqlite"]
        )
        for name in names:
            db = Database(name, work, pg if name == "postgresql" else None)
            try:
                db.setup(bundles)
                figures = {run_id: db.measure(run_id, args.runs) for run_id in ("small", "big")}
                results.append((name, figures))
                if args.levels and levels is None:
                    wanted = sorted({int(level) for level in args.levels.split(",")})
                    log(f"{name}: the big run exported at levels {wanted}")
                    levels = (name, db.levels(figures["big"]["files"], wanted, args.runs))
                if args.profile and profile is None:
                    profile = work / "export.prof"
                    db.export("big", work / "profiled.zip", profile)
                    profile_db = name
            finally:
                db.close()

        print(f"\nAudit export, median of {args.runs} runs (one process per export)")
        print(
            "each case: 10 passages of ~1 KB, a ~1 KB answer, 10 retrieved, 2 citations, "
            "5 claims × (1 claim + 1 verdict revision)\n"
        )
        rows = []
        for name, figures in results:
            for run_id, cases in (("small", args.small), ("big", args.n)):
                f = figures[run_id]
                m = {key: statistics.median(f[key]) for key in FIGURES}
                rows.append(
                    [
                        name, f"{cases:,}", f"{f['sizes'][0]:.1f}", f"{f['sizes'][1]:.1f}",
                        f"{m['export']:.2f}", f"{m['cpu']:.2f}", f"{m['gc']:.2f}",
                        f"{m['floor']:.2f}", f"{m['floor_cpu']:.2f}",
                        f"{m['export'] / m['floor']:.2f}", f"{m['cpu'] / m['floor_cpu']:.2f}",
                        f"{m['before']:.0f}", f"{m['peak']:.0f}", f"{m['peak'] - m['before']:.0f}",
                    ]
                )  # fmt: skip
        header = [
            "db", "cases", "zip MB", "data MB", "export s", "CPU s", "GC s", "floor s",
            "floor CPU s", "× floor", "CPU ÷ floor CPU", "RSS before MiB", "peak RSS MiB",
            "growth MiB",
        ]  # fmt: skip
        print(table(header, rows))
        print(f"\ndeflate level {COMPRESS_LEVEL} (audit.zipstream.COMPRESS_LEVEL)")
        for name, figures in results:
            print(
                f"{name} runs (export / floor s): "
                + "; ".join(
                    f"{run_id} "
                    + ", ".join(
                        f"{e:.2f} / {b:.2f}"
                        for e, b in zip(
                            figures[run_id]["export"], figures[run_id]["floor"], strict=True
                        )
                    )
                    for run_id in ("small", "big")
                )
            )
        if levels:
            print(f"\nThe big run by deflate level ({levels[0]}), median of {args.runs}:")
            print(levels[1])
        if profile:
            print_profile(profile, 30)
            print(f"(profiled on {profile_db})")
        print(f"\ncode: {state}")
        if sources_digest() != digest:
            print(f"WARNING: the sources changed during the run, now: {code_state()}")
    finally:
        if pg:
            pg.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--import":
        import_runs(sys.argv[2:])
    elif len(sys.argv) >= 2 and sys.argv[1] == "--export":
        child = argparse.ArgumentParser()
        child.add_argument("run_id")
        child.add_argument("out")
        child.add_argument("--profile-out")
        child.add_argument("--level", type=int)
        a = child.parse_args(sys.argv[2:])
        export(a.run_id, a.out, a.profile_out, a.level)
    else:
        main()
