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
  Django's test client with a logged-in member, p50 of the runs, with the consensus
  source and the default one: with the cache as a view leaves it, and after the cache
  is emptied (a new state of the run: everything the page keeps computed again), and,
  for the default source, after a real write (a review mark: the state before kept); its
  agreement panel (`figures/agreement/`, loaded by htmx after the page) computed (cache
  emptied first) and kept;
- the default source (issue 12): `streamed_run_metrics`, computed from the revisions
  (the reference, and what `run_metrics` did before), against `stored_run_figures`
  read from the stored rows (what `run_metrics` does now), for the totals with one
  page of 50 responses and for every response, and the bare replay of the former's
  queries (its floor). The bundle's judgements are imported ones, which the
  default source does not count, so before measuring, the stored claim rows are given a
  mix of labels (a quarter each, by claim id) with one UPDATE: the stored read then
  does the work of a reviewed run (its facts joined for coverage); the streamed
  reference reads every revision whatever their labels.
"""

from __future__ import annotations

from bundles import project_with, rated_bundle, stored_project
from harness import (
    Timer,
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
    from django.core.cache import cache
    from django.db import connection

    from cards.annotators import Annotator
    from cards.metrics import Source, run_metrics, stored_run_figures, streamed_run_metrics
    from replay.models import Run

    project = stored_project(runs={RUN_ID: n})
    project = project or project_with(rated_bundle(run_id=RUN_ID, cases=n))
    run = Run.objects.get(run_id=RUN_ID)

    consensus = Source("consensus")
    # The floor: every query `run_metrics` runs, replayed through the bare cursor, each row
    # fetched and thrown away (an earlier baseline read five of its streams only).
    baseline = replayed(lambda: run_metrics(run=run, source=consensus))

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE cards_claimtally SET support = CASE claim_id % 4 WHEN 0 THEN 'supported' "
            "WHEN 1 THEN 'partial' WHEN 2 THEN 'unsupported' ELSE 'not_assessable' END"
        )

    def stored_page() -> None:
        figures = stored_run_figures(run=run)
        figures.per_response[:50]

    def stored_all() -> None:
        list(stored_run_figures(run=run).per_response)

    stored_floor = replayed(stored_page)
    timers = interleaved(
        {
            "baseline": baseline,
            "consensus": lambda: run_metrics(run=run, source=consensus),
            "annotator": lambda: run_metrics(
                run=run, source=Source.of(Annotator("rater-1", imported=True))
            ),
            "default": lambda: streamed_run_metrics(run=run, source=Source()),
            "stored_floor": stored_floor,
            "stored_page": stored_page,
            "stored": stored_all,
        },
        runs,
        count_queries=True,
    )
    client = lead_client(project)

    def page() -> None:
        response = client.get(f"/p/bench/runs/{run.run_id}/figures/?source=consensus")
        if response.status_code != 200:
            raise RuntimeError(f"the dashboard answered {response.status_code}")

    def page_new_state() -> None:
        cache.clear()
        page()

    timers["page_new"] = timed(page_new_state, runs)
    timers["page"] = timed(page, runs)

    def default_page() -> None:
        response = client.get(f"/p/bench/runs/{run.run_id}/figures/")
        if response.status_code != 200:
            raise RuntimeError(f"the dashboard answered {response.status_code}")

    timers["default_page"] = timed(default_page, runs)

    def default_page_new_state() -> None:
        cache.clear()
        default_page()

    timers["default_page_new"] = timed(default_page_new_state, runs)
    from django.contrib.auth.models import User

    from cards.services.reviews import response_mark_complete
    from replay.models import Response

    lead = User.objects.get(username="bench-lead")
    marked = Response.objects.filter(run=run).order_by("pk").first()
    written = Timer()
    for _ in range(runs):
        default_page()  # what the state before keeps is kept, as in a running server
        response_mark_complete(response=marked, author=lead)  # a real write: a new state
        written.time(default_page, count_queries=True)
    timers["default_page_written"] = written

    def agreement() -> None:
        response = client.get(
            f"/p/bench/runs/{run.run_id}/figures/agreement/", headers={"HX-Request": "true"}
        )
        if response.status_code != 200:
            raise RuntimeError(f"the agreement panel answered {response.status_code}")

    def agreement_new_state() -> None:
        cache.clear()
        agreement()

    timers["agreement_new"] = timed(agreement_new_state, runs)
    timers["agreement"] = timed(agreement, runs)
    labels = {
        "baseline": "the same queries, rows fetched, no work (floor)",
        "consensus": "run_metrics, consensus",
        "annotator": "run_metrics, one annotator",
        "default": "run_metrics, default source (streamed: the reference)",
        "stored_floor": "stored figures, totals + 50: the same queries, no work (floor)",
        "stored_page": "stored figures, default source: totals + 50 responses",
        "stored": "stored figures, default source: totals + every response",
        "page_new": "dashboard page, consensus, new state (in-process)",
        "page": "dashboard page, consensus, kept (in-process)",
        "default_page": "dashboard page, default source (in-process)",
        "default_page_new": "dashboard page, default source, new state (in-process)",
        "default_page_written": "dashboard page, default source, after a review mark",
        "agreement_new": "agreement panel, new state: computed (in-process)",
        "agreement": "agreement panel, kept (in-process)",
    }
    print(f"\nN = {n:,} responses × 5 claims × 2 annotators, {database_name()}, median of {runs}")
    print(versus_baseline(timers, labels, baseline="baseline"))


if __name__ == "__main__":
    in_process_main(__doc__, NAME, measure)
