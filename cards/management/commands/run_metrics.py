"""run_metrics RUN_ID [--project SLUG] [--annotator NAME | --consensus] --json"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandParser

from cards.reports import run_metrics_json
from replay.commands import find_run


class Command(BaseCommand):
    help = "Print a run's figures (metrics.md) as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run_id")
        parser.add_argument("--project")
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--annotator",
            help="use this annotator's newest verdicts (imported:NAME for the imported NAME)",
        )
        which.add_argument("--consensus", action="store_true", help="strict-majority label")
        parser.add_argument("--json", action="store_true", help="JSON output (the default)")

    def handle(self, *args, **options) -> None:
        run = find_run(options["project"], options["run_id"])
        figures = run_metrics_json(
            run=run, annotator=options["annotator"], consensus=options["consensus"]
        )
        self.stdout.write(json.dumps(figures, indent=1, ensure_ascii=False))
