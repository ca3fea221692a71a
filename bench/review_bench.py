"""Benchmark of the case review page and the verdict save, against a floor page.

    .venv/bin/python bench/review_bench.py                 # 3 repetitions of 5 s per figure
    .venv/bin/python bench/review_bench.py --profile       # also cProfile both views in-process
    .venv/bin/python bench/review_bench.py --worker-class sync --workers 3

A benchmark, not a test: it prints figures (medians of repetitions, and ratios
to a floor measured in the same run) and asserts nothing about time.

What it does:

1. Makes a scratch PostgreSQL database (`evidence_review_bench`, or
   $REVIEW_BENCH_DB), migrates it and imports `bundles.review_bundle()`: one
   case with 20 passages of 2,048 characters, an answer of 30 cited sentences
   and 30 claims, each cited to one passage and judged by 5 annotators (so 30
   claims × (1 claim revision + 5 verdict revisions)). Eight reviewers, two
   leads (and one warm-up user) become members of the project and log in over
   HTTP; their session and CSRF cookies are what the load clients send.
2. Serves the project with gunicorn (2 gthread workers of 4 threads, keeping
   connections alive; `config.wsgi:application`, DEBUG=0, manifest static files
   collected into a temporary directory, persistent database connections as in
   `config/settings.py`), with the settings of `bench/floor_settings.py`: the
   project's own plus the floor views of `bench/floor.py`. Threads, although
   the views are mostly CPU: a save also waits on PostgreSQL (its COMMIT), and
   a sync worker closes the connection after each response, so every request
   cost a new connection. Measured on the 2-core machine (docs/performance.md),
   both the floor save and the verdict save ran about twice as many saves a
   second this way as with 2, 3 or 4 sync workers (`--worker-class sync`). The
   workers switch threads every 0.5 ms, not Python's 5 (`bench/review_gunicorn.py`).
3. Drives it with `wrk` (C, one event loop per thread: it takes little of the
   2 cores the server needs) on loopback, one connection per client, each
   client logged in as its own reviewer:
   - GET the case page (as reviewers, and as leads, whose page also has an
     adjudication form per card), the floor page of the same size as the
     case page, and the floor page of 50 KB (the size the issue names), at 2 and 8 clients,
     interleaved, `--reps` times each; only a 200 counts (a redirect to the
     login page would be fast and wrong);
   - POST verdicts through the HTMX path (HX-Request: true → 200 and the card
     partial, compact as the page's script asks when nothing else is typed in the
     card; `--save-card whole` as without it). Each client cycles through all 30
     claims, reads its own newest verdict seq back from the `verdict-saved` event
     it gets, and sends it as `seen_own_seq` on
     its next save of that claim, so no save is stale. A save counts only when
     it answers 200 with the `verdict-saved` event; anything else is lost. Each
     repetition starts from a fresh copy of the database (saves append rows,
     and the page grows with them), and afterwards the stored rows are counted
     against the acknowledged saves. A second scenario puts every client on the
     same claim (one chain, one lock: the worst case). Just before, on the
     same server, the same clients POST to the floor save (same middleware and
     CSRF, the claim locked FOR UPDATE, one INSERT, COMMIT, a response of the card's size).
4. Prints the medians, the ratios and, in-process, the queries of both views
   and where their time goes (`--profile` adds cProfile listings).
5. Stops gunicorn and drops the databases, whatever happened.

This module holds the scenarios and the report; `review_site.py` the scratch
site (database, reviewers, URLs), `load.py` the server and load driver
(gunicorn, HTTP, wrk), `review_breakdown.py` the in-process breakdown.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bundles import REVIEW_JUDGEMENTS, REVIEW_PASSAGE_CHARS, REVIEW_PASSAGES
from harness import Postgres, code_state
from load import Load, Server, fetch, get_script, gunicorn, login, progress, save_script, wrk
from review_breakdown import breakdown
from review_site import (
    DB,
    PASSWORD,
    READERS,
    RUN_ID,
    SLUG,
    WARMUP_USER,
    Fixture,
    build_database,
    case_path,
    floor_path,
    save_once,
    server_env,
)

# --- the measurements --------------------------------------------------------------------


@dataclass
class Figures:
    pages: dict[tuple[str, int], list[Load]]  # (page, clients) → one Load per repetition
    # (scenario, clients) → one Load per repetition; scenario "spread" (each client through
    # all claims, from different starts) or "one" (every client on the first claim)
    saves: dict[tuple[str, int], list[Load]]
    floor_saves: dict[tuple[str, int], list[Load]]
    stored: dict[tuple[str, int], list[int]]  # verdict rows the reviewers have, per repetition
    sizes: dict[str, int]  # response bytes: case, floor, floor50, save
    db_verdicts_after: dict[tuple[str, int], list[int]]


SCENARIOS = ("spread", "one")


def check_pages(
    server: Server, cookies: dict[str, str], lead: dict[str, str], fixture: Fixture
) -> dict[str, int]:
    sizes = {}
    for name, who in (("case", cookies), ("case-lead", lead)):
        status, _, page = fetch(server, "GET", case_path(), cookies=who)
        if status != 200:
            raise RuntimeError(f"the case page answered {status}")
        # Cards, not verdict forms: a compact card has its form only once it is opened.
        cards = page.count(b'<article class="card')
        if cards != len(fixture.claims):
            wanted = len(fixture.claims)
            raise RuntimeError(f"the case page shows {cards} cards, not {wanted}")
        sizes[name] = len(page)
    for name, wanted in (("floor", sizes["case"]), ("floor50", 50_000)):
        status, _, body = fetch(server, "GET", floor_path(wanted), cookies=cookies)
        if status != 200:
            raise RuntimeError(f"the floor page answered {status}")
        sizes[name] = len(body)
    return sizes


def measure(
    args: argparse.Namespace, pg: Postgres, fixture: Fixture, static_root: Path, work: Path
) -> Figures:
    pages: dict[tuple[str, int], list[Load]] = {}
    saves: dict[tuple[str, int], list[Load]] = {}
    floor_saves: dict[tuple[str, int], list[Load]] = {}
    stored: dict[tuple[str, int], list[int]] = {}
    after: dict[tuple[str, int], list[int]] = {}
    log = work / "gunicorn.log"
    server_args = {
        "log": log, "worker_class": args.worker_class, "threads": args.threads,
        "workers": args.workers, "config": Path(__file__).with_name("review_gunicorn.py"),
    }  # fmt: skip

    def served(db: str) -> dict[str, str]:
        return server_env(pg, db, static_root) | {
            "REVIEW_BENCH_SWITCH_INTERVAL": str(args.switch_interval)
        }

    with gunicorn(served(DB), **server_args) as server:
        sessions = [login(server, name, PASSWORD) for name in fixture.usernames]
        leads = [login(server, name, PASSWORD) for name in fixture.leads]
        warm = login(server, WARMUP_USER, PASSWORD)
        sizes = check_pages(server, sessions[0], leads[0], fixture)
        script = get_script(work, sessions)
        lead_script = get_script(work, leads, name="get-lead.lua")
        paths = {
            "case": (script, case_path()),
            "case-lead": (lead_script, case_path()),
            "floor": (script, floor_path(sizes["case"])),
            "floor50": (script, floor_path(50_000)),
        }
        for get, path in paths.values():  # every worker compiles templates, opens its connection
            wrk(server, get, path, max(args.clients), 2)
        for rep in range(args.reps if "pages" in args.parts else 0):
            for clients in args.clients:
                for name, (get, path) in paths.items():
                    load = wrk(server, get, path, clients, args.duration)
                    pages.setdefault((name, clients), []).append(load)
                    progress(f"rep {rep + 1} {name:9} {clients} clients", load)
    # Sessions live in the database, so every copy of it knows these cookies.
    for rep in range(args.reps if "saves" in args.parts else 0):
        for clients in args.clients:
            for scenario in SCENARIOS:
                claims = fixture.claims if scenario == "spread" else fixture.claims[:1]
                copy = f"{DB}_save"
                with pg.scratch(copy, template=DB):
                    with gunicorn(served(copy), **server_args) as server:
                        # Warm the workers on the save path with a user the load does not use.
                        for key in fixture.claims[:20]:
                            fetch(server, "GET", case_path(), cookies=warm)
                            status, sizes["save"] = save_once(
                                server, fixture, warm, key, card=args.save_card
                            )
                            if status != 200:
                                raise RuntimeError(f"the warm-up save on {key} answered {status}")
                        # The floor first: its rows go to a table of its own, the case stays.
                        script = save_script(
                            work, sessions[:clients], claims=claims,
                            claim_seq=fixture.claim_seq,
                            prefix=f"/bench/floor/{SLUG}/{RUN_ID}/save/",
                            suffix=f"/?bytes={sizes['save']}", card=args.save_card,
                        )  # fmt: skip
                        wrk(server, script, case_path(), clients, 1)
                        floor = wrk(server, script, case_path(), clients, args.duration)
                        script = save_script(
                            work, sessions[:clients], claims=claims,
                            claim_seq=fixture.claim_seq, prefix=f"{case_path()}claims/",
                            suffix="/verdict/", card=args.save_card,
                        )  # fmt: skip
                        load = wrk(server, script, case_path(), clients, args.duration)
                    stored_rows = pg.scalar(
                        copy,
                        "SELECT count(*) FROM cards_verdictrevision v JOIN auth_user u "
                        "ON u.id = v.author_id WHERE u.username LIKE 'bench-reviewer-%'",
                    )
                    total = pg.scalar(copy, "SELECT count(*) FROM cards_verdictrevision")
                key = (scenario, clients)
                saves.setdefault(key, []).append(load)
                floor_saves.setdefault(key, []).append(floor)
                progress(f"rep {rep + 1} floor save {scenario:6} {clients} clients", floor)
                stored.setdefault(key, []).append(stored_rows)
                after.setdefault(key, []).append(total)
                progress(
                    f"rep {rep + 1} save       {scenario:6} {clients} clients", load,
                    f"stored {stored_rows}",
                )  # fmt: skip
    return Figures(pages, saves, floor_saves, stored, sizes, after)


def median(values: list[float]) -> float:
    return statistics.median(values)


def ratio(value: float, floor: float) -> float:
    """value / floor; NaN when the floor answered nothing in its window (a busy machine)."""
    return value / floor if floor else math.nan


def report(args: argparse.Namespace, figures: Figures) -> None:
    pages, saves = figures.pages, figures.saves
    low, top = min(args.clients), max(args.clients)
    targets: list[str] = []
    n = args.reps
    names = {
        "case": f"case page, reviewer ({figures.sizes['case'] / 1000:.1f} KB)",
        "case-lead": f"case page, lead ({figures.sizes['case-lead'] / 1000:.1f} KB)",
        "floor": f"floor, same size ({figures.sizes['floor'] / 1000:.1f} KB)",
        "floor50": f"floor, 50 KB ({figures.sizes['floor50'] / 1000:.1f} KB)",
    }
    print(
        f"\nMedians of {n} repetitions of {args.duration} s each "
        f"(gunicorn {args.worker_class}, {args.workers} workers, GIL switch interval "
        f"{args.switch_interval} ms; wrk, 1 connection per client)\n"
    )
    if pages:
        print(
            f"{'GET':34} {'clients':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'req/s':>8}"
            f" {'not 200':>8}"
        )
        for clients in args.clients:
            for key, name in names.items():
                loads = pages[(key, clients)]
                print(
                    f"{name:34} {clients:7} {median([x.p50_ms for x in loads]):8.2f}"
                    f" {median([x.p95_ms for x in loads]):8.2f}"
                    f" {median([x.p99_ms for x in loads]):8.2f}"
                    f" {median([x.per_second for x in loads]):8.1f}"
                    f" {sum(x.bad + x.socket_errors for x in loads):8}"
                )
        print()
        for clients in args.clients:
            for page in ("case", "case-lead"):
                for floor in ("floor", "floor50"):
                    pairs = list(zip(pages[(page, clients)], pages[(floor, clients)], strict=True))
                    ratios = [ratio(c.p50_ms, f.p50_ms) for c, f in pairs]
                    p95 = [ratio(c.p95_ms, f.p95_ms) for c, f in pairs]
                    print(
                        f"{page:9} / {names[floor]:30} at {clients} clients: p50 × "
                        f"{median(ratios):.2f}  p95 × {median(p95):.2f}  (per repetition: "
                        f"{', '.join(f'{r:.2f}' for r in ratios)})"
                    )
        for clients in args.clients:
            times = median(
                [
                    ratio(c.p50_ms, f.p50_ms)
                    for c, f in zip(
                        pages[("case", clients)], pages[("floor", clients)], strict=True
                    )
                ]
            )
            p50 = median([c.p50_ms for c in pages[("case", clients)]])
            # Issue 10: at 2 clients, p50 ≤ 20 ms and ≤ 3× the same-run floor page.
            met = times <= 3 and p50 <= 20
            targets.append(
                f"  case page p50 ≤ 20 ms and ≤ 3× floor at {clients} clients: {p50:.2f} ms,"
                f" × {times:.2f} → {'met' if met else 'NOT met'}"
            )
    if saves:
        save_kb = figures.sizes["save"] / 1000
        print(
            f"\n{'POST':40} {'clients':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"
            f" {'saves/s':>8} {'lost':>8}"
        )
        lost_of: dict[tuple[str, int], int] = {}
        for clients in args.clients:
            for scenario in SCENARIOS:
                key = (scenario, clients)
                where = "all claims" if scenario == "spread" else "one claim"
                for name, loads, stored in (
                    (f"verdict save, {where} ({save_kb:.1f} KB)", saves[key], figures.stored[key]),
                    (f"floor save, {where}", figures.floor_saves[key], None),
                ):
                    lost = [
                        x.bad
                        + x.socket_errors
                        + (max(0, x.good - rows) if rows is not None else 0)
                        for x, rows in zip(loads, stored or [None] * len(loads), strict=True)
                    ]
                    if stored is not None:
                        lost_of[key] = sum(lost)
                    print(
                        f"{name:40} {clients:7} {median([x.p50_ms for x in loads]):8.2f}"
                        f" {median([x.p95_ms for x in loads]):8.2f}"
                        f" {median([x.p99_ms for x in loads]):8.2f}"
                        f" {median([x.per_second for x in loads]):8.1f} {sum(lost):8}"
                    )
        print()
        for clients in args.clients:
            for scenario in SCENARIOS:
                key = (scenario, clients)
                pairs = list(zip(saves[key], figures.floor_saves[key], strict=True))
                ratios = [ratio(c.p50_ms, f.p50_ms) for c, f in pairs]
                print(
                    f"verdict save / floor save, {scenario:6} at {clients} clients: p50 × "
                    f"{median(ratios):.2f}  saves/s × "
                    f"{median([ratio(c.per_second, f.per_second) for c, f in pairs]):.2f}"
                    f"  (p50 per repetition: {', '.join(f'{r:.2f}' for r in ratios)})"
                )
        for clients in args.clients:
            for scenario in SCENARIOS:
                key = (scenario, clients)
                print(
                    f"  {scenario} {clients} clients: saves acknowledged "
                    f"{[x.good for x in saves[key]]}, stored {figures.stored[key]}"
                    " (stored − acknowledged = saves in flight when wrk stopped); verdict rows"
                    f" at the end: {figures.db_verdicts_after[key]} (150 imported + 20 warm-up"
                    " + load)"
                )
        save_p50 = median([x.p50_ms for x in saves[("spread", low)]])
        targets.append(
            f"  save p50 ≤ 15 ms at {low} clients: {save_p50:.2f} ms → "
            f"{'met' if save_p50 <= 15 else 'NOT met'}"
        )
        for scenario, wanted in (("spread", 200), ("one", 100)):
            key = (scenario, top)
            rate = median([x.per_second for x in saves[key]])
            met = rate >= wanted and lost_of[key] == 0
            targets.append(
                f"  ≥ {wanted} saves/s at {top} clients ({scenario}), 0 lost: {rate:.1f}/s, "
                f"{lost_of[key]} lost → {'met' if met else 'NOT met'}"
            )

    print("\nTargets (issue):")
    print("\n".join(targets))


# --- main --------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="repetitions per figure")
    parser.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    parser.add_argument("--clients", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--worker-class", choices=["sync", "gthread"], default="gthread")
    parser.add_argument("--threads", type=int, default=4, help="gthread threads per worker")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument(
        "--switch-interval", type=float, default=0.5,
        help="the workers' GIL switch interval in ms (0.5; Python's default is 5)",
    )  # fmt: skip
    parser.add_argument("--profile", action="store_true", help="cProfile both views too")
    parser.add_argument(
        "--parts", nargs="*", choices=["pages", "saves", "breakdown"],
        default=["pages", "saves", "breakdown"], help="what to measure",
    )  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument(
        "--save-card", choices=["compact", "whole"], default="compact",
        help="the card a save asks back: compact, as the page's script asks when nothing "
        "else is typed in the card (compact), or whole, as without the script",
    )  # fmt: skip
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: apt-get install -y wrk")
    if max(args.clients) > READERS:
        sys.exit(f"at most {READERS} clients: one reviewer each")

    work = Path(tempfile.mkdtemp(prefix="review-bench-"))
    static_root = work / "static"
    pg = Postgres()
    print(f"code: {code_state()}")
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{os.cpu_count()} CPUs"
    )
    try:
        started = time.monotonic()
        fixture = build_database(pg, static_root)
        print(
            f"scratch database {DB}: 1 case, {REVIEW_PASSAGES} passages × "
            f"{REVIEW_PASSAGE_CHARS} chars, {len(fixture.claims)} claims × (1 claim + "
            f"{REVIEW_JUDGEMENTS} verdict revisions) "
            f"in {time.monotonic() - started:.1f} s"
        )
        figures = measure(args, pg, fixture, static_root, work)
        report(args, figures)
        if "breakdown" in args.parts:
            breakdown(pg, fixture, args.profile)
    finally:
        from django.db import connections

        connections.close_all()
        pg.drop(f"{DB}_save")
        if not args.keep:
            pg.drop(DB)
        pg.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
