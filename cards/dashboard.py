"""What the run dashboard draws: bars and interval marks as numbers, drawn by the template."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from cards.figures import CLAIM_FIGURES
from cards.metrics import RunFigures, kept_run_metrics, run_metrics
from cards.models import Support
from cards.run_state import kept
from cards.stats import Proportion, half_width, sample_size, wilson
from cards.verdicts import LABELS, Source
from evidence.spreadsheet import spreadsheet_cell
from replay.models import Run

FIGURE_TITLES = {
    "support": _("Support S (supported / claims)"),
    "support_or_partial": _("Supported or partial"),
    "support_assessed": _("Support, assessed claims only"),
    "coverage": _("Coverage U (required facts supported)"),
    "citation_presence": _("Citation presence"),
    "citation_recall": _("Citation recall"),
    "citation_precision": _("Citation precision"),
    "honest_misses": _("Honest misses (known gaps declared)"),
}
LABEL_TITLES = {
    **dict(Support.choices), "unreviewed": _("Unreviewed"), "no_consensus": _("No consensus")
}  # fmt: skip
# The proportions of each k, in the order of metrics.md.
RETRIEVAL_PROPORTIONS = ("passage_recall", "doc_recall", "fact_evidence_recall")
WIDTH = 400  # the drawing width of bars and interval plots, in SVG units


@dataclass(frozen=True)
class Segment:
    label: str
    title: str
    count: int
    x: float
    width: float


@dataclass(frozen=True)
class IntervalRow:
    name: str
    title: str
    micro: Proportion
    low: float | None
    high: float | None
    macro: dict | None

    @property
    def x(self) -> float | None:
        return None if self.micro.value is None else self.micro.value * WIDTH

    @property
    def x_low(self) -> float | None:
        return None if self.low is None else self.low * WIDTH

    @property
    def x_high(self) -> float | None:
        return None if self.high is None else self.high * WIDTH

    @property
    def x_macro(self) -> float | None:
        return None if not self.macro else self.macro["value"] * WIDTH


def verdict_bar(figures: RunFigures) -> list[Segment]:
    counts = figures.totals["verdicts"]
    total = sum(counts.values())
    segments, x = [], 0.0
    for label in (*LABELS, "unreviewed", "no_consensus"):
        count = counts[label]
        if not count:
            continue
        width = WIDTH * count / total
        segments.append(Segment(label, LABEL_TITLES[label], count, x, width))
        x += width
    return segments


def verdict_counts(figures: RunFigures) -> list[tuple[str, str, int]]:
    counts = figures.totals["verdicts"]
    return [(label, title, counts[label]) for label, title in LABEL_TITLES.items()]


def interval_rows(figures: RunFigures) -> list[IntervalRow]:
    rows = []
    for name in CLAIM_FIGURES:
        micro: Proportion = figures.totals["micro"][name]
        low = high = None
        if micro.defined:
            low, high = wilson(micro.k, micro.n)
        rows.append(
            IntervalRow(name, FIGURE_TITLES[name], micro, low, high, figures.totals["macro"][name])
        )
    return rows


def retrieval_table(figures: RunFigures) -> list[dict]:
    micro = figures.totals["micro"]
    ks = sorted({int(k.split("@")[1]) for k in micro if k.startswith("passage_recall@")})
    names = ("passage_recall", "doc_recall", "fact_evidence_recall", "hit")
    return [{"k": k, "cells": [micro.get(f"{name}@{k}") for name in names]} for k in ks]


class CaseRows(Sequence):
    """The per-case table's rows, made when asked: a page of 50 of the stored figures reads
    50 responses (`cards.metrics.StoredResponses`), not the run."""

    def __init__(self, figures: RunFigures):
        self.per_response = figures.per_response

    def __len__(self) -> int:
        return len(self.per_response)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [_case_row(r) for r in self.per_response[index]]
        return _case_row(self.per_response[index])


def case_rows(figures: RunFigures) -> CaseRows:
    return CaseRows(figures)


# What `_case_row` reads of a response's figures.
_CASE_KEYS = ("case_id", "status", "claims", "support", "coverage", "citation_presence", "hit@3")


def page_figures(*, run: Run, source: Source, state: str) -> RunFigures:
    """The figures the dashboard shows, kept per state of the run (`cards.run_state`).

    The default source's are `kept_run_metrics`. Another source's are computed from the
    revisions (seconds at 10,000 cases), and what is kept of them is what the page shows:
    the totals, the pre-check counts and each case's row of the per-case table, a fraction
    of the whole (the downloads compute the whole again)."""
    if source.mode == "default":
        return kept_run_metrics(run=run, source=source, state=state)

    def computed() -> RunFigures:
        figures = run_metrics(run=run, source=source)
        rows = [
            {key: r.get(key) for key in _CASE_KEYS}
            | {"prechecks": {"response": list(r["prechecks"]["response"])}}
            for r in figures.per_response
        ]
        return RunFigures(run.run_id, source, rows, figures.totals, precheck_counts(figures))

    return kept(state=state, part=f"page:{source.key}", compute=computed)


def _case_row(r: dict) -> dict:
    return {
        "case_id": r["case_id"],
        "status": r["status"],
        "claims": r["claims"],
        "cells": [r["support"], r["coverage"], r["citation_presence"]],
        "hit3": r.get("hit@3"),
        "hints": sorted(r["prechecks"]["response"]),
    }


def precheck_counts(figures: RunFigures) -> dict[str, int]:
    if figures.hint_counts is not None:
        return figures.hint_counts
    counts: dict[str, int] = {}
    for response in figures.per_response:
        for code in response["prechecks"]["response"]:
            counts[code] = counts.get(code, 0) + 1
        for codes in response["prechecks"]["claims"].values():
            for code in codes:
                counts[f"{code} (claims)"] = counts.get(f"{code} (claims)", 0) + 1
    return dict(sorted(counts.items()))


@dataclass(frozen=True)
class SampleSize:
    margin: float
    confidence: float
    needed: int
    current_n: int
    current_half_width: float | None


def sample_size_help(*, margin: float, confidence: float, current_n: int) -> SampleSize:
    return SampleSize(
        margin=margin,
        confidence=confidence,
        needed=sample_size(margin, confidence),
        current_n=current_n,
        current_half_width=half_width(current_n, confidence),
    )


def figures_csv(figures: RunFigures) -> str:
    """One row per response: each proportion as k and n (never only a percentage).

    The columns are those of every response, not of the first: recall@k exists for
    k = len(retrieved), which differs between responses. Undefined (n = 0, or no such k
    for this response) is an empty cell, as it is null in the JSON.
    """
    ks = sorted(
        {int(name.split("@")[1]) for r in figures.per_response for name in r if "recall@" in name}
    )
    retrieval = [f"{name}@{k}" for k in ks for name in RETRIEVAL_PROPORTIONS]
    proportions = [*CLAIM_FIGURES, *retrieval]
    header = ["case_id", "status", "claims", *(f"verdicts_{label}" for label in LABEL_TITLES)]
    for name in proportions:
        header += [f"{name}_k", f"{name}_n"]
    header += ["invented_over_gap", "context_precision", "prechecks"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["verdicts_from", spreadsheet_cell(figures.source.label)])
    writer.writerow(header)
    for r in figures.per_response:
        verdicts = r["verdicts"] or {}
        row = [
            r["case_id"],
            r["status"],
            r["claims"],
            *(verdicts.get(lb, "") for lb in LABEL_TITLES),
        ]
        for name in proportions:
            value = r.get(name)
            row += [value.k, value.n] if isinstance(value, Proportion) and value.n else ["", ""]
        codes = sorted(r["prechecks"]["response"]) + sorted(
            {c for codes in r["prechecks"]["claims"].values() for c in codes}
        )
        row += [
            r["invented_over_gap"] if r["invented_over_gap"] is not None else "",
            r["context_precision"] if r["context_precision"] is not None else "",
            " ".join(codes),
        ]
        writer.writerow([spreadsheet_cell(cell) for cell in row])
    return out.getvalue()
