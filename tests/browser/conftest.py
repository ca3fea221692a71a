"""A real server for browser tests: its own database, migrated and loaded with the demo.

The server runs in a subprocess exactly as `make run` does, so the browser
sees the real middleware, static files and CSP. On PostgreSQL (DATABASE_URL
set) it gets a throwaway database of its own; on SQLite a copy of the suite's
demo file (tests/conftest.py `demo_sqlite`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import DEMO_PASSWORD, sqlite_copy

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _admin_sql(url: str, statement: str) -> None:
    import psycopg

    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres", query=""))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(statement)


@dataclass(frozen=True)
class LiveServer:
    url: str
    env: dict[str, str]  # the server's environment, DATABASE_URL included

    def manage(self, *args: str) -> subprocess.CompletedProcess:
        """Run a management command against the server's database."""
        return subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            env=self.env, cwd=ROOT, check=True, capture_output=True, text=True,
        )  # fmt: skip


@pytest.fixture(scope="session")
def live(request, tmp_path_factory) -> Iterator[LiveServer]:
    base = os.environ.get("DATABASE_URL", "")
    env = {**os.environ, "DEBUG": "1", "DEMO_PASSWORD": DEMO_PASSWORD}
    env.pop("PYTEST_VERSION", None)
    dropped = None
    if base.startswith(("postgres://", "postgresql://")):
        name = f"evidence_e2e_{uuid.uuid4().hex[:8]}"
        _admin_sql(base, f'CREATE DATABASE "{name}"')
        dropped = name
        env["DATABASE_URL"] = urlunsplit(urlsplit(base)._replace(path=f"/{name}"))
    manage = [sys.executable, str(ROOT / "manage.py")]
    if dropped:
        subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=ROOT, check=True)
        subprocess.run([*manage, "load_demo"], env=env, cwd=ROOT, check=True, capture_output=True)
    else:
        database = tmp_path_factory.mktemp("e2e") / "e2e.sqlite3"
        sqlite_copy(request.getfixturevalue("demo_sqlite"), database)
        env["DATABASE_URL"] = f"sqlite:///{database}"
    port = _free_port()
    server = subprocess.Popen(
        [*manage, "runserver", "--noreload", f"127.0.0.1:{port}"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError("the test server did not start")
        yield LiveServer(url=f"http://127.0.0.1:{port}", env=env)
    finally:
        server.terminate()
        server.wait(timeout=10)
        if dropped:
            _admin_sql(base, f'DROP DATABASE IF EXISTS "{dropped}" WITH (FORCE)')


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        message = f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live):
    context = browser.new_context(base_url=live.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.console_problems = []
    page.on(
        "console",
        lambda message: (
            page.console_problems.append(message.text)
            if message.type in {"error", "warning"}
            else None
        ),
    )
    yield page
    context.close()


def log_in(page, username: str) -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
