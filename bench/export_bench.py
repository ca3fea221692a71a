"""Benchmark of the audit export on PostgreSQL: its time, its peak RSS, and the zip floor.

    .venv/bin/python bench/export_bench.py                      # N=10,000 and 2,000, 3 runs
    .venv/bin/python bench/export_bench.py --n 1000 --small 200 --runs 1   # a quick look

A benchmark, not a test: it prints figures (medians, and ratios to a floor
measured in the same run) and asserts nothing about time or memory.

What happens:

1. A scratch PostgreSQL database is created (and dropped at the end), migrated,
   and two synthetic runs (`bundles.rated_bundle`) are imported with
   `ingest.services.bundle_import`: `big` with N reviewed cases and `small`
   with `--small` cases (default 2,000).
   Each case has 5 passages, a response citing one of them, 5 claims and 2
   judgements per claim: a chain of 3 revisions per claim.
2. Each export runs `export_audit --project bench --run RUN --out FILE` in a
   child process of its own (`--child`), which reports the wall time of the
   command and its peak RSS: `VmHWM` of /proc/self/status, read after the
   export, and the RSS it had before it (Django loaded, connected). A flat
   export has the same peak for `small` and `big`.
3. The floor, in this process and the same run: the members of the package
   the export produced are extracted to a temporary directory (not timed),
   then written into a new zip with the standard library alone (`zipfile`,
   deflate level 6, the exporter's ZipInfo settings, an unseekable output as
   the exporter's) while `hashlib` computes each member's SHA-256, reading each
   file in 64 KiB chunks. It is what any exporter of these bytes must pay.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from bundles import project_with, rated_bundle
from harness import (
    Postgres,
    code_state,
    django_env,
    log,
    memory_kb,
    migrate,
    report_to_parent,
    run_child,
    table,
)

# The scratch database (created, then dropped): BENCH_DB names another, so that benches
# run side by side do not drop each other's.
NAME = os.environ.get("BENCH_DB", "evidence_export_bench")
PROJECT = "bench"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
CHUNK = 64 * 1024


# --- the children: the import, and one export each ---------------------------------------------


def import_runs(big: int, small: int) -> None:
    """Import both runs (in a child: Django stays out of the parent)."""
    import django

    django.setup()
    started = time.perf_counter()
    project_with(
        rated_bundle(run_id="big", cases=big, snapshot="big@1"),
        rated_bundle(run_id="small", cases=small, snapshot="small@1"),
        slug=PROJECT,
    )
    report_to_parent({"seconds": time.perf_counter() - started})


def child(run_id: str, out: str) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    connection.ensure_connection()
    rss_before = memory_kb("VmRSS")
    printed = io.StringIO()
    started = time.perf_counter()
    call_command(
        "export_audit", "--project", PROJECT, "--run", run_id, "--out", out, stdout=printed
    )
    seconds = time.perf_counter() - started
    report_to_parent(
        {
            "seconds": seconds,
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
    files = []
    with zipfile.ZipFile(package) as archive:
        for number, info in enumerate(archive.infolist()):
            path = folder / f"{number:03d}"
            with archive.open(info) as source, path.open("wb") as target:
                while chunk := source.read(CHUNK):
                    target.write(chunk)
            files.append((info.filename, path))
    return files


def floor(files: list[tuple[str, Path]], out: Path) -> float:
    started = time.perf_counter()
    digests = []
    with (
        out.open("wb") as raw,
        zipfile.ZipFile(Unseekable(raw), "w") as archive,
    ):
        for name, path in files:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.compress_level = 6  # as the exporter: on the ZipInfo, where Python reads it
            info.create_system = 3
            info.external_attr = 0o644 << 16
            digest = hashlib.sha256()
            with path.open("rb") as source, archive.open(info, "w", force_zip64=True) as target:
                while chunk := source.read(CHUNK):
                    digest.update(chunk)
                    target.write(chunk)
            digests.append(digest.hexdigest())
    return time.perf_counter() - started


# --- the report ---------------------------------------------------------------------------------


def measure(env: dict[str, str], run_id: str, work: Path, runs: int) -> dict[str, list]:
    figures: dict[str, list] = {"export": [], "peak": [], "before": [], "floor": []}
    package = work / f"{run_id}.zip"
    ids = set()
    for attempt in range(runs):
        result = run_child(__file__, "--child", run_id, str(package), env=env)
        ids.add(result["package_id"])
        figures["export"].append(result["seconds"])
        figures["peak"].append(result["peak_rss_kb"] / 1024)
        figures["before"].append(result["rss_before_kb"] / 1024)
        members = work / f"{run_id}-members"
        if attempt == 0:
            members.mkdir()
            files = extract(package, members)
        figures["floor"].append(floor(files, work / "floor.zip"))
        log(
            f"{run_id} run {attempt + 1}: export {result['seconds']:.2f} s, "
            f"peak {result['peak_rss_kb'] / 1024:.0f} MiB, floor {figures['floor'][-1]:.2f} s"
        )
    if len(ids) != 1:
        log(f"warning: {run_id} exported to different package ids: {sorted(ids)}")
    unpacked = sum(path.stat().st_size for _, path in files) / 1e6
    figures["sizes"] = [package.stat().st_size / 1e6, unpacked]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="cases of the big run")
    parser.add_argument("--small", type=int, default=2_000, help="cases of the small run")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    log(f"code: {code_state()}")
    pg = Postgres()
    try:
        with pg.scratch(NAME) as url, tempfile.TemporaryDirectory(prefix="export-bench-") as tmp:
            # The scratch database's anchors go with it: var/anchors would refuse the next run's.
            env = django_env(url, AUDIT_ANCHOR_DIR=str(Path(tmp) / "anchors"))
            migrate(url)
            imported = run_child(__file__, "--import", str(args.n), str(args.small), env=env)
            log(f"setup: imported both runs in {imported['seconds']:.0f} s")
            figures = {
                run_id: measure(env, run_id, Path(tmp), args.runs) for run_id in ("small", "big")
            }
    finally:
        pg.close()

    print(f"\nAudit export on PostgreSQL, median of {args.runs} runs (one process per export)")
    print("each case: 5 passages, 1 response, 5 claims × (1 claim + 2 verdict revisions)\n")
    rows = []
    growth = {}
    for run_id, cases in (("small", args.small), ("big", args.n)):
        f = figures[run_id]
        seconds, base = statistics.median(f["export"]), statistics.median(f["floor"])
        before, peak = statistics.median(f["before"]), statistics.median(f["peak"])
        growth[run_id] = peak - before
        rows.append(
            [
                run_id, f"{cases:,}", f"{f['sizes'][0]:.1f}", f"{f['sizes'][1]:.1f}",
                f"{seconds:.2f}", f"{base:.2f}", f"{seconds / base:.2f}", f"{before:.0f}",
                f"{peak:.0f}", f"{peak - before:.0f}",
            ]
        )  # fmt: skip
    header = [
        "run", "cases", "zip MB", "data MB", "export s", "floor s", "× floor",
        "RSS before MiB", "peak RSS MiB", "growth MiB",
    ]  # fmt: skip
    print(table(header, rows))
    ratio = growth["big"] / max(growth["small"], 1)
    print(
        f"\npeak RSS growth during the export, {args.n:,} vs {args.small:,} cases: "
        f"{growth['big']:.0f} vs {growth['small']:.0f} MiB "
        f"({ratio:.1f}× for {args.n / args.small:.0f}× the cases)"
    )


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 2 and sys.argv[1] == "--import":
        import_runs(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
