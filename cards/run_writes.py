"""Writes to a run, ordered against reads of its state (`cards.run_state`).

The state of some runs, which keys every cached figure and comparison, is read from the
newest ids of their claim revisions, verdicts and review marks. An id is given when its
row is inserted, not when its transaction commits: a save slow to commit can hold a lower
id than a save made after it and committed first. A state read between the two commits
would stay the same when the slow save commits, and what was cached under it would be
served without that save until the next write (tests/cards/test_run_state_race.py).

So on PostgreSQL every write to a run takes a shared advisory lock on the run before it
inserts anything (writers never wait for each other), and a read of the state takes the
exclusive lock for the statement that reads the ids: it waits for the writes in flight to
commit, and every write after it gets ids above what it read. Writers take the lock before
any row lock of theirs, so a reader, which holds nothing else, is never part of a cycle.
Rows that imports add (snapshots) and leads' unblindings are counted instead: an import's
transaction lasts too long to be waited for. SQLite needs none of it: one writer at a
time, so its ids follow the order of commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from evidence.rows import prepared_cursor

LOCKS = 0x45565252  # the advisory locks' first key: this application's writes to runs


KEYS = 2147483647  # the second key is a run's id modulo the int4 range: two runs sharing
# one only wait for each other's writes a little more often


def run_key(column: str) -> str:
    """The second key, from a run's id column, in a statement with parameters."""
    return f"({column}::bigint %% {KEYS})::int"


def shared_lock(column: str) -> str:
    """The expression a write selects to announce itself, in a statement with parameters
    (for instance beside its row lock: the expression is computed as the row is read,
    below the row lock, so a writer never waits for it while holding a row)."""
    return f"pg_advisory_xact_lock_shared({LOCKS}, {run_key(column)})"


def ordered() -> bool:
    """Whether writes must announce themselves (PostgreSQL; SQLite has one writer)."""
    return connection.vendor == "postgresql"


def announce_write(*, claim_pk: int | None = None, response_pk: int | None = None) -> None:
    """Before a write inserts into the claims, verdicts or review marks of the run of this
    claim (or response), in its transaction: one statement on PostgreSQL, none on SQLite."""
    if not ordered():
        return
    if claim_pk is not None:
        rows, params = "cards_claim c JOIN replay_response r ON r.id = c.response_id", [claim_pk]
        where = "c.id = %s"
    else:
        rows, where, params = "replay_response r", "r.id = %s", [response_pk]
    with prepared_cursor() as cursor:
        cursor.execute(f"SELECT {shared_lock('r.run_id')} FROM {rows} WHERE {where}", params)  # noqa: S608


def lock_for_write(
    tables: str, *, run_column: str, where: str, params: list, of: str | None = None
) -> bool:
    """Lock the row `where` finds until the transaction ends (of the table `of` names, in a
    join), announcing the write to its run in the same statement. PostgreSQL only. Whether
    the row exists."""
    locked = f" OF {of}" if of else ""
    with prepared_cursor() as cursor:
        cursor.execute(
            f"SELECT {shared_lock(run_column)} FROM {tables} WHERE {where} FOR UPDATE{locked}",  # noqa: S608
            params,
        )
        return cursor.fetchone() is not None


@contextmanager
def writes_settled(run_pks: Iterable[int]) -> Iterator[None]:
    """While inside, no write to these runs is in flight and none can begin: a statement
    begun inside reads every id ever given to the runs' rows. Keep it to a statement or
    two: writers wait meanwhile.

    A transaction-level lock (in a transaction of its own, or the caller's, which then
    holds the lock to its end): it ends with the transaction whatever happens, and stays
    on one server connection behind a pooler. Its wait is a statement of its own: one that
    waited inside would read from before the wait (READ COMMITTED).
    """
    # One order of the keys themselves for every reader: no deadlock between two.
    keys = sorted({pk % KEYS for pk in run_pks}) if ordered() else []
    if not keys:
        yield
        return
    locks = ", ".join(f"pg_advisory_xact_lock({LOCKS}, %s)" for _ in keys)
    with transaction.atomic(savepoint=False):
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {locks}", keys)
        yield
