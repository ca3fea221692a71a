"""The import benchmark's databases and its floor: the same rows loaded raw.

Each import runs in a copy of a migrated template (PostgreSQL: `CREATE
DATABASE … TEMPLATE`; SQLite: a copy of a migrated file). The floor: the rows
the import stored in the 11 tables it fills are read back and loaded again
with the raw driver, in one transaction, timed to COMMIT:
- PostgreSQL: `COPY (SELECT * …) TO STDOUT` into memory, then the same bytes
  with psycopg `cursor.copy("COPY … FROM STDIN")`;
- SQLite: `SELECT *` into Python tuples, then `executemany` of `INSERT`s with
  the standard `sqlite3` module (WAL, synchronous=NORMAL, like the app).
Each is loaded twice: into *bare* tables (same columns, defaults, CHECK, UNIQUE
and indexes; no foreign keys, no triggers; PostgreSQL: `CREATE TABLE … (LIKE …
INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)`) and into the
*full* migrated schema (plus foreign keys, checked at COMMIT, and the
append-only and chain-sequence triggers). PostgreSQL runs a CHECKPOINT before
each timed section, so none pays for the previous one's dirty pages.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import Postgres, migrate, sqlite_copy, sqlite_remove, sqlite_template, sqlite_url

# Scratch database names; IMPORT_BENCH_PREFIX keeps two benchmarks on one server apart.
_PREFIX = os.environ.get("IMPORT_BENCH_PREFIX", "evidence_bench")
PG_TEMPLATE, PG_RUN, PG_FLOOR = f"{_PREFIX}_tpl", f"{_PREFIX}_run", f"{_PREFIX}_floor"
# (database URL, bundle, cProfile output or None) → the child's report
Importer = Callable[[str, Path, Path | None], dict]

# The tables one import fills, parents first. evidence_project and
# evidence_snapshot (one row each) are loaded before the timed floor.
TABLES = (
    "evidence_passage",
    "evidence_case",
    "evidence_expectation",
    "replay_run",
    "replay_response",
    "replay_retrieval",
    "replay_citation",
    "cards_claim",
    "cards_claimrevision",
    "cards_verdictrevision",
    "cards_responsereview",
)
PARENT_TABLES = ("evidence_project", "evidence_snapshot")


# --- PostgreSQL ------------------------------------------------------------------------------


class PostgresFloor:
    """Imports into a copy of a migrated template, and the floor of the same rows."""

    def __init__(self, pg: Postgres, run_import: Importer):
        self.pg = pg
        self.run_import = run_import

    def setup(self) -> None:
        migrate(self.pg.fresh(PG_TEMPLATE))

    def dump(self, name: str) -> dict[str, bytearray]:
        """The rows of every table the import filled, in COPY text format."""
        data = {}
        with self.pg.connect(name) as conn, conn.cursor() as cur:
            for table_name in PARENT_TABLES + TABLES:
                buffer = bytearray()
                with cur.copy(f"COPY (SELECT * FROM {table_name} ORDER BY id) TO STDOUT") as copy:
                    for chunk in copy:
                        buffer += chunk
                data[table_name] = buffer
        return data

    @staticmethod
    def load(cur, table_name: str, data: bytearray) -> None:
        with cur.copy(f"COPY {table_name} FROM STDIN") as copy:
            copy.write(data)

    def floor(self, data: dict[str, bytearray], *, bare: bool) -> float:
        """The same bytes into a fresh migrated database, in one transaction, to COMMIT.

        bare: into LIKE copies of the tables (no FKs, no triggers); else into the
        migrated tables (FKs deferred to COMMIT, triggers). Not in the run's database:
        autovacuum may be busy there with the rows just imported.
        """
        with (
            self.pg.scratch(PG_FLOOR, template=PG_TEMPLATE),
            self.pg.connect(PG_FLOOR, autocommit=True) as conn,
        ):
            if bare:
                conn.execute("CREATE SCHEMA bench_floor")
                for table_name in TABLES:
                    conn.execute(
                        f"CREATE TABLE bench_floor.{table_name} (LIKE public.{table_name} "
                        "INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)"
                    )
            else:
                with conn.transaction(), conn.cursor() as cur:
                    for table_name in PARENT_TABLES:
                        self.load(cur, table_name, data[table_name])
            schema = "bench_floor." if bare else ""
            self.pg.checkpoint()
            started = time.perf_counter()
            with conn.transaction(), conn.cursor() as cur:
                for table_name in TABLES:
                    self.load(cur, schema + table_name, data[table_name])
            return time.perf_counter() - started

    def one_run(self, bundle: Path, floors: bool, profile: Path | None = None) -> dict:
        with self.pg.scratch(PG_RUN, template=PG_TEMPLATE) as url:
            self.pg.checkpoint()
            result = self.run_import(url, bundle, profile)
            data = self.dump(PG_RUN) if floors else None
        if data is not None:
            result["floor_bare"] = self.floor(data, bare=True)
            result["floor_schema"] = self.floor(data, bare=False)
        return result

    def cleanup(self) -> None:
        for name in (PG_RUN, PG_FLOOR, PG_TEMPLATE):
            self.pg.drop(name)
        self.pg.close()


# --- SQLite ----------------------------------------------------------------------------------


def sqlite_regexp(pattern: str | None, value: Any) -> bool | None:
    """What Django registers as REGEXP, which the CHECK constraints of the schema call."""
    if pattern is None or value is None:
        return None
    return bool(re.search(pattern, str(value)))


def sqlite_connect(path: Path, *, foreign_keys: bool) -> sqlite3.Connection:
    """The pragmas the app's settings use, plus Django's own `foreign_keys = ON` and REGEXP."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.create_function("REGEXP", 2, sqlite_regexp, deterministic=True)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA foreign_keys={'ON' if foreign_keys else 'OFF'}")
    return conn


