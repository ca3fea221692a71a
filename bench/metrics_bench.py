"""Benchmark of a run's metrics: 10,000 responses × 5 claims × 2 annotators.

    .venv/bin/python bench/metrics_bench.py            # N=10,000, 3 runs
    .venv/bin/python bench/metrics_bench.py --n 2000   # a smaller run
    .venv/bin/python bench/metrics_bench.py --db sqlite

A benchmark, not a test: it prints figures and asserts nothing about time.

It makes a scratch database, imports one synthetic run whose every claim has two
judgements (annotators `rater-1` and `rater-2`, `bundles.rated_bundle`), then
measures, median of the runs:
- `run_metrics` (every figure of metrics.md and the six pre-checks for every
  response) with the consensus source, which reads every verdict, and with one
  annotator; the queries it took (constant whatever N);
- the baseline in the same run: the queries `run_metrics` ran, replayed through the
  bare cursor, every row fetched and nothing done with it (the time the database and
  driver take alone);
- the dashboard page (`/p/bench/runs/RUN/figures/`), rendered in-process through
  Django's test client with a logged-in member, p50 of the runs.
"""

from __future__ import annotations

from bundles import project_with, rated_bundle, stored_project
from harness import (
    database_name,
    in_process_main,
    interleaved,
    lead_client,
    replayed,
    timed,
    versus_baseline,
)

NAME = "evidence_metrics_bench"
RUN_ID = "metrics-bench"


def measure(n: int, runs: int) -> None:
    from cards.annotators import Annotator
    from cards.metrics import Source, run_metrics
    from replay.models import Run

    project = stored_project(runs={RUN_ID: n})
    project = project or project_with(rated_bundle(run_id=RUN_ID, cases=n))
    run = Run.objects.get(run_id=RUN_ID)

    consensus = Source("consensus")
    # The floor: every query `run_metrics` runs, replayed through the bare cursor, each row
    # fetched and thrown away (an earlier baseline read five of its streams only).
    baseline = replayed(lambda: run_metrics(run=run, source=consensus))

    timers = interleaved(
        {
            "baseline": baseline,
            "consensus": lambda: run_metrics(run=run, source=consensus),
            "annotator": lambda: run_metrics(
                run=run, source=Source.of(Annotator("rater-1", imported=True))
            ),
        },
        runs,
        count_queries=True,
    )
    client = lead_client(project)

    def page() -> None:
        response = client.get(f"/p/bench/runs/{run.run_id}/figures/?source=consensus")
        if response.status_code != 200:
            raise RuntimeError(f"the dashboard answered {response.status_code}")

    timers["page"] = timed(page, runs)
    labels = {
        "baseline": "the same queries, rows fetched, no work (floor)",
        "consensus": "run_metrics, consensus",
        "annotator": "run_metrics, one annotator",
        "page": "dashboard page (in-process)",
    }
    print(f"\nN = {n:,} responses × 5 claims × 2 annotators, {database_name()}, median of {runs}")
    print(versus_baseline(timers, labels, baseline="baseline"))


if __name__ == "__main__":
    in_process_main(__doc__, NAME, measure)
