"""Benchmark of a run's metrics: 10,000 responses × 5 claims × 2 annotators on PostgreSQL.

    .venv/bin/python bench/metrics_bench.py            # N=10,000, 3 runs
    .venv/bin/python bench/metrics_bench.py --n 2000   # a smaller run

A benchmark, not a test: it prints figures and asserts nothing about time.

It makes a scratch database, imports one synthetic run whose every claim has two
judgements (annotators `rater-1` and `rater-2`), then measures, median of the runs:
- `run_metrics` (every figure of metrics.md and the six pre-checks for every
  response) with the consensus source, which reads every verdict, and with one
  annotator; the queries it took (constant whatever N);
- the baseline in the same run: reading the same rows with the same queries and
  doing nothing with them (the time the database and driver take alone);
- the dashboard page (`/p/bench/runs/RUN/figures/`), rendered in-process through
  Django's test client with a logged-in member, p50 of the runs.
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
NAME = "evidence_metrics_bench"


def bundle(n: int) -> bytes:
    from tests.factories import synthetic_bundle

    lines = synthetic_bundle(run_id="metrics-bench", cases=n, passages=5, claims=5, revisions=2)
    for line in lines:
        for claim in line.get("claims", ()):
            labels = (
                ("supported", "partial")
                if hash(claim["claim_id"] + line["case_id"]) % 4 == 0
                else ("supported", "supported")
            )
            for judgement, annotator, label in zip(
                claim["judgements"], ("rater-1", "rater-2"), labels, strict=True
            ):
                judgement["annotator"] = annotator
                judgement["support"] = label
    return ("\n".join(json.dumps(line) for line in lines) + "\n").encode()


def admin(statement: str) -> None:
    import psycopg

    with psycopg.connect(f"{BASE}/postgres", autocommit=True) as conn:
        conn.execute(statement)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    admin(f'DROP DATABASE IF EXISTS "{NAME}" WITH (FORCE)')
    admin(f'CREATE DATABASE "{NAME}"')
    os.environ.update(
        DATABASE_URL=f"{BASE}/{NAME}",
        DEBUG="0",
        SECRET_KEY="bench",
        ALLOWED_HOSTS="testserver",
        STATIC_MANIFEST="0",
    )
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from cards.annotators import Annotator
    from cards.metrics import Source, run_metrics
    from evidence.models import Role
    from evidence.services import membership_set, project_create
    from ingest.services import bundle_import
    from replay.models import Run

    try:
        call_command("migrate", verbosity=0)
        project = project_create(slug="bench")
        started = time.perf_counter()
        bundle_import(stream=io.BytesIO(bundle(args.n)), project_slug="bench")
        print(f"setup: imported {args.n:,} responses in {time.perf_counter() - started:.1f} s")
        run = Run.objects.get(run_id="metrics-bench")
        user = User.objects.create_user("bench", password="bench-password")
        membership_set(project=project, user=user, role=Role.LEAD)

        def timed(fn) -> tuple[float, int]:
            with CaptureQueriesContext(connection) as queries:
                t0 = time.perf_counter()
                fn()
                return time.perf_counter() - t0, len(queries.captured_queries)

        def baseline() -> None:
            # The same five streams, read and thrown away: the database and driver alone.
            from cards.models import ClaimRevision, VerdictRevision
            from replay.models import Citation, Response, Retrieval

            for qs in (
                Response.objects.filter(run=run).values_list(
                    "pk", "text", "expectation__required_facts"
                ),
                Retrieval.objects.filter(response__run=run).values_list(
                    "response_id", "passage_id"
                ),
                Citation.objects.filter(response__run=run).values_list(
                    "response_id", "passage_id"
                ),
                ClaimRevision.objects.filter(claim__response__run=run).values_list(
                    "claim_id", "text", "citations"
                ),
                VerdictRevision.objects.filter(claim__response__run=run).values_list(
                    "claim_id", "support", "citation_relevance"
                ),
            ):
                for _ in qs.iterator(chunk_size=2000):
                    pass

        results: dict[str, list[tuple[float, int]]] = {
            "baseline": [],
            "consensus": [],
            "annotator": [],
        }
        rater = Source.of(Annotator("rater-1", imported=True))
        for _ in range(args.runs):
            results["baseline"].append(timed(baseline))
            results["consensus"].append(
                timed(lambda: run_metrics(run=run, source=Source("consensus")))
            )
            results["annotator"].append(timed(lambda: run_metrics(run=run, source=rater)))
        client = Client()
        client.force_login(user)
        page = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            response = client.get(f"/p/bench/runs/{run.run_id}/figures/?source=consensus")
            page.append(time.perf_counter() - t0)
            assert response.status_code == 200, response.status_code

        base = statistics.median(t for t, _ in results["baseline"])
        print(
            f"\nN = {args.n:,} responses × 5 claims × 2 annotators, PostgreSQL, "
            f"median of {args.runs}"
        )
        print(f"{'what':<34}{'seconds':>9}{'queries':>9}{'× baseline':>12}")
        for name, label in (
            ("baseline", "read the same rows, no work"),
            ("consensus", "run_metrics, consensus"),
            ("annotator", "run_metrics, one annotator"),
        ):
            seconds = statistics.median(t for t, _ in results[name])
            queries = results[name][0][1]
            print(f"{label:<34}{seconds:>9.2f}{queries:>9}{seconds / base:>12.1f}")
        print(f"{'dashboard page (in-process) p50':<34}{statistics.median(page):>9.2f}")
    finally:
        connection.close()
        admin(f'DROP DATABASE IF EXISTS "{NAME}" WITH (FORCE)')


if __name__ == "__main__":
    main()