class SqliteFloor:
    """Imports into copies of a migrated file, and the floor of the same rows."""

    def __init__(self, workdir: Path, run_import: Importer):
        self.run_import = run_import
        self.template = workdir / "template.sqlite3"
        self.run_file = workdir / "run.sqlite3"
        self.floor_file = workdir / "floor.sqlite3"

    def setup(self) -> None:
        sqlite_template(self.template)

    def dump(self, path: Path) -> dict[str, tuple[list[str], list[tuple]]]:
        data = {}
        with sqlite3.connect(path) as conn:
            for table_name in PARENT_TABLES + TABLES:
                cur = conn.execute(f"SELECT * FROM {table_name} ORDER BY id")  # noqa: S608
                data[table_name] = ([d[0] for d in cur.description], cur.fetchall())
        return data

    @staticmethod
    def load(conn: sqlite3.Connection, table_name: str, columns: list[str], rows: list) -> None:
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" * len(columns))
        conn.executemany(f"INSERT INTO {table_name} ({names}) VALUES ({marks})", rows)  # noqa: S608

    def floor(self, data: dict, *, bare: bool) -> float:
        path = sqlite_copy(self.template, self.floor_file)
        conn = sqlite_connect(path, foreign_keys=not bare)
        try:
            if bare:
                triggers = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
                for (name,) in triggers.fetchall():
                    conn.execute(f'DROP TRIGGER "{name}"')
            conn.execute("BEGIN IMMEDIATE")
            for table_name in PARENT_TABLES:
                self.load(conn, table_name, *data[table_name])
            conn.execute("COMMIT")
            started = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            for table_name in TABLES:
                self.load(conn, table_name, *data[table_name])
            conn.execute("COMMIT")
            seconds = time.perf_counter() - started
        finally:
            conn.close()
        sqlite_remove(path)
        return seconds

    def one_run(self, bundle: Path, floors: bool, profile: Path | None = None) -> dict:
        path = sqlite_copy(self.template, self.run_file)
        result = self.run_import(sqlite_url(path), bundle, profile)
        if floors:
            data = self.dump(path)
            result["floor_bare"] = self.floor(data, bare=True)
            result["floor_schema"] = self.floor(data, bare=False)
            del data
        sqlite_remove(path)
        return result

    def cleanup(self) -> None:
        for path in (self.run_file, self.floor_file, self.template):
            sqlite_remove(path)
