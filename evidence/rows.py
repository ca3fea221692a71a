"""Model instances from rows of hand-written SQL, as the ORM would have built them.

On the hot paths of review (the case page, a card, a verdict save) building a query
with the ORM cost more CPU than running it: a `select_related` read of one response took
1.7 ms to compile and 0.1 ms to run. Those reads are SQL constants; `Columns` writes one
model's part of their select list and builds instances from a row with the converters
the ORM applies (JSON decoded, SQLite's dates and booleans), so the code above sees
ordinary model instances.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.utils import CursorWrapper
from django.db.models import Model
from django.db.models.expressions import DatabaseDefault

Converter = Callable[[Any, Any, Any], Any]


class Columns:
    """All of a model's columns in a select list (`alias."column", …`), and the instance a
    row's slice of them makes.

    Every concrete field, in the model's order: an instance read this way has nothing
    deferred, so no attribute of it can run a query behind the caller's back.
    """

    def __init__(self, model: type[Model], alias: str, *, raw: tuple[str, ...] = ()):
        """`raw` names fields whose values `values` leaves as the database sent them (a
        JSON text the caller decodes only when it needs it); `build` refuses them."""
        self.model = model
        self.fields = list(model._meta.concrete_fields)
        self.attnames = [field.attname for field in self.fields]
        self.raw = raw
        self.sql = ", ".join(f'{alias}."{field.column}"' for field in self.fields)
        self._converters: dict[str, list[tuple[int, list[Converter], Any]]] = {}

    def __len__(self) -> int:
        return len(self.fields)

    def converters(self, using: str) -> list[tuple[int, list[Converter], Any]]:
        """(column, converters, expression) for the columns that need converting, as
        `SQLCompiler.get_converters` finds them; once per database."""
        if using not in self._converters:
            connection = connections[using]
            found = []
            for i, field in enumerate(self.fields):
                if field.name in self.raw:
                    continue
                col = field.get_col(self.model._meta.db_table)
                chain = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
                if chain:
                    found.append((i, chain, col))
            self._converters[using] = found
        return self._converters[using]

    def values(self, row: Sequence[Any], start: int = 0, using: str = DEFAULT_DB_ALIAS) -> list:
        """The field values of `row[start:start + len(self)]`, converted as the ORM would."""
        return self.values_of([row], start, using)[0]

    def values_of(
        self, rows: Iterable[Sequence[Any]], start: int = 0, using: str = DEFAULT_DB_ALIAS
    ) -> list[list]:
        """`values` of many rows (the connection and converters looked up once)."""
        connection = connections[using]
        converters = self.converters(using)
        end = start + len(self.fields)
        converted = []
        for row in rows:
            values = list(row[start:end])
            for i, chain, col in converters:
                value = values[i]
                for converter in chain:
                    value = converter(value, col, connection)
                values[i] = value
            converted.append(values)
        return converted

    def build(self, row: Sequence[Any], start: int = 0, using: str = DEFAULT_DB_ALIAS) -> Model:
        """The instance of `row[start:start + len(self)]`."""
        if self.raw:
            raise ValueError(f"{', '.join(self.raw)} would be left unconverted in an instance")
        return self.model.from_db(using, self.attnames, self.values(row, start, using))


def prepared_cursor(using: str = DEFAULT_DB_ALIAS) -> CursorWrapper:
    """A cursor whose statements PostgreSQL plans once per connection, not on every run.

    Django sends each statement as text with its values in it (client-side binding), so
    PostgreSQL plans it again each time: the read that opens a card or a save joins eight
    tables, and planning it cost 1.0 ms of the server's CPU against 0.1 ms to run it. This
    cursor binds values on the server and prepares each statement (psycopg keeps the
    connection's prepared statements); Django still wraps it, so it is logged and counted
    as any other. For the hand-written reads and writes of the review pages only: the
    ORM's statements stay as they are. SQLite, or DB_PREPARED_STATEMENTS off (a pooler that
    cannot keep prepared statements), gets Django's own cursor.
    """
    connection = connections[using]
    if connection.vendor != "postgresql" or not settings.DB_PREPARED_STATEMENTS:
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # Django turns psycopg's prepared statements off (None): with a threshold no
        # statement reaches, only those that ask (these) are prepared.
        raw.prepare_threshold = 2**31
    preparing, debug = _preparing_cursor()
    with connection.wrap_database_errors:
        cursor = preparing(raw)
    if connection.queries_logged:
        return debug(cursor, connection)
    return connection.make_cursor(cursor)


@functools.cache
def _preparing_cursor() -> tuple[type, type]:
    """psycopg's server-binding cursor as Django makes it, preparing every statement, and
    Django's logging wrapper for it, which logs the statement with its values written in
    (Django reads them back from a client-binding cursor, which this is not)."""
    from django.db.backends.postgresql.base import CursorDebugWrapper, ServerBindingCursor

    class Preparing(ServerBindingCursor):
        def execute(self, query, params=None, *, prepare=None, binary=None):
            return super().execute(query, params, prepare=True, binary=binary)

    class PreparingDebug(CursorDebugWrapper):
        def execute(self, sql, params=None):
            shown = sql if params is None else self.db.ops.compose_sql(sql, params)
            with self.debug_sql(shown, params):
                return CursorWrapper.execute(self, sql, params)  # not the base's logging

    return Preparing, PreparingDebug


def insert(instance: Model, using: str = DEFAULT_DB_ALIAS) -> Model:
    """INSERT `instance`, every field but its primary key, and give it the key the database
    chose: what `Model.objects.create` runs, without compiling the statement each time (a
    third of a verdict save's CPU in its service). No signals are sent; a field left to its
    `db_default` is refused, because SQLite has no DEFAULT in a VALUES list."""
    with prepared_cursor(using) as cursor:
        cursor.execute(_insert_sql(type(instance)), _insert_values(instance, using))
        instance.pk = cursor.fetchone()[0]
    instance._state.adding, instance._state.db = False, using
    return instance


def _insert_values(instance: Model, using: str) -> list[Any]:
    model, connection = type(instance), connections[using]
    values = []
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue
        value = field.pre_save(instance, True)
        if isinstance(value, DatabaseDefault):
            raise ValueError(f"{model.__name__}.{field.name} is left to its db_default")
        values.append(field.get_db_prep_save(value, connection))
    return values


def insert_then(
    instance: Model, then: str, params: Sequence[Any], using: str = DEFAULT_DB_ALIAS
) -> tuple[Model, int]:
    """`insert(instance)`, then `then` (an UPDATE or DELETE with `%s` placeholders, without
    RETURNING) in the same transaction: the instance with its key, and how many rows `then`
    changed.

    On PostgreSQL both go in one statement, a data-modifying WITH: one round trip, not
    two, on the verdict save's path. Each part sees the rows as they were before the
    statement (PostgreSQL's rule for WITH), so `then` must not read what the INSERT writes.
    Elsewhere the two run one after the other.
    """
    connection = connections[using]
    if connection.vendor != "postgresql":
        insert(instance, using)
        with prepared_cursor(using) as cursor:
            cursor.execute(then, params)
            return instance, cursor.rowcount
    values = _insert_values(instance, using)
    with prepared_cursor(using) as cursor:
        cursor.execute(_insert_then_sql(type(instance), then), [*values, *params])
        instance.pk, changed = cursor.fetchone()
    instance._state.adding, instance._state.db = False, using
    return instance, changed


@functools.cache
def _insert_then_sql(model: type[Model], then: str) -> str:
    return (
        f"WITH inserted AS ({_insert_sql(model)}), changed AS ({then} RETURNING 1)"
        " SELECT (SELECT * FROM inserted), (SELECT count(*) FROM changed)"
    )


@functools.cache
def _insert_sql(model: type[Model]) -> str:
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    return (
        f'INSERT INTO "{model._meta.db_table}" ({", ".join(f'"{f.column}"' for f in fields)})'
        f' VALUES ({", ".join(["%s"] * len(fields))}) RETURNING "{model._meta.pk.column}"'
    )


def instances(row: Sequence[Any], *columns: Columns, using: str = DEFAULT_DB_ALIAS) -> list[Model]:
    """One instance per `Columns`, from a row that selects them one after the other."""
    built, at = [], 0
    for part in columns:
        built.append(part.build(row, at, using))
        at += len(part)
    return built


def rows_by_key(
    table: str,
    key: str,
    keys: Collection[str],
    columns: Sequence[str],
    where: tuple[str, Any] | None = None,
) -> list[tuple[Any, ...]]:
    """The rows of `table` whose `key` is among `keys` (and `where`: (column, value)).

    One index probe per key, however large the table has grown, on both databases, and
    one parameter for all the keys (the import's look-ups of earlier batches, an audit
    package's cited passages: a thousand `IN` parameters cost more to send than to run).
    On PostgreSQL `key = ANY(…)` or a join is planned as a scan of the whole table as
    soon as it holds some 100 times more rows than the keys (no statistics inside an
    import's transaction): 125 ms for 10,000 keys among 1,000,000 rows, per batch, so
    the import grew faster than its bundle. A LIMIT in a LATERAL subquery keeps it from
    being merged into a join: 20-35 ms, whatever the size. SQLite probes the key's
    index for `IN (SELECT value FROM json_each(…))`, one parameter for all the keys.
    """
    if not keys:
        return []
    listed = ", ".join(f"t.{column}" for column in columns)
    also, params = "", []
    if where is not None:
        also, params = f" AND t.{where[0]} = %s", [where[1]]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"SELECT {listed} FROM unnest(%s::text[]) AS k(key) CROSS JOIN LATERAL "  # noqa: S608
                f"(SELECT * FROM {table} t WHERE t.{key} = k.key{also} LIMIT 1) t",
                [list(keys), *params],
            )
        else:
            cursor.execute(
                f"SELECT {listed} FROM {table} t "  # noqa: S608
                f"WHERE t.{key} IN (SELECT value FROM json_each(%s)){also}",
                [json.dumps(list(keys)), *params],
            )
        return cursor.fetchall()


def plain_rows(queryset) -> list[tuple]:
    """The rows of a query of plain columns (numbers, text), as the driver gives them: for
    100,000 rows, Django's per-row converters cost more than reading them. SQLite's
    booleans come as 0 and 1."""
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def plain_chunks(queryset, size: int) -> Iterator[tuple]:
    """`plain_rows`, made into tuples `size` rows at a time from an ordinary cursor.

    Not Django's `.iterator()`: on PostgreSQL outside a transaction it declares a
    server-side cursor WITH HOLD, which stores the whole result on the server before the
    first chunk, then costs a round trip per chunk (docs/performance.md, 3 December). The
    driver holds the whole result here: for reads whose rows all end up in memory anyway."""
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while chunk := cursor.fetchmany(size):
            yield from chunk
