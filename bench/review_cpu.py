"""CPU time per case page and per verdict save, in-process: steadier than wall time on a
shared machine.

    .venv/bin/python bench/review_cpu.py                  # 200 requests of each
    .venv/bin/python bench/review_cpu.py --runs 50 --profile page
    .venv/bin/python bench/review_cpu.py --chain 10,100,300,600   # a save, its card growing

The case of `bundles.review_bundle()` (20 passages × 2 KB, 30 claims × 5 verdicts) on a
fresh PostgreSQL database ($REVIEW_CPU_DB, `evidence_review_cpu`), DEBUG off, through
Django's test client and the whole middleware: the median `time.process_time()` of a
request (this process's CPU: Django, the view, the test client), the mean CPU of the
PostgreSQL backend that served them (from /proc, when the server runs here) and the
request's query count. Saves go through the HTMX path, spread over the 30 claims (then all on
the first), each with the reviewer's own newest seq, so none is stale; each asks for its card
back compact, as the page's script does when nothing else is typed in the card, and then
again with the card whole. It asserts nothing about time.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import time
from collections.abc import Callable

from bundles import REVIEW_CASE_ID, REVIEW_RUN_ID, import_lines, review_bundle
from harness import Postgres, code_state, django_env, log, setup_django

DB = os.environ.get("REVIEW_CPU_DB", "evidence_review_cpu")
SLUG = "bench-review"
CASE = f"/p/{SLUG}/runs/{REVIEW_RUN_ID}/cases/{REVIEW_CASE_ID}/"
HTMX = {"HTTP_HX_REQUEST": "true"}


def cpu_ms(fn: Callable[[], object], runs: int) -> tuple[float, float | None, int]:
    """Median CPU milliseconds of `fn` over `runs` calls, the mean CPU milliseconds of the
    PostgreSQL backend serving them (None where /proc does not show it), and the queries
    of the last one."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    samples = []
    server = backend_cpu()
    for _ in range(runs):
        started = time.process_time()
        fn()
        samples.append((time.process_time() - started) * 1000)
    server_ms = None if server is None else (backend_cpu() - server) * 1000 / runs
    with CaptureQueriesContext(connection) as queries:
        fn()
    return statistics.median(samples), server_ms, len(queries.captured_queries)


def backend_cpu() -> float | None:
    """CPU seconds of the PostgreSQL backend of this process's connection, from /proc (the
    server on this machine); in clock ticks, so read over many requests."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def profile(fn: Callable[[], object], runs: int) -> None:
    profiler = cProfile.Profile(time.process_time)  # CPU, as the figures: not waits on PostgreSQL
    profiler.enable()
    for _ in range(runs):
        fn()
    profiler.disable()
    if os.environ.get("PROFILE_OUT"):
        profiler.dump_stats(os.environ["PROFILE_OUT"])
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(45)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="requests of each (200)")
    parser.add_argument("--profile", choices=["page", "save", "card"], help="cProfile one")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument(
        "--chain", type=lambda text: [int(n) for n in text.split(",")],
        help="instead: a save on one claim at these chain lengths (e.g. 10,100,300,600)",
    )  # fmt: skip
    args = parser.parse_args()
    log(f"code: {code_state()}")
    pg = Postgres()
    try:
        pg.fresh(DB)
        setup_django(django_env(pg.url(DB), ALLOWED_HOSTS="testserver"))
        measure(args)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            pg.drop(DB)
        pg.close()


def prepare() -> tuple[dict, dict[str, int]]:
    """Migrate, import the case, log a reviewer and a lead in: (clients, claim key → seq)."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from cards.models import ClaimRevision
    from evidence.models import Project, Role
    from evidence.services import membership_set

    call_command("migrate", verbosity=0, interactive=False)
    import_lines(review_bundle(), project=SLUG, create_project=True)
    project = Project.objects.get(slug=SLUG)
    clients = {}
    for name, role in (("reviewer", Role.REVIEWER), ("lead", Role.LEAD)):
        user = get_user_model().objects.create_user(username=f"cpu-{name}")
        membership_set(project=project, user=user, role=role)
        clients[name] = Client()
        clients[name].force_login(user)
    claim_seq = dict(
        ClaimRevision.objects.filter(claim__response__run__run_id=REVIEW_RUN_ID)
        .order_by("seq")
        .values_list("claim__key", "seq")
    )
    return clients, claim_seq


