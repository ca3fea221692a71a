"""PostgreSQL roles: the application owns nothing, migrations run as the tables' owner.

The append-only triggers stop whoever cannot turn them off. On PostgreSQL that is
anyone who neither owns the table (ALTER TABLE … DISABLE TRIGGER, TRUNCATE) nor is a
superuser (SET session_replication_role = replica). So the application connects as a role
that owns nothing and may only SELECT and INSERT on the append-only tables; a second role
owns the tables and runs the migrations; only a database administrator uses a superuser.

The one exception: a row lock (SELECT … FOR UPDATE) needs the UPDATE privilege on one
column, and the services lock a claim, a response or a run before they add to its chain
(cards.services.guards). The app role gets UPDATE on those tables' `id` column only,
which the trigger still refuses to change.
"""

from __future__ import annotations

import re

SCHEMA = "public"
# Append-only tables the services lock with SELECT … FOR UPDATE (docstring).
LOCKED = ("cards_claim", "replay_response", "replay_run")
# Written by `migrate` alone: the application only reads it.
READ_ONLY = ("django_migrations",)
ROLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def append_only_tables(cursor) -> list[str]:
    """The tables whose append-only trigger (evidence.dbguards) is installed, from the catalog."""
    cursor.execute(
        "SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND NOT t.tgisinternal AND t.tgname = c.relname || '_append_only' "
        "ORDER BY 1",
        [SCHEMA],
    )
    return [name for (name,) in cursor.fetchall()]


def all_tables(cursor) -> list[str]:
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1", [SCHEMA])
    return [name for (name,) in cursor.fetchall()]


def roles_sql(
    *,
    database: str,
    owner: str,
    app: str,
    tables: list[str],
    append_only: list[str],
    take_ownership: bool = False,
) -> list[str]:
    """The statements that create both roles (when missing) and set the app role's grants.

    Idempotent: run after every `migrate`, so new tables get their grants. New tables
    get SELECT and INSERT by default (never UPDATE or DELETE): a table added later is
    append-only for the application until this runs again, which fails safe.
    """
    for name in (owner, app):
        if not ROLE_NAME.fullmatch(name):
            raise ValueError(f"role name {name!r}: lower-case letters, digits and _ only")
    if owner == app:
        raise ValueError("the owner and the application need two roles")
    db = quote(database)
    mutable = [t for t in tables if t not in append_only and t not in READ_ONLY]
    statements = [
        _create_role(owner, "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION"),
        _create_role(
            app, "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT"
        ),
        # Whoever created them earlier: the app role is never a member of anything.
        f"ALTER ROLE {app} NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS",
        f"GRANT CONNECT, TEMPORARY ON DATABASE {db} TO {owner}, {app}",
        f"GRANT USAGE, CREATE ON SCHEMA {SCHEMA} TO {owner}",
        f"GRANT USAGE ON SCHEMA {SCHEMA} TO {app}",
        f"REVOKE CREATE ON SCHEMA {SCHEMA} FROM PUBLIC",
    ]
    if take_ownership:
        # Tables migrated earlier by a superuser: their owner becomes the owner role (the
        # sequences of identity columns follow their tables), and so does the trigger's function.
        statements += [f"ALTER TABLE {SCHEMA}.{quote(t)} OWNER TO {owner}" for t in tables]
        statements.append(f"ALTER FUNCTION {SCHEMA}.evidence_refuse_change() OWNER TO {owner}")
    statements += [
        f"REVOKE ALL ON ALL TABLES IN SCHEMA {SCHEMA} FROM {app}",
        f"GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA {SCHEMA} TO {app}",
        *(f"REVOKE INSERT ON {SCHEMA}.{quote(t)} FROM {app}" for t in READ_ONLY if t in tables),
        *(f"GRANT UPDATE, DELETE ON {SCHEMA}.{quote(t)} TO {app}" for t in mutable),
        *(f"GRANT UPDATE (id) ON {SCHEMA}.{quote(t)} TO {app}" for t in LOCKED if t in tables),
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {SCHEMA} TO {app}",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA {SCHEMA} "
        f"GRANT SELECT, INSERT ON TABLES TO {app}",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA {SCHEMA} "
        f"GRANT USAGE, SELECT ON SEQUENCES TO {app}",
    ]
    return statements


def _create_role(name: str, options: str) -> str:
    # CREATE ROLE has no IF NOT EXISTS. No password here: the administrator sets it
    # (`\password NAME` in psql), so it never appears in a command line or a log.
    return (
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{name}') THEN "
        f"CREATE ROLE {name} {options}; END IF; END $$"
    )


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
