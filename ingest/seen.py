"""What an import accepted in its earlier batches, kept in temporary tables of its connection.

A line may refer to a passage or case declared on any earlier line, however far
back, so the import must remember every ref and case id it accepted, with the
line ("declared twice (first on line N)"), and for a case what a response needs
of it. Kept in Python that was some 4.4 KB per case of the benchmark's bundle,
551 MB of peak RSS at 100,000 cases, and it grew without bound. Kept here it
costs the importing process nothing: each flush asks once per table for what its
lines refer to (`ingest.rules.Rules.settle`) and adds what it accepted.

The tables are temporary: this connection's own, invisible to any other, gone
with the import's transaction when it rolls back and dropped when it ends. The
first flush that has something to add makes them, so an import of one batch
(every bundle of the test suite but a few) never does.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any, NamedTuple

from django.db import IntegrityError, connection, transaction

from evidence.rows import rows_by_key
from ingest.bulk import load_rows

# Named so no table of the schema is shadowed (PostgreSQL looks in pg_temp first).
TABLES = {
    "ingest_seen_passage": ("ref TEXT PRIMARY KEY", "line INTEGER NOT NULL"),
    "ingest_seen_case": (
        "case_id TEXT PRIMARY KEY",
        "line INTEGER NOT NULL",
        "pk BIGINT",
        "expectation_pk BIGINT",
        "fact_ids TEXT NOT NULL",
        "gap_ids TEXT NOT NULL",
    ),  # fmt: skip
    "ingest_seen_response": ("case_id TEXT PRIMARY KEY", "line INTEGER NOT NULL"),
}


class SeenCase(NamedTuple):
    line: int
    pk: int | None
    expectation_pk: int | None
    fact_ids: frozenset[str]
    gap_ids: frozenset[str]


class Seen:
    """The refs, cases and answered cases of the batches already flushed, by key."""

    def __init__(self) -> None:
        self.created = False

    # --- reading ------------------------------------------------------------------------

    def passages(self, refs: Collection[str]) -> dict[str, int]:
        """ref → line of its declaration, for those among `refs` already declared."""
        return dict(self._select("ingest_seen_passage", refs))

    def cases(self, case_ids: Collection[str]) -> dict[str, SeenCase]:
        return {
            case_id: SeenCase(line, pk, expectation_pk, _ids(fact_ids), _ids(gap_ids))
            for case_id, line, pk, expectation_pk, fact_ids, gap_ids in self._select(
                "ingest_seen_case", case_ids
            )
        }

    def responses(self, case_ids: Collection[str]) -> dict[str, int]:
        """case_id → line of its response, for those among `case_ids` already answered."""
        return dict(self._select("ingest_seen_response", case_ids))

    def _select(self, table: str, keys: Collection[str]) -> list[tuple[Any, ...]]:
        if not self.created or not keys:
            return []
        columns = _columns(table)
        return rows_by_key(table, columns[0], keys, columns)

    # --- adding -------------------------------------------------------------------------

    def add_passages(self, rows: Sequence[tuple[str, int]]) -> dict[str, int]:
        """Add (ref, line) declarations; those an earlier batch made stay: ref → its line.

        Adding is also the check: a ref declared twice across batches is rare, so it
        costs a look-up only when the primary key refuses a batch.
        """
        if not self.created:
            self._insert("ingest_seen_passage", rows)
            return {}
        try:
            with transaction.atomic():
                self._insert("ingest_seen_passage", rows)
        except IntegrityError:
            taken = self.passages([ref for ref, _ in rows])
            self._insert("ingest_seen_passage", [row for row in rows if row[0] not in taken])
            return taken
        return {}

    def add_cases(
        self,
        rows: Sequence[tuple[str, int, int | None, int | None, frozenset[str], frozenset[str]]],
    ) -> None:
        """Add cases no earlier batch declared (the rules have made sure)."""
        self._insert(
            "ingest_seen_case",
            [(*row[:4], json.dumps(sorted(row[4])), json.dumps(sorted(row[5]))) for row in rows],
        )

    def add_responses(self, rows: Sequence[tuple[str, int]]) -> None:
        """Add (case_id, line) of responses to cases no earlier batch answered."""
        self._insert("ingest_seen_response", rows)

    def _insert(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        self._create()
        columns = _columns(table)
        load_rows(table, ", ".join(columns), len(columns), rows)

    # --- the tables ---------------------------------------------------------------------

    def _create(self) -> None:
        if self.created:
            return
        with connection.cursor() as cursor:
            for table in TABLES:
                cursor.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in create_statements(connection.vendor):
                cursor.execute(statement)
        self.created = True

    def drop(self) -> None:
        """Drop the tables, once the import no longer needs them (a no-op if never made)."""
        if not self.created:
            return
        with connection.cursor() as cursor:
            for table in TABLES:
                cursor.execute(f"DROP TABLE {table}")
        self.created = False


def create_statements(vendor: str) -> list[str]:
    """CREATE TEMPORARY TABLE of each (the application role may: docs/security.md)."""
    # ON COMMIT DROP on PostgreSQL: the tables never outlive the import's transaction,
    # even should `drop` not be reached. Inside an outer transaction (a test's), `drop`
    # is what keeps the next import from finding them. SQLite keeps a table WITHOUT
    # ROWID in its primary key's b-tree alone: one insert per row instead of two.
    suffix = " ON COMMIT DROP" if vendor == "postgresql" else " WITHOUT ROWID"
    return [
        f"CREATE TEMPORARY TABLE {table} ({', '.join(columns)}){suffix}"
        for table, columns in TABLES.items()
    ]


def _ids(stored: str) -> frozenset[str]:
    return frozenset(json.loads(stored))


def _columns(table: str) -> list[str]:
    return [column.split()[0] for column in TABLES[table]]
