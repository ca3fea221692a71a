"""Personas and helpers shared by the whole suite.

A reviewer, a second reviewer and a lead of project `demo`, and an outsider
who belongs only to project `elsewhere` and must get 404 on everything of
`demo`.

The demo bundles are imported once for all the tests that start from them, not
once per test: see `PreparedData`.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import ClassVar

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection, transaction
from django.test import override_settings
from django.utils import translation
from hypothesis import settings as hypothesis_settings
from psycopg import pq

from cards.selectors import card_passages, frozen_rows, page_hints
from evidence.models import Project, Role
from evidence.services import membership_set, project_create
from ingest.services import ImportSummary, bundle_import

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
# The known answers: ../shared's original when it is beside the checkout, else our copy
# (tests/test_fixture_copies.py keeps the two equal).
KNOWN_ANSWERS = (
    SHARED_FIXTURES / "expected.json"
    if (SHARED_FIXTURES / "expected.json").exists()
    else FIXTURES / "expected.json"
)
# Property tests: Hypothesis's 100 examples a test in `make test`; `HYPOTHESIS_PROFILE=thorough`
# for ten times as many (docs/testing.md).
# No deadline: an example's time says nothing about its property, and on a loaded shared
# machine a 200 ms deadline failed a span property at 1,355 ms (CI, PostgreSQL).
hypothesis_settings.register_profile("default", deadline=None)
hypothesis_settings.register_profile("thorough", max_examples=1000, deadline=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
PASSWORD = "correct horse battery staple"
# The password of the demo users in the databases of subprocesses and the browser tests.
DEMO_PASSWORD = "browser-test-password"
BUNDLES = tuple(sorted(path.name for path in FIXTURES.glob("*.jsonl")))
# The data a test starts from, by the fixture that promises it (the first one a test uses
# wins, so list supersets first): project `demo` with these bundles imported.
PREPARED = {
    "demo_runs": BUNDLES,
    "replay_response": ("q017-r3.jsonl",),  # tests/cards/conftest.py
}


def row_counts() -> dict[str, int]:
    """Rows of every table an import can write, by model name: "nothing stored" is no change."""
    from cards.models import Claim, ClaimRevision, ResponseReview, VerdictRevision
    from evidence.models import Case, Expectation, Passage, Project, Snapshot
    from replay.models import Citation, Response, Retrieval, Run

    models = (
        Passage, Case, Expectation, Snapshot, Project, Run, Response, Retrieval, Citation, Claim,
        ClaimRevision, VerdictRevision, ResponseReview,
    )  # fmt: skip
    return {model.__name__: model.objects.count() for model in models}


def bundle_bytes(*lines: dict | str) -> bytes:
    """JSONL bytes from dicts (or raw strings, written as they are)."""
    out = [
        line if isinstance(line, str) else json.dumps(line, ensure_ascii=False) for line in lines
    ]
    return ("\n".join(out) + "\n").encode("utf-8")


def import_bytes(data: bytes, *, project: str = "demo", **kwargs):
    return bundle_import(stream=io.BytesIO(data), project_slug=project, **kwargs)


def import_fixture(name: str, *, project: str = "demo", **kwargs):
    with (FIXTURES / name).open("rb") as stream:
        return bundle_import(stream=stream, project_slug=project, source_name=name, **kwargs)


def prepared_for(item: pytest.Item) -> tuple[str, ...]:
    """The bundles imported into `demo` before the test starts; () for an empty database.

    Only for a test rolled back to them: one that commits, as threads need, imports
    its bundles itself.
    """
    if not rolled_back(item):
        return ()
    names = getattr(item, "fixturenames", ())
    return next((bundles for fixture, bundles in PREPARED.items() if fixture in names), ())


def rolled_back(item: pytest.Item) -> bool:
    """Whether the test runs in a transaction that is rolled back (pytest-django's `db`)."""
    marker = item.get_closest_marker("django_db")
    names = set(getattr(item, "fixturenames", ()))
    if marker is not None and marker.kwargs.get("transaction"):
        return False
    if names & {"transactional_db", "live_server"}:
        return False
    return marker is not None or "db" in names


class PreparedData:
    """Bundles imported once for a run of tests, in a transaction each test rolls back to.

    Importing the demo costs more than most tests that read it. So the tests that
    start from the same bundles run one after another (see the sort in
    pytest_collection_modifyitems), the bundles are imported in an outer
    transaction before the first of them, each test's own transaction (`db`) is a
    savepoint inside it that rolls back to the imported data, and before any other
    test the outer transaction is rolled back: every other test starts, as before,
    from an empty database.
    """

    current: ClassVar[PreparedData | None] = None

    def __init__(self, blocker) -> None:
        self.blocker = blocker
        self.bundles: tuple[str, ...] = ()
        self.summaries: dict[str, ImportSummary] = {}
        self.atomic: transaction.Atomic | None = None

    def switch(self, item: pytest.Item) -> None:
        bundles = prepared_for(item)
        if bundles == self.bundles and not self.broken():
            return
        self.discard()
        if not bundles:
            return
        with self.blocker.unblock():
            # A test's own transaction must not be open yet: it would end inside ours.
            assert not connection.in_atomic_block, "prepared data after the test's transaction"
            atomic = transaction.atomic()
            atomic.__enter__()
            self.atomic = atomic
            try:
                project_create(slug="demo", name="Demo")
                self.summaries = {name: import_fixture(name) for name in bundles}
            except BaseException:
                self.discard()
                raise
        self.bundles = bundles

    def broken(self) -> bool:
        """Whether PostgreSQL refuses every statement in our transaction until it ends.

        A statement can fail after a test's rollback, outside any savepoint: the
        garbage collector closing a server-side cursor (`.iterator()`) that an export
        refused half-way left open, in a savepoint that is gone. The data is then
        imported again.
        """
        if self.atomic is None or connection.vendor != "postgresql":
            return False
        return connection.connection.info.transaction_status == pq.TransactionStatus.INERROR

    def discard(self) -> None:
        """Roll the imported bundles back: the database is empty again."""
        if self.atomic is None:
            return
        with self.blocker.unblock():
            transaction.set_rollback(True)
            self.atomic.__exit__(None, None, None)
        self.atomic, self.bundles, self.summaries = None, (), {}


@pytest.fixture(scope="session")
def prepared_data(django_db_setup, django_db_blocker) -> Iterator[PreparedData]:
    PreparedData.current = PreparedData(django_db_blocker)
    yield PreparedData.current
    # Before django_db_setup destroys the test database.
    PreparedData.current.discard()
    PreparedData.current = None


@pytest.fixture(autouse=True)
def _prepared_data(request) -> None:
    """The first test that needs prepared data starts it; pytest_runtest_setup switches it."""
    if prepared_for(request.node):
        request.getfixturevalue("prepared_data").switch(request.node)
        # Keys of cached pages hold row ids and import times, which repeat after a rollback.
        cache.clear()


@pytest.fixture(autouse=True)
def _frozen_rows() -> None:
    """Each test starts with no frozen rows kept: a rolled-back test's ids come back in the
    next one with other rows (never so outside tests: the database refuses to delete them)."""
    frozen_rows.clear()
    card_passages.clear()
    page_hints.clear()


@pytest.fixture(autouse=True)
def _language() -> Iterator[None]:
    """Each test starts in the default language: LocaleMiddleware activates a request's
    language in the thread and leaves it there, so a test after an Italian page would
    otherwise read Italian (a test of the deals failed so after tests/test_i18n.py)."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Runs before any fixture of the test sets up, module-wide ones included.
    if PreparedData.current is not None:
        PreparedData.current.switch(item)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that start from the same prepared data run one after another.

    pytest-django has put the tests rolled back to an empty database first, then
    those that flush it, then those that use none; the browser's go last (their
    event loop would make Django refuse synchronous queries in any test after them).
    The tests of each kind of prepared data go at the end of the first part, each
    kind in collected order.
    """
    order = [(), *PREPARED.values()]
    items.sort(
        key=lambda item: (
            # Last of all: once Playwright's event loop runs in a process (each xdist
            # worker's too), Django refuses synchronous queries there.
            item.get_closest_marker("browser") is not None,
            not rolled_back(item),
            order.index(prepared_for(item)),
        )
    )
    if os.environ.get("MUTANT_UNDER_TEST"):
        # Under mutation testing, the tests that need no database go first: mutmut runs a
        # mutant's tests fastest first and stops at the first failure, and would otherwise
        # create the test database before the rule tables that usually kill the mutant.
        items.sort(key=_uses_database)


def _uses_database(item: pytest.Item) -> bool:
    names = set(getattr(item, "fixturenames", ()))
    return item.get_closest_marker("django_db") is not None or bool(
        names & {"db", "transactional_db", "live_server"}
    )


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing() -> Iterator[None]:
    # Personas and demo users are created with a password; the default hasher costs
    # ~0.3 s a user, more than most tests.
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


# The audit signing key of the tests (audit.anchors); each test's anchors go to its own folder,
# as its database is its own.
AUDIT_KEY = "test-audit-signing-key-0123456789abcdef"


@pytest.fixture(scope="session", autouse=True)
def audit_signing_key(tmp_path_factory) -> Iterator[None]:
    # Never the development key and folder of var/. A fixture that exports for a whole module
    # (its data rolled back) names a folder of its own, as `audit_anchors` does for a test.
    folder = tmp_path_factory.mktemp("session-anchors")
    with override_settings(AUDIT_SIGNING_KEY=AUDIT_KEY, AUDIT_ANCHOR_DIR=str(folder)):
        yield


@pytest.fixture(autouse=True)
def audit_anchors(audit_signing_key, tmp_path_factory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("anchors")
    with override_settings(AUDIT_ANCHOR_DIR=str(folder)):
        yield folder


@pytest.fixture(autouse=True)
def jobs_dir(tmp_path_factory) -> Iterator[Path]:
    """Each test's uploads, packages and progress files in a folder of its own, not var/."""
    folder = tmp_path_factory.mktemp("jobs")
    with override_settings(JOBS_DIR=str(folder)):
        yield folder


@pytest.fixture(scope="session")
def demo_sqlite(request, tmp_path_factory) -> Path:
    """A SQLite file as `make run` leaves it (migrated, load_demo), for subprocesses to copy.

    Migrating costs seconds: the servers and commands that tests run in subprocesses
    start from copies of this one file (`sqlite_copy`) instead of each migrating their own.
    Under xdist the workers share one, made by the first that needs it (the others wait
    on a lock beside it): a `load_demo` is 3-4 s of CPU.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.getbasetemp().parent  # this run's, shared by its workers
    else:
        folder = tmp_path_factory.mktemp("demo-sqlite")
    path = folder / "demo.sqlite3"
    with (folder / "demo.sqlite3.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            # Made beside it and renamed: a worker that finds the file finds it whole.
            partial = folder / "demo-partial.sqlite3"
            partial.unlink(missing_ok=True)
            _make_demo_sqlite(request, partial)
            os.replace(partial, path)
    return path


def _make_demo_sqlite(request, path: Path) -> None:
    env = sqlite_env(path)
    manage = [sys.executable, str(ROOT / "manage.py")]
    if connection.vendor == "sqlite":
        # pytest-django sets up no test database when no collected test needs one (the
        # browser's folder run alone): the connection then names the development file.
        request.getfixturevalue("django_db_setup")
    if connection.vendor == "sqlite" and "memory" in str(connection.settings_dict["NAME"]):
        # The suite's own database is migrated already, and empty between tests.
        blocker = request.getfixturevalue("django_db_blocker")
        with blocker.unblock(), closing(sqlite3.connect(path)) as target:
            assert not connection.in_atomic_block, "a copy would wait for our own transaction"
            connection.ensure_connection()
            connection.connection.backup(target)
    else:
        subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=ROOT, check=True)
    done = subprocess.run(
        [*manage, "load_demo"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"load_demo failed on the demo file:\n{done.stderr[-400:]}")


def sqlite_env(path: Path) -> dict[str, str]:
    """The environment of a manage.py subprocess on the SQLite file `path`."""
    env = {
        **os.environ, "DATABASE_URL": f"sqlite:///{path}", "DEBUG": "1",
        "DEMO_PASSWORD": DEMO_PASSWORD, "AUDIT_SIGNING_KEY": AUDIT_KEY,
        "AUDIT_ANCHOR_DIR": str(path.parent / "anchors"),
    }  # fmt: skip
    env.pop("PYTEST_VERSION", None)
    return env


def wait_healthy(process: subprocess.Popen, port: int, log: Callable[[], str]) -> None:
    """Until the server on `port` answers /healthz with 200 (the database reachable and
    every migration applied); `log` tells what the server said when it did not."""
    import requests

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server on port {port} exited:\n{log()}")
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200:
                return
        except requests.RequestException:  # not listening yet, or its worker still booting
            pass
        time.sleep(0.2)
    raise AssertionError(f"the server on port {port} did not answer /healthz in 60 s:\n{log()}")


def free_port() -> int:
    """A loopback port nobody listens on now, for a server the test starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sqlite_copy(template: Path, path: Path) -> Path:
    """A copy of the database `template` at `path` (through SQLite: it may be in WAL mode)."""
    with closing(sqlite3.connect(template)) as source, closing(sqlite3.connect(path)) as target:
        source.backup(target)
    return path


@pytest.fixture
def project(db) -> Project:
    # Already there when the test starts from prepared data.
    return project_create(slug="demo", name="Demo")


def _member(project: Project, username: str, role: str) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD)
    membership_set(project=project, user=user, role=role)
    return user


@pytest.fixture
def reviewer(project) -> User:
    return _member(project, "alice", Role.REVIEWER)


@pytest.fixture
def second_reviewer(project) -> User:
    return _member(project, "bob", Role.REVIEWER)


@pytest.fixture
def lead(project) -> User:
    return _member(project, "lead", Role.LEAD)


@pytest.fixture
def outsider(db) -> User:
    elsewhere = project_create(slug="elsewhere", name="Elsewhere")
    return _member(elsewhere, "mallory", Role.LEAD)


@pytest.fixture
def demo_runs(request, project) -> dict[str, ImportSummary]:
    """Every fixture bundle imported into `demo`, as load_demo does; their import summaries.

    Already there for a test rolled back to them (PreparedData).
    """
    if prepared_for(request.node) == BUNDLES:
        return PreparedData.current.summaries
    return {name: import_fixture(name) for name in BUNDLES}
