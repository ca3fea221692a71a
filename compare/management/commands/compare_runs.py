"""compare_runs RUN_A [RUN_B] [--project SLUG] [--annotator NAME | --consensus] --json"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from compare.reports import comparison_json
from replay.commands import find_run


class Command(BaseCommand):
    help = "Compare two runs of the same cases (B defaults to A's declared baseline)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run_a")
        parser.add_argument("run_b", nargs="?", help="default: RUN_A's baseline_run_id")
        parser.add_argument("--project")
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--annotator",
            help="use this annotator's newest verdicts (imported:NAME for the imported NAME)",
        )
        which.add_argument("--consensus", action="store_true")
        parser.add_argument("--json", action="store_true", help="JSON output (the default)")

    def handle(self, *args, **options) -> None:
        run_a = find_run(options["project"], options["run_a"])
        run_b_id = options["run_b"] or run_a.baseline_run_id
        if not run_b_id:
            raise CommandError(
                f"{run_a.run_id} declares no baseline; name the run to compare it with",
                returncode=2,
            )
        run_b = find_run(run_a.project.slug, run_b_id)
        if options["run_b"] is None:  # A replays its baseline: the baseline is the "before"
            run_a, run_b = run_b, run_a
        comparison = comparison_json(
            run_a=run_a,
            run_b=run_b,
            annotator=options["annotator"],
            consensus=options["consensus"],
        )
        self.stdout.write(json.dumps(comparison, indent=1, ensure_ascii=False))
