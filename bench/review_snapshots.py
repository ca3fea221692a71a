"""Every answer of the review pages on a fresh database, written to a directory: diff the
directories of two checkouts to see that a change kept the HTML.

    .venv/bin/python bench/review_snapshots.py /tmp/before          # in the old checkout
    .venv/bin/python bench/review_snapshots.py /tmp/after           # in the new one
    diff -r /tmp/before /tmp/after

The demo projects (`load_demo`, one of them blind) and the benchmark's case, as a reviewer
(alice), a second reviewer (bob) and a lead: every case page, the first cards whole (HTMX
and plain), the rewrite form; then per claim a refused, an accepted and a stale save, a
plain save and a refused plain save with the pages after them, an adjudication, bob's save;
and completing each case. A scratch PostgreSQL database ($REVIEW_SNAPSHOTS_DB), a fixed
clock (so hashes and times repeat), CSRF tokens blanked. It asserts nothing.
"""

from __future__ import annotations

import datetime
import os
import re
import sys
from pathlib import Path

from bundles import import_lines, review_bundle
from harness import Postgres, django_env, setup_django

DB = os.environ.get("REVIEW_SNAPSHOTS_DB", "evidence_review_snapshots")
HX = {"HTTP_HX_REQUEST": "true"}
FIXED = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
HIDDEN = re.compile(r'<input type="hidden" name="(seen_\w+|adjudicate)" value="([^"]*)"')


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    pg = Postgres()
    pg.fresh(DB)
    try:
        setup_django(django_env(pg.url(DB), DEMO_PASSWORD="snapshots"))
        import django.utils.timezone

        django.utils.timezone.now = lambda: FIXED  # the same hashes and times every run
        print(f"{Snapshots(out).take()} answers in {out}")
    finally:
        from django.db import connections

        connections.close_all()
        pg.drop(DB)
        pg.close()


