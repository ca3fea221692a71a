"""verify_audit PATH [--id PACKAGE_ID] [--key KEYFILE]: the checks of the package's verify.py."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.verify import Failure, read_key, summary, verify


class Command(BaseCommand):
    help = "Check an audit package: OK and exit 0, or the first failure and exit 1."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--id", help="the package id recorded at export")
        parser.add_argument(
            "--key", metavar="KEYFILE", help="the signing key, to check anchor.json"
        )

    def handle(self, *args, **options) -> None:
        try:
            key = read_key(options["key"]) if options["key"] else None
            counts = verify(options["path"], options["id"], key)
        except Failure as failure:
            raise CommandError(f"FAIL {failure}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise CommandError(f"FAIL package: unexpected structure: {exc!r}") from None
        except Exception as exc:  # noqa: BLE001 - a damaged package never ends in a traceback
            raise CommandError(f"FAIL package: cannot be checked: {exc!r}") from None
        self.stdout.write(summary(counts))
