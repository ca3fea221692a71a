"""Benchmark of comparing two runs of the same 10,000 cases on PostgreSQL.

    .venv/bin/python bench/compare_bench.py            # N=10,000, 3 runs
    .venv/bin/python bench/compare_bench.py --n 2000

A benchmark, not a test: it prints figures and asserts nothing about time.

It imports two runs of N cases × 5 claims × 2 annotators into a scratch
database, the second in another snapshot with identical evidence (so every ref
is checked across snapshots), then measures, median of the runs:
- `compare_runs` and its JSON (consensus verdicts), with the queries it took;
- the baseline in the same run: `run_metrics` of both runs, which a comparison
  must compute anyway;
- the side-by-side page (20 pairs per page), and the case page of one case for
  scale, rendered in-process through Django's test client.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
NAME = "evidence_compare_bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    from metrics_bench import admin, bundle

    admin(f'DROP DATABASE IF EXISTS "{NAME}" WITH (FORCE)')
    admin(f'CREATE DATABASE "{NAME}"')
    os.environ.update(
        DATABASE_URL=f"{BASE}/{NAME}", DEBUG="0", SECRET_KEY="bench",
        ALLOWED_HOSTS="testserver", STATIC_MANIFEST="0",
        DJANGO_SETTINGS_MODULE="config.settings",
    )  # fmt: skip
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from cards.metrics import Source, run_metrics
    from compare.comparison import compare_runs
    from evidence.models import Role
    from evidence.services import membership_set, project_create
    from ingest.services import bundle_import
    from replay.models import Run

    try:
        call_command("migrate", verbosity=0)
        project = project_create(slug="bench")
        started = time.perf_counter()
        data = bundle(args.n).decode()
        second = data.replace('"metrics-bench"', '"metrics-bench-2"', 1).replace(
            '"synthetic@1"', '"synthetic@2"', 1
        )
        bundle_import(stream=io.BytesIO(data.encode()), project_slug="bench")
        bundle_import(stream=io.BytesIO(second.encode()), project_slug="bench")
        print(f"setup: imported 2 × {args.n:,} responses in {time.perf_counter() - started:.1f} s")
        runs = Run.objects.select_related("snapshot")
        run_a, run_b = runs.get(run_id="metrics-bench"), runs.get(run_id="metrics-bench-2")
        user = User.objects.create_user("bench", password="bench-password")
        membership_set(project=project, user=user, role=Role.LEAD)
        source = Source("consensus")

        def timed(fn) -> tuple[float, int]:
            with CaptureQueriesContext(connection) as queries:
                t0 = time.perf_counter()
                fn()
                return time.perf_counter() - t0, len(queries.captured_queries)

        def baseline() -> None:
            run_metrics(run=run_a, source=source)
            run_metrics(run=run_b, source=source)

        def compare_json() -> None:
            json.dumps(compare_runs(run_a=run_a, run_b=run_b, source=source).as_json())

        client = Client()
        client.force_login(user)

        def page(url: str):
            def get() -> None:
                assert client.get(url).status_code == 200

            return get

        compare_url = f"/p/bench/compare/?a={run_a.run_id}&b={run_b.run_id}&source=consensus"
        case_url = f"/p/bench/runs/{run_a.run_id}/cases/case-0/"
        results: dict[str, list[tuple[float, int]]] = {
            "baseline": [], "compare": [], "page": [], "case": []
        }  # fmt: skip
        for _ in range(args.runs):
            results["baseline"].append(timed(baseline))
            results["compare"].append(timed(compare_json))
            results["page"].append(timed(page(compare_url)))
            results["case"].append(timed(page(case_url)))
        if results["compare"][0][1] != results["compare"][-1][1]:
            print("note: the query count changed between runs")

        base = statistics.median(t for t, _ in results["baseline"])
        print(f"\nN = {args.n:,} cases in each run, PostgreSQL, median of {args.runs}")
        print(f"{'what':<44}{'seconds':>9}{'queries':>9}{'× baseline':>12}")
        labels = {
            "baseline": "run_metrics of both runs (baseline)",
            "compare": "compare_runs + JSON",
            "page": "side-by-side page, 20 pairs (in-process)",
            "case": "case page, for scale (in-process)",
        }
        for name, label in labels.items():
            seconds = statistics.median(t for t, _ in results[name])
            queries = results[name][0][1]
            print(f"{label:<44}{seconds:>9.3f}{queries:>9}{seconds / base:>12.2f}")
    finally:
        connection.close()
        admin(f'DROP DATABASE IF EXISTS "{NAME}" WITH (FORCE)')


if __name__ == "__main__":
    main()
