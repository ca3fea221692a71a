"""convert_bundle --from ragas|alce|jsonl-simple INPUT --out BUNDLE [--run-id …] [--snapshot …]"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import IO

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ingest.convert import (
    FORMATS,
    SNAPSHOT_CHARS,
    UNKNOWN_TIME,
    ConversionInvalid,
    convert_bundle,
    default_run_id,
    snapshot_name,
)
from ingest.services import limits_from_settings


class Command(BaseCommand):
    help = "Convert a Ragas, ALCE or jsonl-simple file into an evidence bundle (JSONL)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--from", dest="fmt", required=True, choices=sorted(FORMATS))
        parser.add_argument("input", help="the file to convert, .gz accepted, or - for stdin")
        parser.add_argument("--out", required=True, help="the bundle to write, or - for stdout")
        parser.add_argument("--run-id", help="default: the input's file name without extension")
        parser.add_argument("--snapshot", default="", help="collection snapshot (default: FMT)")
        parser.add_argument(
            "--created-at", default=UNKNOWN_TIME, help=f"RFC 3339 time (default {UNKNOWN_TIME})"
        )
        parser.add_argument("--label", default="", help="the run's human title")

    def handle(self, *args, **options) -> None:
        fmt, path, out_path = options["fmt"], options["input"], options["out"]
        run_id = options["run_id"] or default_run_id("" if path == "-" else path, fmt)
        try:
            options["snapshot"] = snapshot_name(options["snapshot"])
        except ValueError:
            raise CommandError(
                f"--snapshot holds at most {SNAPSHOT_CHARS} characters, none a control character"
            ) from None
        with ExitStack() as stack:
            if path == "-":
                source = sys.stdin.buffer
            else:
                try:
                    source = stack.enter_context(open(path, "rb"))  # noqa: SIM115
                except OSError as exc:
                    raise CommandError(f"{path}: {exc.strerror}") from None
            if out_path == "-":
                lines = self.convert(options, source, sys.stdout.buffer, run_id=run_id)
                return
            # Written beside the target and renamed when whole: a refused input leaves none.
            target = Path(out_path)
            try:
                out = stack.enter_context(
                    tempfile.NamedTemporaryFile(  # noqa: SIM115
                        dir=target.parent, prefix=f".{target.name}.", delete=False
                    )
                )
            except OSError as exc:
                raise CommandError(f"{out_path}: {exc.strerror}") from None
            try:
                lines = self.convert(options, source, out, run_id=run_id)
            except BaseException:
                out.close()
                os.unlink(out.name)
                raise
            out.close()
            os.replace(out.name, target)
        self.stdout.write(f"{run_id}: {lines} lines written to {out_path}")

    def convert(self, options: dict, source: IO[bytes], out: IO[bytes], *, run_id: str) -> int:
        try:
            return convert_bundle(
                fmt=options["fmt"],
                source=source,
                out=out,
                run_id=run_id,
                snapshot=options["snapshot"],
                created_at=options["created_at"],
                label=options["label"],
                limits=limits_from_settings(),
            )
        except ConversionInvalid as exc:
            for line in exc.lines():
                self.stderr.write(line)
            name = os.path.basename(options["input"])
            raise CommandError(f"{name}: not converted ({len(exc.problems)} problem(s))") from None
        except OSError as exc:
            raise CommandError(f"{options['out']}: {exc.strerror}") from None
