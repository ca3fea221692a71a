"""`make serve`, the README's production shape, run as a person runs it: the recipe itself
(install, migrate, collectstatic, `check --deploy`, the self-signed certificate, gunicorn and
the worker), on a scratch PostgreSQL database, answered over https, then stopped with Ctrl-C.

test_deploy_shape.py runs the same gunicorn configuration under load; this one runs the
recipe, which nothing else did: a broken line of it would have reached a user first.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from psycopg import sql

from tests.conftest import AUDIT_KEY, ROOT, free_port
from tests.test_deploy_shape import admin_connection

pytestmark = [
    pytest.mark.deploy,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="make serve runs on PostgreSQL only"
    ),
]

# What a test run sets that `make serve` must decide for itself (its Makefile exports).
NOT_INHERITED = (
    "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "TLS_CERT", "TLS_KEY", "BIND", "TASKS_BACKEND",
    "STATIC_MANIFEST", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_COOKIES",
    "DJANGO_SETTINGS_MODULE",
)  # fmt: skip
UNVERIFIED = ssl._create_unverified_context()  # the recipe's certificate is self-signed


@pytest.fixture
def scratch_url() -> Iterator[str]:
    settings = connection.settings_dict
    name = f"{settings['NAME']}_serve_{uuid.uuid4().hex[:8]}"[:63]
    host, port = settings["HOST"] or "127.0.0.1", settings["PORT"] or 5432
    user = settings["USER"] or "postgres"
    with admin_connection() as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield f"postgres://{user}@{host}:{port}/{name}"
    finally:
        with admin_connection() as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def get(url: str) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, headers={"Host": "127.0.0.1"})
    opener = urllib.request.build_opener(
        urllib.request.HTTPSHandler(context=UNVERIFIED), NoRedirect()
    )
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # the redirect itself is what is checked


def processes_with(marker: str) -> list[int]:
    """The processes whose environment names `marker` (our scratch database): the recipe's
    gunicorn and worker, none of another test's."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue  # gone, or not ours to read
    return found


def test_make_serve_migrates_checks_serves_https_with_its_worker_and_stops_on_ctrl_c(
    scratch_url, tmp_path
):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    for name in NOT_INHERITED:
        env.pop(name, None)
    env |= {
        "DATABASE_URL": scratch_url, "SERVE_PORT": str(port), "HOST": "127.0.0.1",
        "WEB_WORKERS": "1", "JOBS_DIR": str(tmp_path / "jobs"),
        "AUDIT_SIGNING_KEY": AUDIT_KEY, "AUDIT_ANCHOR_DIR": str(tmp_path / "anchors"),
    }  # fmt: skip
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        serve = subprocess.Popen(
            ["make", "-s", "serve"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: Ctrl-C reaches make, the shell, gunicorn
        )  # fmt: skip
    base = f"https://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # install (up to date), migrate, collectstatic
        status = None
        while time.monotonic() < deadline and serve.poll() is None:
            try:
                status, _, body = get(f"{base}/healthz")
                if status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.3)
        assert status == 200, f"no answer from make serve:\n{log.read_text()[-3000:]}"
        assert json.loads(body) == {"status": "ok"}
        # Production's settings: the login page over https with HSTS and secure cookies,
        # its static files from the manifest collectstatic wrote.
        status, headers, page = get(f"{base}/login/")
        assert status == 200, page[-2000:]
        assert "max-age=" in headers.get("Strict-Transport-Security", "")
        assert "Secure" in headers.get("Set-Cookie", "")
        css = next(part.split('"')[0] for part in page.split('href="')[1:] if ".css" in part)
        assert css.count(".") >= 2, css  # app.<hash>.css: the manifest's name
        assert get(f"{base}{css}")[0] == 200
        assert get(f"{base}/livez")[0] == 200
        # The worker runs beside gunicorn, with the same database.
        running = processes_with(scratch_url)
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in running]
        assert any(b"db_worker" in command for command in commands), commands
        assert any(b"gunicorn" in command for command in commands), commands
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGINT)  # Ctrl-C
        try:
            code = serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            raise
    # Ctrl-C ends the recipe, and its trap ends the worker too (in a session of its own).
    assert code in (0, 2, 130, -signal.SIGINT), log.read_text()[-3000:]
    deadline = time.monotonic() + 30
    while processes_with(scratch_url) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_with(scratch_url) == [], log.read_text()[-3000:]
    assert "Evidence Review: https://127.0.0.1:" in log.read_text()
