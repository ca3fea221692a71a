"""Benchmark of comparing two runs of the same 10,000 cases on PostgreSQL.

    .venv/bin/python bench/compare_bench.py            # N=10,000, 3 runs
    .venv/bin/python bench/compare_bench.py --n 2000

A benchmark, not a test: it prints figures and asserts nothing about time.

It imports two runs of N cases × 5 claims × 2 annotators (`bundles.rated_bundle`)
into a scratch database, the second in another snapshot with identical evidence
(so every ref is checked across snapshots), then measures, median of the runs:
- `compare_runs` and its JSON (consensus verdicts), with the queries it took;
- the baseline in the same run: `run_metrics` of both runs, which a comparison
  must compute anyway;
- the side-by-side page (20 pairs per page), and the case page of one case for
  scale, rendered in-process through Django's test client.
"""

from __future__ import annotations

import json

from bundles import project_with, rated_bundle
from harness import in_process_main, interleaved, lead_client, versus_baseline

NAME = "evidence_compare_bench"
RUN_A, RUN_B = "compare-bench-1", "compare-bench-2"


def measure(n: int, runs: int) -> None:
    from cards.metrics import Source, run_metrics
    from compare.comparison import compare_runs
    from replay.models import Run

    project = project_with(
        rated_bundle(run_id=RUN_A, cases=n, snapshot="synthetic@1"),
        rated_bundle(run_id=RUN_B, cases=n, snapshot="synthetic@2"),
    )
    stored = Run.objects.select_related("snapshot")
    run_a, run_b = stored.get(run_id=RUN_A), stored.get(run_id=RUN_B)
    source = Source("consensus")
    client = lead_client(project)

    def baseline() -> None:
        run_metrics(run=run_a, source=source)
        run_metrics(run=run_b, source=source)

    def compare_json() -> None:
        json.dumps(compare_runs(run_a=run_a, run_b=run_b, source=source).as_json())

    def page(url: str):
        def get() -> None:
            response = client.get(url)
            if response.status_code != 200:
                raise RuntimeError(f"{url} answered {response.status_code}")

        return get

    timers = interleaved(
        {
            "baseline": baseline,
            "compare": compare_json,
            "page": page(f"/p/bench/compare/?a={RUN_A}&b={RUN_B}&source=consensus"),
            "case": page(f"/p/bench/runs/{RUN_A}/cases/case-0/"),
        },
        runs,
        count_queries=True,
    )
    labels = {
        "baseline": "run_metrics of both runs (baseline)",
        "compare": "compare_runs + JSON",
        "page": "side-by-side page, 20 pairs (in-process)",
        "case": "case page, for scale (in-process)",
    }
    print(f"\nN = {n:,} cases in each run, PostgreSQL, median of {runs}")
    print(versus_baseline(timers, labels, baseline="baseline"))


if __name__ == "__main__":
    in_process_main(__doc__, NAME, measure)
