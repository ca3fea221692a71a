"""pg_roles --owner ROLE --app ROLE [--take-ownership] [--print]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction

from evidence.dbroles import all_tables, append_only_tables, roles_sql


class Command(BaseCommand):
    help = (
        "PostgreSQL: create the owner and application roles (when missing) and grant the "
        "application SELECT and INSERT only on the append-only tables. Run as a superuser, "
        "after every migrate (docs/security.md, 'Who owns the tables')."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", required=True, help="owns the tables, runs migrate")
        parser.add_argument("--app", required=True, help="the role the application runs as")
        parser.add_argument(
            "--take-ownership",
            action="store_true",
            help="make --owner the owner of every table (a database migrated as a superuser)",
        )
        parser.add_argument("--print", action="store_true", help="print the SQL, run nothing")

    def handle(self, *args, **options) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("pg_roles is for PostgreSQL; SQLite has no roles")
        with connection.cursor() as cursor:
            tables = all_tables(cursor)
            append_only = append_only_tables(cursor)
        if tables and not append_only:
            # Tables, but none of ours: another database, or one migrated before the triggers.
            raise CommandError(
                f"no append-only table among the {len(tables)} tables here: run migrate first"
            )
        try:
            statements = roles_sql(
                database=connection.settings_dict["NAME"],
                owner=options["owner"],
                app=options["app"],
                tables=tables,
                append_only=append_only,
                take_ownership=options["take_ownership"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if options["print"]:
            self.stdout.write(";\n".join(statements) + ";")
            return
        with transaction.atomic(), connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)
        if not tables:
            # A new database: the roles and default privileges first, then migrate as the
            # owner, then this again for the grants on the tables migrate created.
            self.stdout.write(
                f"{options['owner']} and {options['app']} ready on an empty database: run "
                f"migrate as {options['owner']}, then pg_roles again"
            )
            return
        self.stdout.write(
            f"{options['app']}: SELECT, INSERT on {len(append_only)} append-only tables, "
            f"all of {len(tables) - len(append_only)} others; {options['owner']} owns migrations"
        )
