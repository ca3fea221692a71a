"""Benchmark of a run's metrics: 10,000 responses × 5 claims × 2 annotators on PostgreSQL.

    .venv/bin/python bench/metrics_bench.py            # N=10,000, 3 runs
    .venv/bin/python bench/metrics_bench.py --n 2000   # a smaller run

A benchmark, not a test: it prints figures and asserts nothing about time.

It makes a scratch database, imports one synthetic run whose every claim has two
judgements (annotators `rater-1` and `rater-2`, `bundles.rated_bundle`), then
measures, median of the runs:
- `run_metrics` (every figure of metrics.md and the six pre-checks for every
  response) with the consensus source, which reads every verdict, and with one
  annotator; the queries it took (constant whatever N);
- the baseline in the same run: reading the same rows with the same queries and
  doing nothing with them (the time the database and driver take alone);
- the dashboard page (`/p/bench/runs/RUN/figures/`), rendered in-process through
  Django's test client with a logged-in member, p50 of the runs.
"""

from __future__ import annotations

from bundles import project_with, rated_bundle
from harness import in_process_main, interleaved, lead_client, timed, versus_baseline

NAME = "evidence_metrics_bench"
RUN_ID = "metrics-bench"


def measure(n: int, runs: int) -> None:
    from cards.annotators import Annotator
    from cards.metrics import Source, run_metrics
    from cards.models import ClaimRevision, VerdictRevision
    from replay.models import Citation, Response, Retrieval, Run

    project = project_with(rated_bundle(run_id=RUN_ID, cases=n))
    run = Run.objects.get(run_id=RUN_ID)

    def baseline() -> None:
        # The same five streams, read and thrown away: the database and driver alone.
        for rows in (
            Response.objects.filter(run=run).values_list(
                "pk", "text", "expectation__required_facts"
            ),
            Retrieval.objects.filter(response__run=run).values_list("response_id", "passage_id"),
            Citation.objects.filter(response__run=run).values_list("response_id", "passage_id"),
            ClaimRevision.objects.filter(claim__response__run=run).values_list(
                "claim_id", "text", "citations"
            ),
            VerdictRevision.objects.filter(claim__response__run=run).values_list(
                "claim_id", "support", "citation_relevance"
            ),
        ):
            for _ in rows.iterator(chunk_size=2000):
                pass

    timers = interleaved(
        {
            "baseline": baseline,
            "consensus": lambda: run_metrics(run=run, source=Source("consensus")),
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
        "baseline": "read the same rows, no work",
        "consensus": "run_metrics, consensus",
        "annotator": "run_metrics, one annotator",
        "page": "dashboard page (in-process)",
    }
    print(f"\nN = {n:,} responses × 5 claims × 2 annotators, PostgreSQL, median of {runs}")
    print(versus_baseline(timers, labels, baseline="baseline"))


if __name__ == "__main__":
    in_process_main(__doc__, NAME, measure)
