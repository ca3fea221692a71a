"""metrics/RUN.json and replay/A__B.json: the figures of metrics.md, as the commands print them."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from audit.package import Package
from cards.metrics import Totals, gc_paused, iter_response_figures, stored_run_figures, to_json
from compare.comparison import compare_runs
from evidence.canonical import canonical_json
from replay.models import Run

BATCH = 500  # responses' figures per chunk of the file


def metrics_chunks(*, package: Package, run: Run) -> Iterator[bytes]:
    """metrics/RUN.json, streamed: the canonical JSON of `run_metrics`, built response by
    response (keys sorted: per_response, run, run_id, verdicts_from). The claims'
    pre-check hints are kept for the cards, nothing else. The default source's figures
    are read from the stored rows (`stored_run_figures`); another source's claim figures
    are computed, and the rest (retrieval figures, pre-checks) read from the stored rows,
    as `run_metrics` does."""
    source = package.source
    hints = package.hints.setdefault(run.pk, {})
    stored = stored_run_figures(run=run) if source.mode == "default" else None
    totals = Totals()
    responses = (
        stored.per_response
        if stored
        else iter_response_figures(run=run, source=source, stored=True)
    )
    yield b'{"per_response":['
    responses, first = iter(responses), True
    while True:
        # The collector paused while a batch is made (many objects, no cycles:
        # cards.metrics.gc_paused), never while the caller holds the chunk: the zip, a
        # download's socket and a worker's other threads run with it.
        with gc_paused():
            parts = []
            for figures in itertools.islice(responses, BATCH):
                if stored is None:
                    totals.add(figures)
                if figures["prechecks"]["claims"]:
                    hints[figures["case_id"]] = figures["prechecks"]["claims"]
                parts.append(canonical_json(to_json(figures)))
        if not parts:
            break
        yield (b"" if first else b",") + b",".join(parts)
        first = False
    result = stored.totals if stored else totals.result()
    yield b'],"run":' + canonical_json(to_json(result))
    yield b',"run_id":' + canonical_json(run.run_id)
    yield b',"verdicts_from":' + canonical_json(source.label) + b"}\n"


def comparison(*, package: Package, run_a: Run, run_b: Run) -> dict:
    """replay/A__B.json: what `compare_runs A B --json` prints, with the package's source."""
    return compare_runs(run_a=run_a, run_b=run_b, source=package.source).as_json()
