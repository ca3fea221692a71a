"""Writing many rows fast, and reading them back by key, in the caller's transaction.

The import knows every foreign key before it writes, because it reserves
primary keys first (PostgreSQL: `nextval` of the table's sequence, safe under
concurrent imports; SQLite: one past the largest id, safe because the
transaction took the write lock at BEGIN IMMEDIATE). Rows then go in with
`COPY … FROM STDIN` on PostgreSQL, several times faster than INSERT, and with
`executemany` on SQLite. Columns with a database default (`created_at`) are
left out so the database fills them.

On PostgreSQL a caller may let the COPYs of a batch run in a thread of their own
(`RowWriter.overlap`) while it reads the next one: written rows are kept until `send`,
and every other use of the connection waits for them first (`wait`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from django.db import connection, models, transaction

from evidence.canonical import compact_str


def to_json(value: Any) -> str | None:
    """JSON text for a JSONField column (None stays SQL NULL)."""
    if value is None:
        return None
    return compact_str(value)


ANALYZE_THRESHOLD = 5000  # rows a table must have grown by to be analyzed after an import


class RowWriter:
    """Reserves ids and writes rows of given columns for models, backend-appropriately."""

    def __init__(self) -> None:
        self.vendor = connection.vendor
        self.next_sqlite_id: dict[str, int] = {}
        self.sequences: dict[str, str] = {}  # table → its id sequence (PostgreSQL)
        self.rows_by_table: dict[str, int] = {}
        # PostgreSQL: written rows kept for `send`, which COPYs them in a thread of its own.
        self.overlap = False
        self.pending: list[tuple[str, str, Sequence[Sequence[Any]]]] = []
        self.sender: threading.Thread | None = None
        self.failure: BaseException | None = None

    def reserve_ids(self, model: type[models.Model], count: int) -> list[int]:
        if count == 0:
            return []
        self.wait()  # the connection is the sender's until then
        table = model._meta.db_table
        with connection.cursor() as cursor:
            if self.vendor == "postgresql":
                if table not in self.sequences:
                    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
                    self.sequences[table] = cursor.fetchone()[0]
                # The sequence as a constant: `nextval(pg_get_serial_sequence(…))` looked the
                # name up again for every id (100,000 ids: 296 → 112 ms).
                cursor.execute(
                    "SELECT nextval(%s::regclass) FROM generate_series(1, %s)",
                    [self.sequences[table], count],
                )
                return [row[0] for row in cursor.fetchall()]
            if table not in self.next_sqlite_id:
                cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}")  # noqa: S608
                (largest,) = cursor.fetchone()
                cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
                row = cursor.fetchone()
                self.next_sqlite_id[table] = max(largest, row[0] if row else 0) + 1
        first = self.next_sqlite_id[table]
        self.next_sqlite_id[table] = first + count
        return list(range(first, first + count))

    def write(
        self, model: type[models.Model], names: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """Write `rows`, whose values are those of the model's fields `names` in that order.

        `names` are field names (`attname`, so `snapshot_id` for a foreign key), mapped to
        their columns here: a caller never spells a column or relies on column order.
        """
        if not rows:
            return
        table = model._meta.db_table
        column_list = ", ".join(
            connection.ops.quote_name(model._meta.get_field(name).column) for name in names
        )
        fields = [model._meta.get_field(name) for name in names]
        times = [i for i, f in enumerate(fields) if isinstance(f, models.DateTimeField)]
        if self.overlap and self.vendor == "postgresql":
            self.pending.append((table, column_list, rows))  # COPY adapts the times itself
        else:
            self.wait()
            load_rows(table, column_list, len(names), rows, datetimes=times)
        self.rows_by_table[table] = self.rows_by_table.get(table, 0) + len(rows)

    def send(self) -> None:
        """COPY the rows written since the last `send`, in order, in a thread of its own, on
        the connection's own session (so in its transaction), and return at once.

        The caller goes on with work that needs no database (reading the next batch):
        PostgreSQL stores one batch while Python reads the next, where they took turns
        (half an import's time was waiting on the server). Until `wait`, nothing else may
        use the connection.
        """
        self.wait()
        if not self.pending:
            return
        batches, self.pending = self.pending, []
        connection.ensure_connection()
        session = connection.connection  # psycopg's: Django's wrapper is for its own thread

        def copy_all() -> None:
            try:
                with session.cursor() as cursor:
                    for table, column_list, rows in batches:
                        with cursor.copy(f"COPY {table} ({column_list}) FROM STDIN") as copy:
                            for row in rows:
                                copy.write_row(row)
            except BaseException as exc:  # handed to the caller's thread by `wait`
                self.failure = exc

        self.sender = threading.Thread(target=copy_all, name="import-copy", daemon=True)
        self.sender.start()

    def wait(self, *, raising: bool = True) -> None:
        """Wait for the rows `send` is copying; raise what the database refused, as Django
        would (an `IntegrityError` for a broken key), unless not `raising`."""
        if self.sender is not None:
            self.sender.join()
            self.sender = None
        failure, self.failure = self.failure, None
        if failure is not None and raising:
            with connection.wrap_database_errors:
                raise failure

    def sync(self) -> None:
        """Every row written so far is in the database."""
        self.send()
        self.wait()

    def check_foreign_keys_immediately(
        self, *, but: Sequence[tuple[type[models.Model], str]]
    ) -> None:
        """Check foreign keys row by row as rows arrive (PostgreSQL), not all at COMMIT.

        Django declares them DEFERRABLE INITIALLY DEFERRED: PostgreSQL queued one check
        per row and ran them all at COMMIT (11 % of an import, in the issue's profile).
        Immediate, they run during each COPY, without the queue. `but` stay deferred:
        foreign keys whose target is written last (a response's run). Until the
        transaction ends; `defer_foreign_keys` sets them back when it goes on (inside a
        test's).
        """
        if self.vendor != "postgresql":
            return
        names = []
        with connection.cursor() as cursor:
            for model, field in but:
                table = model._meta.db_table
                cursor.execute(
                    "SELECT conname FROM pg_constraint WHERE contype = 'f' "
                    "AND conrelid = %s::regclass AND conkey = ARRAY["
                    "(SELECT attnum FROM pg_attribute WHERE attrelid = %s::regclass "
                    "AND attname = %s)]::smallint[]",
                    [table, table, model._meta.get_field(field).column],
                )
                (name,) = cursor.fetchone()
                names.append(connection.ops.quote_name(name))
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"SET CONSTRAINTS {', '.join(names)} DEFERRED")

    def defer_foreign_keys(self) -> None:
        """Back to Django's default: every foreign key checked at COMMIT."""
        if self.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")

    def analyze_after_commit(self) -> None:
        """Refresh the planner's statistics of the tables that grew a lot, once committed.

        Right after a bulk load PostgreSQL still believes the tables are small and
        picks nested loops: reading a 10,000-case run's verdicts was 8× slower
        until autovacuum got round to it (measured in bench/metrics_bench.py).
        """
        grown = self._grown()
        if not grown:
            return

        def analyze() -> None:
            with connection.cursor() as cursor:
                cursor.execute(_analyze(grown))

        transaction.on_commit(analyze)

    def _grown(self) -> list[str]:
        """The tables that grew by ANALYZE_THRESHOLD rows or more;
        PostgreSQL's only (SQLite's planner reads no such statistics unless asked)."""
        if self.vendor != "postgresql":
            return []
        return [table for table, n in self.rows_by_table.items() if n >= ANALYZE_THRESHOLD]


def _analyze(tables: list[str]) -> str:
    """ANALYZE that skips a table another transaction is analyzing (autovacuum's, or a
    caller's inside its own transaction, which holds the lock until it ends): an import's
    job is done when it has committed, and imports into different runs share every table.
    A skipped table keeps the statistics it had until the next analysis, or autovacuum's."""
    return f"ANALYZE (SKIP_LOCKED) {', '.join(tables)}"


def load_rows(
    table: str,
    column_list: str,
    width: int,
    rows: Sequence[Sequence[Any]],
    *,
    datetimes: Sequence[int] = (),
) -> None:
    """Load `rows` into `table`'s columns `column_list` (already quoted): COPY on PostgreSQL,
    one `executemany` of INSERTs on SQLite, the values at positions `datetimes` adapted as
    Django would (only those: looking at every value of every row cost 0.5-0.7 s in 10,000
    cases, for the 3 columns of 2 tables that hold times)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Django does not wrap COPY: map psycopg's errors to Django's ourselves.
            with (
                connection.wrap_database_errors,
                cursor.copy(f"COPY {table} ({column_list}) FROM STDIN") as copy,
            ):
                for row in rows:
                    copy.write_row(row)
        else:
            prepared: Sequence[Sequence[Any]] = rows
            if datetimes:
                adapt = connection.ops.adapt_datetimefield_value
                prepared = [list(row) for row in rows]
                for row in prepared:
                    for i in datetimes:
                        row[i] = adapt(row[i])
            marks = ", ".join(["%s"] * width)
            cursor.executemany(
                f"INSERT INTO {table} ({column_list}) VALUES ({marks})",  # noqa: S608
                prepared,
            )
