"""export_audit --project SLUG [--run RUN_ID]… [--compare RUN_A RUN_B]
[--annotator NAME | --consensus] --out PATH"""

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
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--annotator", help="cards and figures from this annotator's newest verdicts"
        )
        which.add_argument("--consensus", action="store_true", help="strict-majority label")
        parser.add_argument("--out", required=True)

    def handle(self, *args, **options) -> None:
        try:
            package = audit_package(
                slug=options["project"],
                run_ids=options["runs"],
                compare=options["compare"],
                source=(
                    f"annotator:{options['annotator']}"
                    if options["annotator"]
                    else "consensus"
                    if options["consensus"]
                    else None
                ),
            )
        except LookupError as exc:
            raise CommandError(str(exc)) from None
        target = os.path.abspath(options["out"])
        folder = os.path.dirname(target)
        # Checked before anything is written: cli.md wants one line and exit 1, not a traceback.
        if os.path.isdir(target):
            raise CommandError(f"{target}: is a directory, not a file")
        if not os.path.isdir(folder):
            raise CommandError(f"{folder}: no such directory")
        # Write beside the target and rename: a failed export leaves no half package.
        try:
            handle, partial = tempfile.mkstemp(dir=folder, suffix=".partial")
        except OSError as exc:
            raise CommandError(f"{folder}: cannot write here: {exc.strerror}") from None
        try:
            with os.fdopen(handle, "wb") as out:
                for _ in export_stream(package, out):
                    pass
            os.replace(partial, target)
        except AuditExportError as exc:
            os.unlink(partial)
            raise CommandError(f"export refused: {exc}") from None
        except OSError as exc:  # a full disk, a target the system will not replace …
            os.unlink(partial)
            raise CommandError(f"{target}: cannot write the package: {exc.strerror}") from None
        except BaseException:
            os.unlink(partial)
            raise
        audit_record(package=package, user=None)
        self.stdout.write(package.package_id)
