"""The application's PostgreSQL role owns nothing and cannot go around the append-only triggers.

Roles are cluster-wide: each test makes its own, with a unique name, through its own
superuser connection (the test's transaction would hide them from a second connection),
and drops them, and everything granted to them, when it ends.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from evidence.dbroles import LOCKED, all_tables, append_only_tables, roles_sql
from ingest.seen import create_statements

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="roles are PostgreSQL's; SQLite has none"
)


def connect(user: str | None = None) -> psycopg.Connection:
    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        dbname=settings["NAME"],
        user=user or settings["USER"] or None,
        password=None if user else settings["PASSWORD"] or None,
        autocommit=True,
    )


@pytest.fixture
def roles(db) -> Iterator[tuple[str, str]]:
    suffix = uuid.uuid4().hex[:12]
    owner, app = f"test_owner_{suffix}", f"test_app_{suffix}"
    with connect() as admin, admin.cursor() as cursor:
        statements = roles_sql(
            database=connection.settings_dict["NAME"], owner=owner, app=app,
            tables=all_tables(cursor), append_only=append_only_tables(cursor),
        )  # fmt: skip
        try:
            for sql in statements:
                cursor.execute(sql)
            yield owner, app
        finally:
            for role in (app, owner):
                cursor.execute(f"DROP OWNED BY {role}")
                cursor.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.fixture
def as_app(roles) -> Iterator[psycopg.Connection]:
    with connect(roles[1]) as app:
        yield app


def refused(app: psycopg.Connection, sql: str) -> str:
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as caught, app.cursor() as cursor:
        cursor.execute(sql)
    return str(caught.value)


# Each with a column other than `id` (the only one a locked table lets the app role name).
COLUMNS = {
    "cards_claimrevision": "reason", "cards_verdictrevision": "reason",
    "replay_auditexport": "package_id", "cards_claim": "key",
}  # fmt: skip
APPEND_ONLY = tuple(COLUMNS)


def test_the_append_only_tables_are_read_from_the_triggers(db):
    with connection.cursor() as cursor:
        found = append_only_tables(cursor)
    assert set(APPEND_ONLY) | {"evidence_passage", "replay_run"} <= set(found)
    assert "django_session" not in found


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_the_app_role_may_select_and_insert_on_an_append_only_table(as_app, table):
    with as_app.cursor() as cursor:
        cursor.execute(
            "SELECT has_table_privilege(current_user, %s, 'SELECT'), "
            "has_table_privilege(current_user, %s, 'INSERT')",
            [table, table],
        )
        assert cursor.fetchone() == (True, True)
        cursor.execute(f"SELECT count(*) FROM {table}")


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_the_app_role_is_refused_update_delete_and_truncate(as_app, table):
    column = COLUMNS[table]
    assert "permission denied" in refused(as_app, f"UPDATE {table} SET {column} = {column}")
    assert "permission denied" in refused(as_app, f"DELETE FROM {table}")
    assert "permission denied" in refused(as_app, f"TRUNCATE {table} CASCADE")


def test_the_app_role_changes_no_column_but_the_id_of_a_locked_table(as_app):
    # SELECT … FOR UPDATE needs the UPDATE privilege on one column: `id`, which the trigger
    # still refuses to change. Any other column is refused by privilege.
    with as_app.cursor() as cursor:
        for table in LOCKED:
            cursor.execute(f"SELECT id FROM {table} LIMIT 1 FOR UPDATE")
    assert "permission denied" in refused(as_app, "UPDATE cards_claim SET key = key")


def test_the_app_role_cannot_turn_the_triggers_off(as_app):
    assert "session_replication_role" in refused(as_app, "SET session_replication_role = replica")
    for table in APPEND_ONLY:
        assert "must be owner" in refused(as_app, f"ALTER TABLE {table} DISABLE TRIGGER ALL")
        assert "must be owner" in refused(as_app, f"DROP TRIGGER {table}_append_only ON {table}")


def test_the_app_role_creates_no_table_and_owns_nothing(as_app, roles):
    assert "permission denied" in refused(as_app, "CREATE TABLE public.mine (id int)")
    with as_app.cursor() as cursor:
        cursor.execute(
            "SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles "
            "WHERE rolname = current_user"
        )
        assert cursor.fetchone() == (False, False, False, False)
        cursor.execute(
            "SELECT count(*) FROM pg_class WHERE relowner = "
            "(SELECT oid FROM pg_roles WHERE rolname = current_user)"
        )
        assert cursor.fetchone() == (0,)


def test_the_app_role_may_make_the_temporary_tables_of_an_import(as_app):
    # A long import keeps what earlier batches declared in them (ingest.seen).
    with as_app.transaction(), as_app.cursor() as cursor:
        for statement in create_statements("postgresql"):
            cursor.execute(statement)
        cursor.execute("INSERT INTO ingest_seen_passage VALUES ('D-01@v1#p1', 2)")
        cursor.execute("SELECT line FROM ingest_seen_passage")
        assert cursor.fetchone() == (2,)


def test_the_app_role_keeps_every_right_on_the_other_tables(as_app):
    with as_app.cursor() as cursor:
        cursor.execute(
            "SELECT has_table_privilege(current_user, 'django_session', 'UPDATE, DELETE'), "
            "has_table_privilege(current_user, 'django_migrations', 'INSERT')"
        )
        assert cursor.fetchone() == (True, False)


def test_the_command_prints_its_sql_and_refuses_one_role_for_both(db):
    out = io.StringIO()
    call_command("pg_roles", "--owner", "ev_owner", "--app", "ev_app", "--print", stdout=out)
    sql = out.getvalue()
    assert "GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO ev_app;" in sql
    assert 'GRANT UPDATE, DELETE ON public."cards_claimrevision"' not in sql
    assert "OWNER TO" not in sql
    with pytest.raises(CommandError, match="two roles"):
        call_command("pg_roles", "--owner", "ev", "--app", "ev", "--print")
    with pytest.raises(CommandError, match="role name"):
        call_command("pg_roles", "--owner", "ev_owner", "--app", "ev; DROP", "--print")


def test_the_command_can_hand_every_table_to_the_owner(db):
    out = io.StringIO()
    call_command(
        "pg_roles", "--owner", "ev_owner", "--app", "ev_app", "--take-ownership", "--print",
        stdout=out,
    )  # fmt: skip
    assert 'ALTER TABLE public."cards_claimrevision" OWNER TO ev_owner;' in out.getvalue()
