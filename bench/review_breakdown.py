"""The review benchmark's in-process breakdown: the queries of both views and where time goes.

On the scratch database, through Django's test client and the views' own
pieces (selector, forms, template), medians of many calls each; `--profile`
adds cProfile listings. It explains the figures measured over HTTP, it does
not replace them.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import re
import time
from collections.abc import Callable
from typing import Any

from harness import Postgres, timed
from review_site import CASE_ID, DB, RUN_ID, SLUG, WARMUP_USER, Fixture, case_path, floor_path


class QueryLog:
    """Every query a block runs, with its time in `execute` (server and transfer), in ms."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.rows: list[tuple[float, str]] = []

    def __enter__(self) -> QueryLog:
        self.wrapper = self.connection.execute_wrapper(self)
        self.wrapper.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wrapper.__exit__(*exc)

    def __call__(self, execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.rows.append(((time.perf_counter() - start) * 1000, sql))

    def print(self, label: str) -> None:
        total = sum(ms for ms, _ in self.rows)
        print(f"\n{label}: {len(self.rows)} queries, {total:.2f} ms in execute:")
        for ms, sql in self.rows:
            print(f"  {ms:6.2f} ms  {' '.join(sql.split())[:140]}")


def composition(html: str) -> None:
    """Where the bytes of the case page are (by the markup of templates/cards/review.html)."""
    cards = re.findall(r'<article class="card.*?</article>', html, re.S)
    print(f"\ncase page: {len(html) / 1000:.1f} KB, of which:")
    start = html.find('<section class="panel" aria-labelledby="passages-h"')
    end = html.find('<dialog id="keys"')
    if 0 <= start < end:
        print(f"  {(end - start) / 1000:6.1f} KB  retrieved passages section")
    if not cards:
        return
    print(f"  {sum(map(len, cards)) / 1000:6.1f} KB  {len(cards)} cards; one card:")
    parts = {
        "verdict form": ('<form class="verdict-form"', "</form>"),
        "  of which the diagnoses help": ('<details class="small diagnoses"', "</details>"),
        "attached passage": ('<div class="attached"', "</div>"),
        "verdicts list": ('<ul class="verdicts"', "</ul>"),
        "history": ('<details class="history"', "</details>"),
        "rewrite form (a checkbox per passage)": ('<details class="revise"', "</details>"),
    }
    card = cards[0]
    for name, (head, tail) in parts.items():
        at = card.find(head)
        if at >= 0:
            print(f"  {(card.find(tail, at) + len(tail) - at) / 1000:10.1f} KB  {name}")


def median_ms(fn: Callable[[], Any], runs: int) -> float:
    """Median wall time of `fn` in milliseconds."""
    return timed(fn, runs).median * 1000


def breakdown(pg: Postgres, fixture: Fixture, profile: bool) -> None:
    """Queries and time split of both views, in this process, on the scratch database."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.template.loader import render_to_string
    from django.test import Client, RequestFactory

    from cards.selectors import claim_for_member, review_card, review_page
    from cards.services.verdicts import verdict_save
    from cards.views import review_context as views
    from evidence.access import membership_for
    from replay.selectors import run_for_project

    runs = 40
    user = get_user_model().objects.get(username=WARMUP_USER)
    client = Client(SERVER_NAME="127.0.0.1")
    client.force_login(user)
    htmx = {"HTTP_HX_REQUEST": "true"}
    print("\nIn-process breakdown (Django test client, DEBUG=0, same settings and database)")
    for _ in range(5):
        client.get(case_path())
    with QueryLog(connection) as queries:
        response = client.get(case_path())
    assert response.status_code == 200, response.status_code
    queries.print("case page GET")
    composition(response.content.decode())

    request = RequestFactory(SERVER_NAME="127.0.0.1").get(case_path())
    request.user = user
    request.htmx = False
    membership = membership_for(user=user, slug=SLUG)
    run = run_for_project(project=membership.project, run_id=RUN_ID)
    page = review_page(run=run, case_id=CASE_ID, membership=membership)
    context = views.page_context(page)
    split = {
        "whole request through the middleware": median_ms(lambda: client.get(case_path()), runs),
        "membership_for + run_for_project": median_ms(
            lambda: run_for_project(
                project=membership_for(user=user, slug=SLUG).project, run_id=RUN_ID
            ),
            runs,
        ),
        "review_page (selector)": median_ms(
            lambda: review_page(run=run, case_id=CASE_ID, membership=membership), runs
        ),
        "page_context (a form per card)": median_ms(lambda: views.page_context(page), runs),
        "render cards/review.html": median_ms(
            lambda: render_to_string("cards/review.html", context, request), runs
        ),
        "  of which: render #card once for each of the 30 cards": median_ms(
            lambda: [
                render_to_string("cards/review.html#card", context | {"card": card}, request)
                for card in page.cards
            ],
            runs,
        ),
        "floor page (same size) whole request": median_ms(
            lambda: client.get(floor_path(len(response.content))), runs
        ),
    }
    print(f"\ncase page GET, median of {runs} calls each:")
    for name, ms in split.items():
        print(f"  {ms:7.2f} ms  {name}")

    # Saves by the warm-up user on claims it saved on over HTTP only in the copies, so here
    # each claim starts with no verdict of its own and is then tracked.
    own: dict[str, str] = {}
    keys = iter(fixture.claims * 1000)

    def post() -> None:
        key = next(keys)
        data = {
            "support": "partial", "reason": "In-process save.",
            "seen_claim_seq": fixture.claim_seq[key], "seen_own_seq": own.get(key, ""),
            "seen_head_seq": "",
        }  # fmt: skip
        answer = client.post(f"{case_path()}claims/{key}/verdict/", data, **htmx)
        assert answer.status_code == 200, (answer.status_code, answer.content[:300])
        found = re.search(rb'name="seen_own_seq" value="(\d+)"', answer.content)
        own[key] = found[1].decode()

    post()
    with QueryLog(connection) as queries:
        post()
    queries.print("verdict save POST (HTMX)")

    def service() -> None:
        key = next(keys)
        claim = page.card(key).claim
        saved = verdict_save(
            claim=claim,
            author=user,
            support="supported",
            reason="Service only.",
            seen_claim_seq=fixture.claim_seq[key],
            seen_own_seq=_int(own.get(key)),
        )
        own[key] = str(saved.seq)

    service()
    with QueryLog(connection) as queries:
        service()
    queries.print("verdict_save (the service alone)")

    split = {
        "whole request through the middleware": median_ms(post, runs),
        "verdict_save (the service: lock, checks, insert, commit)": median_ms(service, runs),
    }
    # The view's own pieces (cards.views.review.verdict_add): the claim for the member, the
    # service, then the saved card alone from its own rows, its forms and its partial.
    key = fixture.claims[0]

    def claim() -> Any:
        return claim_for_member(user=user, slug=SLUG, run_id=RUN_ID, case_id=CASE_ID, key=key)

    membership, run, claim_row, revisions = claim()

    def card() -> Any:
        return review_card(run=run, claim=claim_row, membership=membership, revisions=revisions)

    saved = card()
    views.card_forms(saved, membership, None)
    context = views.card_context(
        saved, membership, card_message="", card_message_key=key, notice="Saved, revision 9.",
        notice_key=key,
    )  # fmt: skip
    request.htmx = True
    split |= {
        "claim_for_member (membership, run, claim, its revisions: one query)": median_ms(
            claim, runs
        ),
        "review_card (the saved card from its own rows)": median_ms(card, runs),
        "card_forms (its verdict form)": median_ms(
            lambda: views.card_forms(card(), membership, None), runs
        )
        - median_ms(card, runs),
        "render cards/review.html#card (the answer)": median_ms(
            lambda: render_to_string("cards/review.html#card", context, request), runs
        ),
    }
    verdicts = pg.scalar(DB, "SELECT count(*) FROM cards_verdictrevision")
    print(f"\nverdict save, median of {runs} calls each ({verdicts} verdicts in the case now):")
    for name, ms in split.items():
        print(f"  {ms:7.2f} ms  {name}")

    if profile:
        for label, fn in (("case page GET", lambda: client.get(case_path())), ("save", post)):
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(20):
                fn()
            profiler.disable()
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats("tottime").print_stats(18)
            stats.sort_stats("cumulative").print_stats(30)
            print(f"\ncProfile of 20 × {label}:")
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip()))


def _int(value: str | None) -> int | None:
    return int(value) if value else None
