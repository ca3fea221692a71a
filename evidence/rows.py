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
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
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


def insert(instance: Model, using: str = DEFAULT_DB_ALIAS) -> Model:
    """INSERT `instance`, every field but its primary key, and give it the key the database
    chose: what `Model.objects.create` runs, without compiling the statement each time (a
    third of a verdict save's CPU in its service). No signals are sent; a field left to its
    `db_default` is refused, because SQLite has no DEFAULT in a VALUES list."""
    model = type(instance)
    connection = connections[using]
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    values = []
    for field in fields:
        value = field.pre_save(instance, True)
        if isinstance(value, DatabaseDefault):
            raise ValueError(f"{model.__name__}.{field.name} is left to its db_default")
        values.append(field.get_db_prep_save(value, connection))
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(model), values)
        instance.pk = cursor.fetchone()[0]
    instance._state.adding, instance._state.db = False, using
    return instance


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
