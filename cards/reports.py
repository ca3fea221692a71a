"""The JSON of cli.md's `run_metrics` and `run_agreement`, one function each.

The commands print it and the API serves it: both call these, so the two cannot drift
(tests/api/test_api_reads.py compares them).
"""

from __future__ import annotations

from typing import Any

from cards.agreement import run_agreement
from cards.annotators import roster_of
from cards.metrics import Source, run_metrics
from replay.models import Run


def run_metrics_json(
    *, run: Run, annotator: str | None = None, consensus: bool = False
) -> dict[str, Any]:
    """A run's figures with `--annotator NAME`, `--consensus` or neither (the default)."""
    source = Source.from_options(
        annotator=annotator, consensus=consensus, roster=roster_of(runs=[run])
    )
    return run_metrics(run=run, source=source).as_json()


def run_agreement_json(*, run: Run, annotators: list[str] | None = None) -> dict[str, Any]:
    """Agreement between `annotators` (default: all who labelled any claim of the run)."""
    return run_agreement(run=run, annotators=annotators or None).as_json()
