"""Migration operations that make the database itself guard the append-only tables.

Django's constraints cannot say "this row is never changed", so triggers do,
on PostgreSQL and on SQLite alike. The model layer is not trusted with it:
raw SQL, a shell session or a future bug must meet the same refusal.

TRUNCATE is not refused on PostgreSQL: it needs the table owner's rights
(the application's role owns no table in production: `manage.py pg_roles`,
docs/security.md) and it is how the test suite resets transactional tests.
"""

from __future__ import annotations

from django.db.migrations.operations import AlterField
from django.db.migrations.operations.base import Operation

PG_REFUSE_FUNCTION = """
CREATE OR REPLACE FUNCTION evidence_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'append-only table %: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END
$$
"""


def append_only_sql(vendor: str, table: str) -> tuple[list[str], list[str]]:
    """SQL that installs (and removes) the UPDATE/DELETE refusal on one table."""
    if vendor == "postgresql":
        return (
            [
                PG_REFUSE_FUNCTION,
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION evidence_refuse_change()",
            ],
            [f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}"],
        )
    if vendor == "sqlite":
        return (
            [
                f"CREATE TRIGGER {table}_no_{op.lower()} BEFORE {op} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, 'append-only table {table}: {op} refused'); END"
                for op in ("UPDATE", "DELETE")
            ],
            [f"DROP TRIGGER IF EXISTS {table}_no_{op}" for op in ("update", "delete")],
        )
    raise NotImplementedError(f"append-only triggers are not written for {vendor}")


class RunVendorSQL(Operation):
    """Run the SQL written for the current database vendor; no model state changes."""

    reduces_to_sql = True
    reversible = True

    def __init__(self, *, forwards: dict[str, list[str]], backwards: dict[str, list[str]]):
        self.forwards = forwards
        self.backwards = backwards

    def state_forwards(self, app_label, state):
        pass

    def _run(self, statements: dict[str, list[str]], schema_editor) -> None:
        vendor = schema_editor.connection.vendor
        if vendor not in statements:
            raise NotImplementedError(f"no SQL written for {vendor}")
        for sql in statements[vendor]:
            schema_editor.execute(sql, params=None)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        self._run(self.forwards, schema_editor)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        self._run(self.backwards, schema_editor)

    def describe(self) -> str:
        return "Install database guards"


def AppendOnly(*tables: str) -> RunVendorSQL:  # noqa: N802 - reads as an operation
    """Refuse UPDATE and DELETE on these tables, in the database."""
    forwards: dict[str, list[str]] = {}
    backwards: dict[str, list[str]] = {}
    for vendor in ("postgresql", "sqlite"):
        for table in tables:
            up, down = append_only_sql(vendor, table)
            forwards.setdefault(vendor, []).extend(up)
            backwards.setdefault(vendor, []).extend(down)
    return RunVendorSQL(forwards=forwards, backwards=backwards)


APPEND_ONLY_TABLES = {
    "evidence": ["evidence_passage", "evidence_case", "evidence_expectation"],
    "replay": [
        "replay_run",
        "replay_response",
        "replay_retrieval",
        "replay_citation",
        "replay_auditexport",
    ],
    "cards": [
        "cards_claim",
        "cards_claimrevision",
        "cards_verdictrevision",
        "cards_responsereview",
        "cards_unblinding",
    ],
}


class NoOwnIndex(Operation):
    """A foreign key loses its own index (`db_index=False`) where a unique constraint or an
    index that starts with its column serves every look-up by it.

    Only the index is dropped: an `AlterField` would make SQLite copy the table into a new
    one, and the copy has none of the append-only triggers above. The state is the
    `AlterField`'s. Why: the index is one more to write for every row a bulk import
    stores, and on PostgreSQL, with statistics that still believe a snapshot empty (during
    its import), the planner took it for a passage's look-up by snapshot and ref and scanned
    the whole snapshot once per passage.
    """

    reversible = True

    def __init__(self, model_name: str, name: str, field) -> None:
        self.alter = AlterField(model_name=model_name, name=name, field=field)

    def deconstruct(self):
        return (self.__class__.__qualname__, [], {
            "model_name": self.alter.model_name, "name": self.alter.name,
            "field": self.alter.field,
        })  # fmt: skip

    def state_forwards(self, app_label, state):
        self.alter.state_forwards(app_label, state)

    def _own_indexes(self, schema_editor, model) -> list[str]:
        column = model._meta.get_field(self.alter.name).column
        return schema_editor._constraint_names(
            model, [column], index=True, unique=False, primary_key=False
        )

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = from_state.apps.get_model(app_label, self.alter.model_name)
        for name in self._own_indexes(schema_editor, model):
            schema_editor.execute(schema_editor._delete_index_sql(model, name))

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.alter.model_name)
        field = model._meta.get_field(self.alter.name)
        if not self._own_indexes(schema_editor, model):
            schema_editor.execute(schema_editor._create_index_sql(model, fields=[field]))

    def describe(self) -> str:
        return f"Drop the own index of {self.alter.model_name}.{self.alter.name}"
