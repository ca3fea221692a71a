"""export_audit --project SLUG [--run RUN_ID]… [--compare RUN_A RUN_B] --out PATH"""

from __future__ import annotations

import os
import tempfile

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.export import AuditExportError, export_stream
from audit.services import audit_package, audit_record


class Command(BaseCommand):
    help = "Write an audit package (evidence-audit/1); prints its id, the manifest's SHA-256."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--run", action="append", dest="runs", help="default: every run")
        parser.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"))
        parser.add_argument("--out", required=True)

    def handle(self, *args, **options) -> None:
        try:
            package = audit_package(
                slug=options["project"], run_ids=options["runs"], compare=options["compare"]
            )
        except LookupError as exc:
            raise CommandError(str(exc)) from None
        target = os.path.abspath(options["out"])
        if not os.path.isdir(os.path.dirname(target)):
            raise CommandError(f"{os.path.dirname(target)}: no such directory")
        # Write beside the target and rename: a failed export leaves no half package.
        handle, partial = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".partial")
        try:
            with os.fdopen(handle, "wb") as out:
                for _ in export_stream(package, out):
                    pass
            os.replace(partial, target)
        except AuditExportError as exc:
            os.unlink(partial)
            raise CommandError(f"export refused: {exc}") from None
        except BaseException:
            os.unlink(partial)
            raise
        audit_record(package=package, user=None)
        self.stdout.write(package.package_id)
