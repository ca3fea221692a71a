"""The JSON of cli.md's `compare_runs`: the command prints it and the API serves it."""

from __future__ import annotations

from typing import Any

from cards.annotators import Roster, roster_of
from cards.metrics import Source
from compare.comparison import compare_runs
from replay.models import Run


def comparison_json(
    *, run_a: Run, run_b: Run, annotator: str | None = None, consensus: bool = False
) -> dict[str, Any]:
    """Run A (before) against run B (after), with `--annotator NAME`, `--consensus` or neither."""
    # Who a name means, for an annotator only: the roster reads every verdict of both runs.
    roster = roster_of(runs=[run_a, run_b]) if annotator else Roster()
    source = Source.from_options(annotator=annotator, consensus=consensus, roster=roster)
    return compare_runs(run_a=run_a, run_b=run_b, source=source).as_json()