def measure(args: argparse.Namespace) -> None:
    clients, claim_seq = prepare()
    keys = list(claim_seq)
    reviewer = clients["reviewer"]
    own: dict[str, str] = {}
    turn = iter(range(10**9))

    def page(who: str = "reviewer") -> None:
        answer = clients[who].get(CASE)
        assert answer.status_code == 200, answer.status_code

    def card() -> None:
        answer = reviewer.get(f"{CASE}claims/{keys[0]}/card/", **HTMX)
        assert answer.status_code == 200, answer.status_code

    def save(one: bool = False, whole: bool = False) -> None:
        key = keys[0 if one else next(turn) % len(keys)]
        data = {
            "support": "partial", "reason": "Measured save.", "seen_claim_seq": claim_seq[key],
            "seen_own_seq": own.get(key, ""), "seen_head_seq": "",
        }  # fmt: skip
        if not whole:  # as the page's script asks when nothing else is typed in the card
            data["card"] = "compact"
        answer = reviewer.post(f"{CASE}claims/{key}/verdict/", data, **HTMX)
        assert answer.status_code == 200, (answer.status_code, answer.content[:300])
        saved = json.loads(answer.headers["HX-Trigger-After-Settle"])["verdict-saved"]
        own[key] = str(saved["seq"])

    for _ in range(10):  # warm: templates compiled, the card cache filled
        page()
        page("lead")
        card()
    if args.profile:
        fn = {"page": page, "save": save, "card": card}[args.profile]
        profile(fn, args.runs)
        return
    if args.chain:
        chain(lambda: save(one=True), keys[0], args.chain)
        return
    figures = {
        "case page, reviewer": cpu_ms(page, args.runs),
        "case page, lead": cpu_ms(lambda: page("lead"), args.runs),
        "one card whole (HTMX)": cpu_ms(card, args.runs),
        "verdict save (HTMX), spread over the claims": cpu_ms(save, args.runs),
        "verdict save (HTMX), spread, the card whole": cpu_ms(lambda: save(whole=True), args.runs),
        # Every save lengthens the one claim's card: its history and verdicts list.
        "verdict save (HTMX), all on one claim": cpu_ms(lambda: save(one=True), args.runs),
        "verdict save (HTMX), one claim, the card whole": cpu_ms(
            lambda: save(one=True, whole=True), args.runs
        ),
    }
    size = len(reviewer.get(CASE).content)
    print(f"{DB}, {args.runs} requests each, case page {size / 1000:.0f} KB after the saves")
    print("  Django CPU-ms (median)   PostgreSQL CPU-ms (mean)   queries")
    for name, (ms, server_ms, queries) in figures.items():
        server = "      —" if server_ms is None else f"{server_ms:7.2f}"
        print(f"  {ms:7.2f}  {server}  {queries:3d}  {name}")


def chain(save: Callable[[], object], key: str, lengths: list[int]) -> None:
    """CPU-ms of a save on one claim as its chain grows: a whole card lists every verdict."""
    from cards.models import VerdictRevision

    verdicts = VerdictRevision.objects.filter(
        claim__key=key, claim__response__run__run_id=REVIEW_RUN_ID
    )
    print("verdicts on the claim   Django CPU-ms (median of 10 saves)")
    for length in lengths:
        while verdicts.count() < length - 10:
            save()
        samples = []
        for _ in range(10):
            started = time.process_time()
            save()
            samples.append((time.process_time() - started) * 1000)
        print(f"  {length:5d}  {statistics.median(samples):7.2f}")


if __name__ == "__main__":
    main()
