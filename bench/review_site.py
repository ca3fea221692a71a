"""The site the review benchmark loads: its scratch database, reviewers, pages and saves.

One project (`bench-review`) with the case of `bundles.review_bundle()`, eight
reviewers and a warm-up user, all with a random password; the settings of
`bench/floor_settings.py` (the project's own plus the floor views of
`bench/floor.py`), DEBUG=0 and manifest static files, as in production.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from bundles import REVIEW_CASE_ID, REVIEW_REASON, REVIEW_RUN_ID, import_lines, review_bundle
from harness import Postgres, django_env, setup_django
from load import Server, fetch

# Another session may run this benchmark on the same server: REVIEW_BENCH_DB keeps them apart.
DB = os.environ.get("REVIEW_BENCH_DB", "evidence_review_bench")
SLUG, RUN_ID, CASE_ID = "bench-review", REVIEW_RUN_ID, REVIEW_CASE_ID
READERS = 8  # one reviewer per load client
LEADS = 2  # leads load the case page too: theirs also builds an adjudication form per card
WARMUP_USER = "bench-warmup"
PASSWORD = "bench-" + secrets.token_hex(12)
SECRET_KEY = secrets.token_urlsafe(50)


@dataclass
class Fixture:
    claims: list[str]  # claim keys, page order
    claim_seq: dict[str, int]  # claim key → current claim-revision seq (seen_claim_seq)
    usernames: list[str]
    leads: list[str]


def server_env(pg: Postgres, db: str, static_root: Path) -> dict[str, str]:
    return django_env(
        pg.url(db),
        DJANGO_SETTINGS_MODULE="bench.floor_settings",
        SECRET_KEY=SECRET_KEY,
        ALLOWED_HOSTS="127.0.0.1",
        STATIC_MANIFEST="1",
        BENCH_STATIC_ROOT=str(static_root),
        LOG_LEVEL="WARNING",
    )


def build_database(pg: Postgres, static_root: Path) -> Fixture:
    """Migrate the scratch database, import the bundle, make the reviewers; collect static.

    Django is set up in this process on the scratch database (the in-process
    breakdown uses it later); the database then becomes the template of the
    copies the saves run on.
    """
    pg.fresh(DB)
    setup_django(server_env(pg, DB, static_root))
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections

    from cards.models import Claim, ClaimRevision
    from evidence.models import Project, Role
    from evidence.services import membership_set

    call_command("migrate", verbosity=0, interactive=False)
    call_command("collectstatic", verbosity=0, interactive=False)
    import_lines(review_bundle(), project=SLUG, create_project=True)
    with connections["default"].cursor() as cursor:  # what the floor save inserts into
        cursor.execute(
            "CREATE TABLE bench_floor_write (id bigserial PRIMARY KEY, claim_id bigint NOT NULL,"
            " author_id bigint NOT NULL, body text NOT NULL, created_at timestamptz DEFAULT now())"
        )
    project = Project.objects.get(slug=SLUG)
    users = get_user_model().objects
    usernames = [f"bench-reviewer-{i}" for i in range(READERS)]
    leads = [f"bench-lead-{i}" for i in range(LEADS)]
    for username in [*usernames, *leads, WARMUP_USER]:
        user = users.create_user(username=username, password=PASSWORD)
        role = Role.LEAD if username in leads else Role.REVIEWER
        membership_set(project=project, user=user, role=role)
    claims = list(
        Claim.objects.filter(response__run__run_id=RUN_ID)
        .order_by("position")
        .values_list("key", flat=True)
    )
    # Ordered by seq, so each claim keeps its newest revision's.
    claim_seq = dict(
        ClaimRevision.objects.filter(claim__key__in=claims)
        .order_by("seq")
        .values_list("claim__key", "seq")
    )
    connections.close_all()  # the database becomes a template: nobody may be connected
    return Fixture(claims=claims, claim_seq=claim_seq, usernames=usernames, leads=leads)


def case_path() -> str:
    return f"/p/{SLUG}/runs/{RUN_ID}/cases/{CASE_ID}/"


def floor_path(size: int) -> str:
    return f"/bench/floor/{SLUG}/{RUN_ID}/?bytes={size}"


def save_form(
    fixture: Fixture, key: str, csrf: str, own_seq: str = "", card: str = "compact"
) -> bytes:
    """A save's form; `card` compact asks for the card back compact, as the page's script
    does when nothing else is typed in the card ("whole": as without the script)."""
    return urlencode(
        {
            "csrfmiddlewaretoken": csrf, "support": "supported",
            "reason": REVIEW_REASON.format(ref="(warm-up)"),
            "seen_claim_seq": fixture.claim_seq[key], "seen_own_seq": own_seq,
            "seen_head_seq": "", **({"card": "compact"} if card == "compact" else {}),
        }
    ).encode()  # fmt: skip


def save_once(
    server: Server, fixture: Fixture, cookies: dict[str, str], key: str, card: str = "compact"
) -> tuple[int, int]:
    """One HTMX save by a user who has no verdict on `key` yet: (status, response bytes)."""
    status, headers, body = fetch(
        server, "POST", f"{case_path()}claims/{key}/verdict/", cookies=cookies,
        body=save_form(fixture, key, cookies["csrftoken"], card=card),
        headers={
            "Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true",
            "X-CSRFToken": cookies["csrftoken"],
        },
    )  # fmt: skip
    triggers = (headers.get("HX-Trigger") or "") + (headers.get("HX-Trigger-After-Settle") or "")
    if status == 200 and "verdict-saved" not in triggers:
        return 0, len(body)
    return status, len(body)
