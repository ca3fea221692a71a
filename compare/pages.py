"""The side-by-side page's reads, cached per state of both runs: page slices, never a whole
pickled comparison.

A comparison of 10,000 pairs is computed once per state of the two runs
(`compare_runs`). What is kept of it is small: the summary the page shows above its
pairs (counts, figures, what to offer) and, per filter, the positions of the pairs it
shows, four bytes a pair. The 20 pairs of a page are read again by case with their
answers, in a few indexed queries (`compare_cases`), and kept too. So a view reads the
state (one-row queries), the roster, the summary and its page from the cache, and
computes the comparison only when the state is new.

Nothing is ever stale: every key holds the state, which changes with any new claim,
verdict or review mark of either run, anything that decides which verdicts were blind,
and the members of the project (who a name means, `cards.annotators`).

The first view of all pairs in a new state does not wait for the summary when the runs
are large (more than `settings.COMPARE_INLINE_PAIRS` pairs): its pairs are read by case,
in the order of every pair, which depends on the runs alone and is kept; the page loads
the summary from its own URL after it is shown (`compared_summary`, which compares and
keeps it). A filter's view needs the summary (which pairs it shows): it compares at once.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.paginator import Page, Paginator

from cards.annotators import Roster
from cards.oversight import ImportedOffer, imported_offer
from cards.run_state import TIMEOUT, runs_key, runs_state
from cards.stats import Proportion
from cards.verdicts import Source
from compare.comparison import compare_cases, compare_runs
from compare.rows import filters_of, is_filter, pair_rows, summary_band
from replay.models import Response, Run

PAIRS_PER_PAGE = 20


def comparison_state(*, run_a: Run, run_b: Run) -> str:
    """The key part every cached read of this comparison shares (`cards.run_state`)."""
    return runs_state(runs=[run_a, run_b], scope="compare")


@dataclass(frozen=True)
class Summary:
    """What the page shows above its pairs, and where each filter's pairs are."""

    band: dict[str, Any]  # compare.rows.summary_band
    figure_rows: list[tuple[str, Proportion, Proportion, float | None]]
    offer: ImportedOffer | None
    case_ids: tuple[str, ...]  # every pair, in order
    filters: frozenset[str]  # the filters that show some pair


@dataclass
class ComparedPage:
    summary: Summary | None  # None: not compared yet (the page loads it after)
    page: Page
    rows: list[dict]  # compare.rows.pair_rows of each pair shown


def compared_page(
    *, run_a: Run, run_b: Run, roster: Roster, source: Source, state: str, show: str,
    page_number: str | int | None,
) -> ComparedPage:  # fmt: skip
    """One page of pairs of the comparison, with the summary: from the cache when this
    state was compared before, else compared now (and kept); or, the first view of all
    the pairs of large runs, without the summary (the page loads it after)."""
    key = f"{state}:{source.key}"
    show = show if is_filter(show) else "all"
    if show == "all" and cache.get(f"{key}:summary") is None:
        order = pair_order(run_a=run_a, run_b=run_b)
        # settings.COMPARE_INLINE_PAIRS: about 45 ms of comparing at its 500.
        if len(order) > settings.COMPARE_INLINE_PAIRS:
            return _page(run_a, run_b, source, None, order, range(len(order)), key, show,
                         page_number)  # fmt: skip
    summary, positions = _summary(run_a, run_b, roster, source, key, show)
    return _page(run_a, run_b, source, summary, summary.case_ids, positions, key, show,
                 page_number)  # fmt: skip


def compared_summary(
    *, run_a: Run, run_b: Run, roster: Roster, source: Source, state: str
) -> Summary:
    """The summary of the comparison in this state: kept, or compared now (and kept)."""
    return _summary(run_a, run_b, roster, source, f"{state}:{source.key}", "all")[0]


def pair_order(*, run_a: Run, run_b: Run) -> tuple[str, ...]:
    """The case ids of every pair, in the comparison's order (`compare_runs`): the cases
    either run answered, sorted. Kept for good under the runs' identity: a run's
    responses never change after its import (one query, 13 ms for two runs of 10,000
    cases, when it is not kept)."""
    key = runs_key(runs=[run_a, run_b], part="compare-order")
    order = cache.get(key)
    if order is None:
        order = tuple(
            sorted(
                set(
                    Response.objects.filter(run__in=[run_a.pk, run_b.pk]).values_list(
                        "case__case_id", flat=True
                    )
                )
            )
        )
        cache.set(key, order, TIMEOUT)
    return order


def _page(
    run_a: Run, run_b: Run, source: Source, summary: Summary | None, case_ids: Sequence[str],
    positions: array | range, key: str, show: str, page_number: str | int | None,
) -> ComparedPage:  # fmt: skip
    page = Paginator(positions, PAIRS_PER_PAGE).get_page(page_number)
    page_key = f"{key}:{show}:{page.number}"
    rows = cache.get(page_key)
    if rows is None:
        case_ids = [case_ids[i] for i in page.object_list]
        pairs = (
            compare_cases(run_a=run_a, run_b=run_b, source=source, case_ids=case_ids)
            if case_ids
            else []
        )
        rows = [pair_rows(pair, source) for pair in pairs]
        cache.set(page_key, rows, TIMEOUT)
    return ComparedPage(summary, page, rows)


def _summary(
    run_a: Run, run_b: Run, roster: Roster, source: Source, key: str, show: str
) -> tuple[Summary, array | range]:
    """The summary and the positions of the pairs `show` shows."""
    found = cache.get_many([f"{key}:summary", f"{key}:{show}:positions"])
    summary = found.get(f"{key}:summary")
    if summary is not None:
        if show == "all":
            return summary, range(len(summary.case_ids))
        if show not in summary.filters:
            return summary, array("I")
        if f"{key}:{show}:positions" in found:
            return summary, found[f"{key}:{show}:positions"]
    comparison = compare_runs(run_a=run_a, run_b=run_b, source=source)
    positions: dict[str, array] = {}
    for i, pair in enumerate(comparison.pairs):
        for name in filters_of(pair):
            positions.setdefault(name, array("I")).append(i)
    summary = Summary(
        band=summary_band(comparison),
        figure_rows=[
            (name, comparison.metrics_a["micro"][name], comparison.metrics_b["micro"][name], diff)
            for name, diff in comparison.difference().items()
        ],
        offer=imported_offer(runs=[run_a, run_b], roster=roster, source=source),
        case_ids=tuple(pair.case_id for pair in comparison.pairs),
        filters=frozenset(positions),
    )
    cache.set_many(
        {f"{key}:summary": summary}
        | {f"{key}:{name}:positions": shown for name, shown in positions.items()},
        TIMEOUT,
    )
    if show == "all":
        return summary, range(len(summary.case_ids))
    return summary, positions.get(show, array("I"))