class Snapshots:
    def __init__(self, out: Path):
        self.out = out
        self.count = 0

    def dump(self, label: str, answer) -> None:
        self.count += 1
        head = " ".join(
            [str(answer.status_code)]
            + [answer.get(name, "") for name in ("Location", "HX-Trigger-After-Settle",
                                                  "HX-Retarget", "HX-Reswap")]
        )  # fmt: skip
        body = answer.content.decode()
        body = re.sub(
            r'name="csrfmiddlewaretoken" value="[^"]+"', 'name="csrfmiddlewaretoken"', body
        )
        body = re.sub(r'"X-CSRFToken": "[^"]+"', '"X-CSRFToken": ""', body)
        (self.out / f"{self.count:03d}-{label}.html").write_text(f"{head}\n{body}")

    def take(self) -> int:
        from django.contrib.auth.models import User
        from django.core.management import call_command
        from django.test import Client

        from cards.models import Claim
        from evidence.models import Project, Role
        from evidence.services import membership_set
        from replay.models import Response

        call_command("migrate", verbosity=0, interactive=False)
        call_command("load_demo", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
        import_lines(review_bundle(), project="bench-review", create_project=True)
        bench = Project.objects.get(slug="bench-review")
        for name, role in (("alice", Role.REVIEWER), ("lead", Role.LEAD), ("bob", Role.REVIEWER)):
            membership_set(project=bench, user=User.objects.get(username=name), role=role)
        self.clients = {}
        for name in ("alice", "bob", "lead"):
            self.clients[name] = Client()
            self.clients[name].force_login(User.objects.get(username=name))
        responses = Response.objects.select_related("run__project", "case")
        cases = [
            (r.run.project.slug, r.run.run_id, r.case.case_id, r)
            for r in responses.order_by("run__project__slug", "run__run_id", "position")
        ]
        for who in ("alice", "lead", "bob"):
            for slug, run_id, case_id, response in cases:
                claims = Claim.objects.filter(response=response).order_by("position")
                self.pages(who, (slug, run_id, case_id), list(claims[:4]))
        for slug, run_id, case_id, response in cases:
            for claim in Claim.objects.filter(response=response).order_by("position")[:2]:
                self.saves((slug, run_id, case_id), claim.key)
            case = (slug, run_id, case_id)
            alice = self.clients["alice"]
            tag = "-".join(case)
            self.dump(
                f"complete-{tag}", alice.post(url(case, "complete"), {"complete": "1"}, **HX)
            )
            self.dump(f"after-complete-{tag}", alice.get(url(case)))
        return self.count

    def pages(self, who: str, case: tuple[str, str, str], claims: list) -> None:
        client, tag = self.clients[who], f"{who}-{'-'.join(case)}"
        page = client.get(url(case))
        self.dump(f"page-{tag}", page)
        if page.status_code != 200:
            return
        for claim in claims:
            self.dump(f"card-{tag}-{claim.key}", client.get(card_url(case, claim.key), **HX))
            self.dump(f"cardplain-{tag}-{claim.key}", client.get(url(case), {"card": claim.key}))
        if claims and who != "bob":
            revise = {"revise": claims[0].key}
            self.dump(f"revise-{tag}", client.get(url(case), revise, **HX))
            self.dump(f"reviseplain-{tag}", client.get(url(case), revise))

    def saves(self, case: tuple[str, str, str], key: str) -> None:
        alice, lead, bob = (self.clients[name] for name in ("alice", "lead", "bob"))
        tag, save = f"{'-'.join(case)}-{key}", url(case, "claims", key, "verdict")
        card = alice.get(card_url(case, key), **HX)
        if card.status_code != 200 or "verdict-form" not in card.content.decode():
            self.dump(f"nocard-{tag}", card)
            return
        seen = form_of(card.content.decode())
        refused = {**seen, "support": "partial", "reason": " ", "note": "kept note"}
        self.dump(f"save-refused-{tag}", alice.post(save, refused, **HX))
        saved = {**seen, "support": "partial", "reason": "Only part <b>of</b> it."}
        self.dump(f"save-{tag}", alice.post(save, saved, **HX))
        stale = {**seen, "support": "supported", "reason": "Stale one."}
        self.dump(f"save-stale-{tag}", alice.post(save, stale, **HX))
        seen = form_of(alice.get(card_url(case, key), **HX).content.decode())
        plain = {**seen, "support": "unsupported", "contradicts": "on", "reason": "Plain post."}
        self.dump(f"saveplain-{tag}", alice.post(save, plain))
        self.dump(f"after-saveplain-{tag}", alice.get(url(case)))
        plain = {**seen, "support": "unsupported", "reason": "Stale plain."}
        self.dump(f"saveplain-refused-{tag}", alice.post(save, plain))
        self.dump(f"after-refused-{tag}", alice.get(url(case)))
        self.dump(f"after-refused-again-{tag}", alice.get(url(case)))
        html = lead.get(card_url(case, key), **HX).content.decode()
        if html.count('class="verdict-form"') > 1:
            adjudicated = {**form_of(html, adjudicate=True), "support": "supported",
                           "reason": "Lead says."}  # fmt: skip
            self.dump(f"adjudicate-{tag}", lead.post(save, adjudicated, **HX))
        self.dump(f"lead-page-after-{tag}", lead.get(url(case)))
        card = bob.get(card_url(case, key), **HX)
        if card.status_code == 200 and "verdict-form" in card.content.decode():
            bobs = {**form_of(card.content.decode()), "support": "supported", "reason": "Bob."}
            self.dump(f"bob-save-{tag}", bob.post(save, bobs, **HX))
        self.dump(f"bob-page-after-{tag}", bob.get(url(case)))


def url(case: tuple[str, str, str], *rest: str) -> str:
    slug, run_id, case_id = case
    return f"/p/{slug}/runs/{run_id}/cases/{case_id}/" + "".join(f"{r}/" for r in rest)


def card_url(case: tuple[str, str, str], key: str) -> str:
    return url(case, "claims", key, "card")


def form_of(html: str, *, adjudicate: bool = False) -> dict[str, str]:
    """The hidden fields of the card's verdict form (or of its adjudication form)."""
    forms = re.findall(r'<form class="verdict-form".*?</form>', html, re.S)
    fields = dict(HIDDEN.findall(forms[1] if adjudicate else forms[0]))
    return fields | ({"adjudicate": "True"} if adjudicate else {})


if __name__ == "__main__":
    main()
