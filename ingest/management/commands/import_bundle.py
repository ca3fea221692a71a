"""import_bundle PATH [--project SLUG] [--dry-run]: store one bundle, all or nothing."""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import ExitStack

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evidence.selectors import ProjectChoiceError, project_for_command
from ingest.services import BundleInvalid, bundle_import


class Command(BaseCommand):
    help = "Import one evidence bundle (JSONL, .gz, or - for stdin) into a project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="bundle file, .gz accepted, or - for standard input")
        parser.add_argument("--project", help="project slug; created when it does not exist")
        parser.add_argument("--dry-run", action="store_true", help="validate only, store nothing")
        parser.add_argument(
            "--new-expectation-version",
            action="store_true",
            help="record a changed case expectation as a new version instead of refusing it",
        )
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")

    def handle(self, *args, **options) -> None:
        slug = options["project"]
        if not slug:
            try:
                slug = project_for_command(slug=None).slug
            except ProjectChoiceError as exc:
                raise CommandError(str(exc), returncode=2) from None
        path = options["path"]
        with ExitStack() as stack:
            if path == "-":
                stream, total, name = sys.stdin.buffer, None, "<stdin>"
            else:
                try:
                    stream = stack.enter_context(open(path, "rb"))  # noqa: SIM115
                except OSError as exc:
                    raise CommandError(f"{path}: {exc.strerror}") from None
                total, name = os.fstat(stream.fileno()).st_size, os.path.basename(path)
            progress = _progress_bar(total) if sys.stderr.isatty() else None
            try:
                summary = bundle_import(
                    stream=stream,
                    project_slug=slug,
                    create_project=True,
                    source_name=name,
                    dry_run=options["dry_run"],
                    new_expectation_versions=options["new_expectation_version"],
                    progress=progress,
                )
            except BundleInvalid as exc:
                if progress:
                    sys.stderr.write("\n")
                for line in exc.lines():
                    self.stderr.write(line)
                raise CommandError(
                    f"{name}: refused, nothing was stored ({len(exc.problems)} problem(s))"
                ) from None
        if progress:
            sys.stderr.write("\n")
        if options["json"]:
            self.stdout.write(json.dumps(summary.as_dict(), indent=1, ensure_ascii=False))
            return
        verb = "checked (dry run, nothing stored)" if summary.dry_run else "imported"
        self.stdout.write(f"{summary.run_id}: {verb} into project {summary.project}")
        self.stdout.write(
            f"  passages {summary.passages_new} new, {summary.passages_reused} reused; "
            f"cases {summary.cases_new} new, {summary.cases_reused} reused"
            + (
                f" ({summary.expectation_versions_new} new expectation versions)"
                if summary.expectation_versions_new
                else ""
            )
        )
        self.stdout.write(
            f"  responses {summary.responses}, retrieved rows {summary.retrieved}, "
            f"citations {summary.citations}, claims {summary.claims}, verdicts {summary.verdicts}"
        )
        for drift in summary.drift[:20]:
            self.stdout.write(
                f"  drift: {drift['ref']} has another text in snapshot {drift['snapshot']} "
                f"({drift['sha256'][:12]} there, {drift['this_sha256'][:12]} here)"
            )
        if len(summary.drift) > 20:
            self.stdout.write(f"  … and {len(summary.drift) - 20} more drifted refs")


def _progress_bar(total: int | None):
    started = time.monotonic()

    def report(done: int, lines: int, stored: int) -> None:
        rate = lines / max(time.monotonic() - started, 1e-6)
        if total:
            share = min(done / total, 1.0)
            bar = "#" * int(share * 30)
            sys.stderr.write(
                f"\r[{bar:<30}] {share:5.1%}  {done / 1e6:,.1f}/{total / 1e6:,.1f} MB"
                f"  {lines:,} lines  {rate:,.0f} lines/s"
            )
        else:
            sys.stderr.write(f"\r{done / 1e6:,.1f} MB  {lines:,} lines  {rate:,.0f} lines/s")
        sys.stderr.flush()

    return report
