"""The application works as a role that owns nothing: a deployment's commands, end to end.

Each step is a `manage.py` subprocess with its own DATABASE_URL, in the order
docs/security.md ("Who owns the tables") gives a site, on a new database: `pg_roles` as a
superuser, `migrate` as the owner role, `pg_roles` again, then as the application role
`load_demo`, a verdict saved through the review page's view, `export_audit` and
`verify_audit`. Roles are cluster-wide: the database and both roles get unique names and
are dropped when the test ends.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from django.db import connection
from psycopg import sql

from tests.audit.test_audit_zip import members
from tests.conftest import AUDIT_KEY, DEMO_PASSWORD, ROOT

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="roles are PostgreSQL's; SQLite has none"
)

REASON = "Saved by the application role."
# Through the review page's own view, as a reviewer's browser posts it (the test client
# skips only the CSRF check). Prints the status and alice's verdicts on the claim.
SAVE_A_VERDICT = f"""
from django.test import Client
from django.urls import reverse
from cards.models import Claim

claim = Claim.objects.filter(response__run__project__slug="demo", response__run__run_id="q017-r1")
claim = claim.select_related("response__case").order_by("pk").first()
client = Client()
assert client.login(username="alice", password={DEMO_PASSWORD!r})
url = reverse("verdict_add", args=["demo", "q017-r1", claim.response.case.case_id, claim.key])
response = client.post(url, {{"support": "partial", "reason": {REASON!r}, "seen_claim_seq": 1}})
print(response.status_code, claim.verdicts.filter(annotator="alice").count())
"""


@dataclass
class Deployment:
    database: str
    owner: str
    app: str
    passwords: dict[str, str]
    folder: Path

    def url(self, role: str | None = None) -> str:
        """A DATABASE_URL on the new database: as `role`, or as the suite's own superuser."""
        settings = connection.settings_dict
        user = role or settings["USER"]
        password = self.passwords.get(role or "", settings["PASSWORD"] or "")
        credentials = quote(user, safe="") + (f":{quote(password, safe='')}" if password else "")
        host = settings["HOST"] or "127.0.0.1"
        return f"postgres://{credentials}@{host}:{settings['PORT'] or 5432}/{self.database}"

    def manage(self, *args: str, role: str | None = None) -> str:
        """`manage.py ARGS` connected as `role` (the superuser by default): its stdout."""
        env = {
            **os.environ, "DATABASE_URL": self.url(role), "DEBUG": "1",
            "DEMO_PASSWORD": DEMO_PASSWORD, "AUDIT_SIGNING_KEY": AUDIT_KEY,
            "AUDIT_ANCHOR_DIR": str(self.folder / "anchors"), "ALLOWED_HOSTS": "testserver",
        }  # fmt: skip
        env.pop("PYTEST_VERSION", None)
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"manage.py {args[0]} as {role}:\n{done.stderr[-2000:]}"
        return done.stdout


def admin_connection(database: str = "postgres") -> psycopg.Connection:
    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"] or None, port=settings["PORT"] or None, dbname=database,
        user=settings["USER"] or None, password=settings["PASSWORD"] or None, autocommit=True,
    )  # fmt: skip


@pytest.fixture
def deployment(tmp_path) -> Iterator[Deployment]:
    suffix = uuid.uuid4().hex[:12]
    site = Deployment(
        database=f"test_deploy_{suffix}", owner=f"test_owner_{suffix}",
        app=f"test_app_{suffix}", passwords={}, folder=tmp_path,
    )  # fmt: skip
    with admin_connection() as admin:
        superuser = admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if not superuser.fetchone()[0]:
            pytest.skip("pg_roles runs as a superuser; the suite's database user is not one")
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(site.database)))
        try:
            yield site
        finally:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(site.database)
                )
            )
            for role in (site.app, site.owner):
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def set_passwords(site: Deployment) -> None:
    """As the administrator does with `\\password` (pg_roles sets none): whatever pg_hba asks."""
    with admin_connection() as admin:
        for role in (site.owner, site.app):
            site.passwords[role] = secrets.token_hex(16)
            admin.execute(
                sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(site.passwords[role])
                )
            )


def test_the_application_works_as_a_role_that_owns_nothing(deployment):
    site = deployment
    roles = ("pg_roles", "--owner", site.owner, "--app", site.app)
    assert "ready on an empty database" in site.manage(*roles)
    set_passwords(site)
    site.manage("migrate", "--no-input", "-v0", role=site.owner)
    assert f"{site.app}: SELECT, INSERT on " in site.manage(*roles)
    with admin_connection(site.database) as admin:
        owners = admin.execute(
            "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'"
        )
        assert owners.fetchall() == [(site.owner,)]

    assert "demo project ready: 9 run(s) imported" in site.manage("load_demo", role=site.app)
    saved = site.manage("shell", "-c", SAVE_A_VERDICT, role=site.app)
    assert saved.splitlines()[-1] == "302 1"  # saved, and back to the case page
    package = site.folder / "audit.zip"
    package_id = site.manage(
        "export_audit", "--project", "demo", "--out", str(package), role=site.app
    ).strip()
    key = site.folder / "audit.key"
    key.write_text(AUDIT_KEY + "\n")
    verified = site.manage(
        "verify_audit", str(package), "--id", package_id, "--key", str(key), role=site.app
    )
    assert verified.startswith("OK ") and verified.endswith("anchor signature valid\n")
    assert REASON.encode() in members(package)["cards/revisions.jsonl"]

    # And what it cannot do there: the trail stays append-only to it.
    with (
        psycopg.connect(site.url(site.app)) as app,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        app.execute("DELETE FROM cards_verdictrevision")
