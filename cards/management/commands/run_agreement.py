"""run_agreement RUN_ID [--project SLUG] [--annotators A B …] --json"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandParser

from cards.reports import run_agreement_json
from replay.commands import find_run


class Command(BaseCommand):
    help = "Print the agreement between annotators on a run's claims as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run_id")
        parser.add_argument("--project")
        parser.add_argument(
            "--annotators",
            nargs="+",
            help="default: all who labelled any claim (imported:NAME for the imported NAME)",
        )
        parser.add_argument("--json", action="store_true", help="JSON output (the default)")

    def handle(self, *args, **options) -> None:
        run = find_run(options["project"], options["run_id"])
        agreement = run_agreement_json(run=run, annotators=options["annotators"])
        self.stdout.write(json.dumps(agreement, indent=1, ensure_ascii=False))
