"""Benchmark of comparing two runs of the same 10,000 cases.

    .venv/bin/python bench/compare_bench.py                  # N=10,000, 3 runs, PostgreSQL
    .venv/bin/python bench/compare_bench.py --n 2000 --db sqlite

A benchmark, not a test: it prints figures and asserts nothing about time.

It imports two runs of N cases × 5 claims × 2 annotators (`bundles.rated_bundle`)
into a scratch database, the second in another snapshot with identical evidence
(so every ref is checked across snapshots), then measures, median of the runs,
wall and CPU time of this process:
- `compare_runs` and its JSON (consensus verdicts, computed from every revision and
  verdict), with the queries it took;
- `compare_runs` and its JSON for the default source, which reads the stored figures,
  and the same comparison computed from every revision and verdict (`computed_comparison`,
  what the default source did before, and still the reference);
- baselines in the same run: the queries of each `compare_runs`, replayed through
  the bare cursor with every row fetched and nothing done with it (the floors), and
  `run_metrics` of both runs (what the comparison cost before it read its own rows);
- the side-by-side page (20 pairs per page), rendered in-process through Django's
  test client, in the order a person meets it: the first view after the runs'
  state changed with nothing kept (the cache emptied, as in a new process: the page
  shows its pairs and loads its summary after), the summary it loads (HTMX: this is
  where the runs are compared), then a page not shown yet, the same page again, and
  the first view of a filter (`show=regressions`); the first view and the summary for
  the default source, and its first view after a real write (a review mark: what was
  read in the state before is still kept, as in a running server); and the case page
  of one case, for scale.
"""

from __future__ import annotations

import json

from bundles import project_with, rated_bundle, stored_project
from harness import Timer, database_name, in_process_main, lead_client, replayed, table

NAME = "evidence_compare_bench"
RUN_A, RUN_B = "compare-bench-1", "compare-bench-2"


def measure(n: int, runs: int) -> None:
    from django.core.cache import cache

    from cards.metrics import Source, run_metrics
    from compare.comparison import compare_runs, computed_comparison
    from replay.models import Run

    project = stored_project(runs={RUN_A: n, RUN_B: n}) or project_with(
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

    def stored_json() -> None:
        json.dumps(compare_runs(run_a=run_a, run_b=run_b, source=Source()).as_json())

    def computed_json() -> None:
        comparison = computed_comparison(run_a=run_a, run_b=run_b, source=Source())
        json.dumps(comparison.as_json())

    def page(source: str = "consensus", *, summary: bool = False, **query: str):
        path = "/p/bench/compare/summary/" if summary else "/p/bench/compare/"
        url = f"{path}?a={RUN_A}&b={RUN_B}&source={source}"
        url += "".join(f"&{key}={value}" for key, value in query.items())
        return page_of(client, url, htmx=summary)

    pages = -(-n // 20)  # 20 pairs per page
    middle = str(max(pages // 2, min(pages, 2)))  # a page in the middle, not the first
    figures = {
        "floor": replayed(compare_json),
        "baseline": baseline,
        "compare": compare_json,
        "stored_floor": replayed(stored_json),
        "stored": stored_json,
        "computed": computed_json,
        "first": page(),
        "summary": page(summary=True),
        "another": page(page=middle),
        "again": page(),
        "filter": page(show="regressions"),
        "first_default": page("default"),
        "saved_default": page("default"),
        "summary_default": page("default", summary=True),
        "case": page_of(client, f"/p/bench/runs/{RUN_A}/cases/case-0/"),
    }
    timers = {name: Timer() for name in figures}
    from django.contrib.auth.models import User

    from cards.services.reviews import response_mark_complete
    from replay.models import Response

    lead = User.objects.get(username="bench-lead")
    marked = Response.objects.filter(run=run_b).order_by("pk").first()
    for _ in range(runs):  # each figure once per round: a slow spell hits all alike
        for name, fn in figures.items():
            if name in ("first", "first_default"):
                cache.clear()  # nothing kept: a new process, or the cache's hour over
            if name == "saved_default":
                # A real write: a new state, with what was read in the last one still kept.
                response_mark_complete(response=marked, author=lead)
            timers[name].time(fn, count_queries=True)
    labels = {
        "floor": "the same queries, rows fetched, no work (floor)",
        "baseline": "run_metrics of both runs (baseline)",
        "compare": "compare_runs + JSON",
        "stored_floor": "default source: its queries, rows fetched, no work (floor)",
        "stored": "default source: compare_runs + JSON (stored figures)",
        "computed": "default source: computed_comparison + JSON (before)",
        "first": "page 1, first view after a change (nothing cached)",
        "summary": "its summary, loaded after it (compares the runs)",
        "another": f"page {middle}, not shown before",
        "again": "page 1 again",
        "filter": "regressions only, first view of the filter",
        "first_default": "default source: page 1, first view after a change",
        "summary_default": "default source: its summary, loaded after it",
        "saved_default": "default source: page 1, first view after a review mark",
        "case": "case page, for scale",
    }
    # The default source's rows against its own floor (it reads other rows), the rest
    # against the computed comparison's.
    floor_of = {
        name: timers["stored_floor" if name in ("stored", "stored_floor") else "floor"].median
        for name in timers
    }
    print(f"\nN = {n:,} cases in each run, {database_name()}, median of {runs}")
    print(
        table(
            ["what", "seconds", "cpu s", "queries", "× floor"],
            [
                [
                    labels[name],
                    f"{timer.median:.3f}",
                    f"{timer.cpu_median:.3f}",
                    timer.queries,
                    f"{timer.median / floor_of[name]:.1f}",
                ]
                for name, timer in timers.items()
            ],
        )
    )


def page_of(client, url: str, *, htmx: bool = False):
    """A GET of `url` that must answer 200 (as HTMX asks, with `htmx`)."""
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}

    def get() -> None:
        response = client.get(url, **headers)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")

    return get


if __name__ == "__main__":
    in_process_main(__doc__, NAME, measure)
