"""Benchmark of the audit export on PostgreSQL: its time, its peak RSS, and the zip floor.

    .venv/bin/python bench/export_bench.py                      # N=10,000 and 2,000, 3 runs
    .venv/bin/python bench/export_bench.py --n 1000 --small 200 --runs 1   # a quick look
    BENCH_DB=mine .venv/bin/python bench/export_bench.py        # another scratch database

A benchmark, not a test: it prints figures (medians, and ratios to a floor
measured in the same run) and asserts nothing about time or memory.

What happens:

1. A scratch PostgreSQL database is created (and dropped at the end), migrated,
   and two synthetic runs are imported with `ingest.services.bundle_import`:
   `big` with N reviewed cases and `small` with `--small` cases (default 2,000).
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
   the exporter's ZipInfo settings: deflate level 6, zip64; an unseekable output as
   the exporter's) while `hashlib` computes each member's SHA-256, reading each
   file in 64 KiB chunks. It is what any exporter of these bytes must pay.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
# The scratch database (created, then dropped): BENCH_DB names another, so that benches
# run side by side do not drop each other's.
NAME = os.environ.get("BENCH_DB", "evidence_export_bench")
PROJECT = "bench"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
CHUNK = 64 * 1024


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def environment() -> dict[str, str]:
    return os.environ | {
        "DATABASE_URL": f"{BASE}/{NAME}",
        "DEBUG": "0",
        "SECRET_KEY": "bench",
        "ALLOWED_HOSTS": "testserver",
        "STATIC_MANIFEST": "0",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }


def admin(statement: str) -> None:
    import psycopg

    with psycopg.connect(f"{BASE}/postgres", autocommit=True) as conn:
        conn.execute(statement)


def memory_kb(field_name: str) -> int:
    """VmRSS (now) or VmHWM (peak) of this process, in KiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field_name} in /proc/self/status")


# --- setup -------------------------------------------------------------------------------------


def bundle(run_id: str, cases: int, snapshot: str) -> bytes:
    sys.path.insert(0, str(ROOT))
    from tests.factories import synthetic_bundle

    lines = synthetic_bundle(
        run_id=run_id, cases=cases, passages=5, claims=5, revisions=2, snapshot=snapshot
    )
    return ("\n".join(json.dumps(line) for line in lines) + "\n").encode()


def setup(big: int, small: int) -> None:
    """Migrate the scratch database and import both runs (in a child: Django stays out of here)."""
    env = environment()
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v0"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"migrate failed:\n{done.stdout}\n{done.stderr}")
    done = subprocess.run(
        [sys.executable, __file__, "--import", str(big), str(small)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"import failed:\n{done.stdout}\n{done.stderr}")
    log(done.stdout.strip())


def import_runs(big: int, small: int) -> None:
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from evidence.services import project_create
    from ingest.services import bundle_import

    project_create(slug=PROJECT)
    for run_id, cases in (("big", big), ("small", small)):
        started = time.perf_counter()
        data = bundle(run_id, cases, f"{run_id}@1")
        bundle_import(stream=io.BytesIO(data), project_slug=PROJECT)
        seconds = time.perf_counter() - started
        print(f"setup: imported run {run_id}: {cases:,} cases in {seconds:.0f} s")


# --- the child: one export in its own process ---------------------------------------------------


def child(run_id: str, out: str) -> None:
    sys.path.insert(0, str(ROOT))
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
    print(
        json.dumps(
            {
                "seconds": seconds,
                "rss_before_kb": rss_before,
                "peak_rss_kb": memory_kb("VmHWM"),
                "package_id": printed.getvalue().strip(),
            }
        )
    )


def export(run_id: str, out: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", run_id, str(out)],
        cwd=ROOT, env=environment(), capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"export failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


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
            info.compress_level = 6
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="cases of the big run")
    parser.add_argument("--small", type=int, default=2_000, help="cases of the small run")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    admin(f'DROP DATABASE IF EXISTS "{NAME}" WITH (FORCE)')
    admin(f'CREATE DATABASE "{NAME}"')
    try:
        setup(args.n, args.small)
        with tempfile.TemporaryDirectory(prefix="export-bench-") as workdir:
            work = Path(workdir)
            figures: dict[str, dict[str, list]] = {}
            for run_id, cases in (("small", args.small), ("big", args.n)):
                figures[run_id] = {"export": [], "peak": [], "before": [], "floor": []}
                package = work / f"{run_id}.zip"
                ids = set()
                for attempt in range(args.runs):
                    result = export(run_id, package)
                    ids.add(result["package_id"])
                    figures[run_id]["export"].append(result["seconds"])
                    figures[run_id]["peak"].append(result["peak_rss_kb"] / 1024)
                    figures[run_id]["before"].append(result["rss_before_kb"] / 1024)
                    members = work / f"{run_id}-members"
                    if attempt == 0:
                        members.mkdir()
                        files = extract(package, members)
                    figures[run_id]["floor"].append(floor(files, work / "floor.zip"))
                    log(
                        f"{run_id} run {attempt + 1}: export {result['seconds']:.2f} s, "
                        f"peak {result['peak_rss_kb'] / 1024:.0f} MiB, "
                        f"floor {figures[run_id]['floor'][-1]:.2f} s"
                    )
                if len(ids) != 1:
                    log(f"warning: {run_id} exported to different package ids: {sorted(ids)}")
                size = package.stat().st_size / 1e6
                unpacked = sum(path.stat().st_size for _, path in files) / 1e6
                figures[run_id]["sizes"] = [size, unpacked]
                figures[run_id]["cases"] = [cases]

        print(f"\nAudit export on PostgreSQL, median of {args.runs} runs (one process per export)")
        print("each case: 5 passages, 1 response, 5 claims × (1 claim + 2 verdict revisions)\n")
        header = (
            f"{'run':<7}{'cases':>8}{'zip MB':>8}{'data MB':>9}{'export s':>10}{'floor s':>9}"
            f"{'× floor':>9}{'RSS before':>12}{'peak RSS':>10}{'growth':>8}"
        )
        print(header)
        for run_id in ("small", "big"):
            f = figures[run_id]
            seconds, base = statistics.median(f["export"]), statistics.median(f["floor"])
            before, peak = statistics.median(f["before"]), statistics.median(f["peak"])
            print(
                f"{run_id:<7}{f['cases'][0]:>8,}{f['sizes'][0]:>8.1f}{f['sizes'][1]:>9.1f}"
                f"{seconds:>10.2f}{base:>9.2f}{seconds / base:>9.2f}"
                f"{before:>9.0f} MiB{peak:>6.0f} MiB{peak - before:>5.0f} MiB"
            )
        small, big = figures["small"], figures["big"]
        growth_small = statistics.median(small["peak"]) - statistics.median(small["before"])
        growth_big = statistics.median(big["peak"]) - statistics.median(big["before"])
        print(
            f"\npeak RSS growth during the export, {args.n:,} vs {args.small:,} cases: "
            f"{growth_big:.0f} vs {growth_small:.0f} MiB "
            f"({growth_big / max(growth_small, 1):.1f}× for {args.n / args.small:.0f}× the cases)"
        )
    finally:
        admin(f'DROP DATABASE IF EXISTS "{NAME}" WITH (FORCE)')


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 2 and sys.argv[1] == "--import":
        import_runs(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
