"""A real server for browser tests: its own database, migrated and loaded with the demo.

The server runs in a subprocess exactly as `make run` does, so the browser
sees the real middleware, static files and CSP. On PostgreSQL (DATABASE_URL
set) it gets a throwaway database of its own; on SQLite a copy of the suite's
demo file (tests/conftest.py `demo_sqlite`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import AUDIT_KEY, DEMO_PASSWORD, free_port, sqlite_copy

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


def _admin_sql(url: str, statement: str) -> None:
    import psycopg

    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres", query=""))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(statement)


@dataclass
class LiveServer:
    url: str
    env: dict[str, str]  # the server's environment, DATABASE_URL included
    worker: subprocess.Popen | None = field(default=None, repr=False)

    def manage(self, *args: str) -> subprocess.CompletedProcess:
        """Run a management command against the server's database; raise if it fails.

        In one long-lived process (tests/browser/manage_worker.py): starting Django for
        each command cost more than most commands.
        """
        if self.worker is None:
            self.worker = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("manage_worker.py"))],
                env={**self.env, "PYTHONPATH": str(ROOT)}, cwd=ROOT, text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            )  # fmt: skip
        self.worker.stdin.write(json.dumps(args) + "\n")
        self.worker.stdin.flush()
        line = self.worker.stdout.readline()
        if not line:
            raise RuntimeError(f"the manage worker ended (exit {self.worker.wait()})")
        answer = json.loads(line)
        done = subprocess.CompletedProcess(["manage.py", *args], **answer)
        done.check_returncode()
        return done

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stdin.close()
            self.worker.wait(timeout=10)
            self.worker = None


def _serve(request, tmp_path_factory, *, debug: bool) -> Iterator[LiveServer]:
    base = os.environ.get("DATABASE_URL", "")
    env = {**os.environ, "DEBUG": "1" if debug else "0", "DEMO_PASSWORD": DEMO_PASSWORD}
    # Every side-by-side page counts as large: its summary loads after the page, as it does
    # for runs of thousands of cases (compare.pages), so the browser tests take that path.
    env["COMPARE_INLINE_PAIRS"] = "0"
    if not debug:
        # As production runs it: a real secret (manage.py would otherwise assume a
        # development machine and turn DEBUG on) and named hosts. Static files come
        # from the finders, as in development: the manifest needs a collectstatic.
        # Plain http on 127.0.0.1: no redirect to https, no HSTS, cookies a browser
        # sends over http (production turns all three on, config/settings.py).
        env |= {
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "STATIC_MANIFEST": "0",
            "SECURE_SSL_REDIRECT": "0",
            "SECURE_HSTS_SECONDS": "0",
            "SECURE_COOKIES": "0",
        }
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
    port = free_port()
    # Its own uploads and packages, and its own anchors: an export checks the anchors of
    # every earlier one against its database, and each server has a database of its own.
    env["JOBS_DIR"] = str(tmp_path_factory.mktemp("jobs"))
    env["AUDIT_ANCHOR_DIR"] = str(tmp_path_factory.mktemp("anchors"))
    env["AUDIT_SIGNING_KEY"] = AUDIT_KEY
    live = LiveServer(url=f"http://127.0.0.1:{port}", env=env)
    server = subprocess.Popen(
        [*manage, "runserver", "--noreload", f"127.0.0.1:{port}"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # As `make run`: the worker that runs the imports and exports the pages queue.
    jobs_worker = subprocess.Popen(
        [*manage, "db_worker", "--no-reload", "--no-startup-delay", "--interval", "0.2"],
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
        yield live
    finally:
        live.stop()
        server.terminate()
        jobs_worker.terminate()
        server.wait(timeout=10)
        jobs_worker.wait(timeout=60)  # it finishes the job it runs
        if dropped:
            _admin_sql(base, f'DROP DATABASE IF EXISTS "{dropped}" WITH (FORCE)')


@pytest.fixture(scope="session", autouse=True)
def _demo_file_before_the_browser(request) -> None:
    """On SQLite, the servers copy the suite's demo file: build it before Playwright starts.

    It is built through the ORM, which Django refuses once Playwright's event loop runs
    in this thread (SynchronousOnlyOperation): an autouse session fixture sets up before
    the `browser` fixture, whichever test of this folder runs first.
    """
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        request.getfixturevalue("demo_sqlite")


@pytest.fixture(scope="session")
def live(request, tmp_path_factory) -> Iterator[LiveServer]:
    """The server as `make run` serves it: DEBUG on."""
    yield from _serve(request, tmp_path_factory, debug=True)


@pytest.fixture(scope="session")
def live_production(request, tmp_path_factory) -> Iterator[LiveServer]:
    """The server as production runs it: DEBUG off, a SECRET_KEY, named hosts."""
    yield from _serve(request, tmp_path_factory, debug=False)


@pytest.fixture(params=["debug", "production"])
def server(request) -> LiveServer:
    """A test that asks for it runs twice: with DEBUG on, and with DEBUG off."""
    return request.getfixturevalue("live" if request.param == "debug" else "live_production")


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


def _request_failed(page, request) -> None:
    """A request that got no answer is a failure, but for a GET the browser cancelled itself.

    A page that loads a panel after it (`hx-trigger="load"`) and is left before the panel
    arrives has that GET cancelled by the browser (`net::ERR_ABORTED`): nothing of the app
    failed, and a test that clicks on quickly would fail by chance (CI saw it twice). Such
    GETs are kept apart in `page.aborted_requests`; a POST cancelled so is still a failure
    (a save lost), and so is every other error (refused, reset, empty answer).
    """
    what = f"{request.method} {request.url} failed"
    if request.method == "GET" and request.failure == "net::ERR_ABORTED":
        page.aborted_requests.append(what)
    else:
        page.failed_requests.append(f"{what} ({request.failure})")


def _new_page(browser, server: LiveServer, options: dict):
    context = browser.new_context(
        base_url=server.url, viewport={"width": 1280, "height": 900}, **options
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.server_url = server.url
    page.console_problems = []
    page.failed_requests = []
    page.on(
        "console",
        lambda message: (
            page.console_problems.append(message.text)
            if message.type in {"error", "warning"}
            else None
        ),
    )
    page.on("pageerror", lambda error: page.console_problems.append(f"page error: {error}"))
    # A CSP violation is also reported to the page; the binding outlives navigations.
    context.expose_function(
        "__reportViolation", lambda what: page.console_problems.append(f"CSP: {what}")
    )
    context.add_init_script(CSP_LISTENER)
    page.aborted_requests = []
    page.on("requestfailed", lambda request: _request_failed(page, request))
    page.on(
        "response",
        lambda response: (
            page.failed_requests.append(
                f"{response.request.method} {response.url} {response.status}"
            )
            if response.status >= 400
            else None
        ),
    )
    return page


@pytest.fixture(scope="session")
def _pages() -> Iterator[dict]:
    """One browser context and page per server and set of options, for the whole session.

    A context and its page cost about a quarter of a second to make and close, and a new
    one starts with an empty cache: every test would fetch the static files again. Between
    tests the page is emptied instead (`_open_page`).
    """
    pages: dict = {}
    yield pages
    for page in pages.values():
        page.context.close()


def _open_page(browser, pages: dict, server: LiveServer, **options):
    # Reduced motion, as a reviewer may ask of the system: no smooth scroll to wait out
    # before each action on a card that just took the focus (Playwright waits until an
    # element stands still).
    options = {"reduced_motion": "reduce", **options}
    key = (server.url, tuple(sorted(options.items())))
    page = pages.get(key)
    if page is None or page.is_closed():
        page = pages[key] = _new_page(browser, server, options)
    yield page
    # Nothing of this test reaches the next one: its routes, other tabs, cookies, and the
    # events of a page still loading (about:blank first, then the lists are emptied).
    page.unroute_all(behavior="ignoreErrors")
    for other in page.context.pages:
        if other is not page:
            other.close()
    page.goto("about:blank")
    page.context.clear_cookies()
    page.console_problems.clear()
    page.failed_requests.clear()
    page.aborted_requests.clear()


CSP_LISTENER = """document.addEventListener("securitypolicyviolation", (event) => {
  window.__reportViolation(event.violatedDirective + " " + (event.blockedURI || "inline"));
});"""


@pytest.fixture
def page(browser, _pages, live):
    yield from _open_page(browser, _pages, live)


@pytest.fixture
def server_page(browser, _pages, server):
    """A page of `server`: the test runs with DEBUG on and with DEBUG off."""
    yield from _open_page(browser, _pages, server)


@pytest.fixture
def plain_page(browser, _pages, live):
    """A page without JavaScript: every action must work as a plain form post."""
    yield from _open_page(browser, _pages, live, java_script_enabled=False)


def fresh_run(server: LiveServer, tmp_path: Path, fixture: str, *, edit=None) -> str:
    """Import a copy of fixtures/`fixture` under a new run id; its first case's page URL.

    Each test reviews its own copy, so tests that share the session's server never see
    each other's claims. `edit(lines)` may change the lines before the import.
    """
    lines = [
        json.loads(line)
        for line in (ROOT / "fixtures" / fixture).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    run_id = f"{lines[0]['run_id']}-{uuid.uuid4().hex[:6]}"
    lines[0]["run_id"] = run_id
    if edit is not None:
        edit(lines)
    bundle = tmp_path / f"{run_id}.jsonl"
    bundle.write_text(
        "\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n",
        encoding="utf-8",
    )
    server.manage("import_bundle", str(bundle), "--project", "demo")
    case_id = next(line["case_id"] for line in lines if line["kind"] == "case")
    return f"/p/demo/runs/{run_id}/cases/{case_id}/"


# Session cookies per server and user. The login form hashes the password (PBKDF2, about
# half a second): through the form once per server and user, then by the cookie.
SESSIONS: dict[tuple[str, str], list] = {}


def log_in(page, username: str, *, fresh: bool = False) -> None:
    """Log `username` in. Through the form when `fresh` (the page is then on the home page):
    a test that logs out must, or it would end the session the others share."""
    key = (page.server_url, username)
    if not fresh and key in SESSIONS:
        page.context.add_cookies(SESSIONS[key])
        return
    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
    if not fresh:
        SESSIONS[key] = page.context.cookies()


def open_card(card) -> None:
    """Open a compact card by its link and wait until it is whole: through htmx, or without
    JavaScript as the page with that card whole."""
    from playwright.sync_api import Error, expect

    # A focused compact card is opening itself already (it took the focus after a save).
    if card.evaluate("el => el.hasAttribute('data-compact') && document.activeElement !== el"):
        with contextlib.suppress(Error):  # it may still be swapped in meanwhile
            card.locator("a", has_text="Open card").click(timeout=2_000)
    expect(card).not_to_have_class(re.compile(r"\bcompact\b"))
