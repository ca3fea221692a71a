"""The side-by-side page's cache (compare.pages): page slices keyed by the state of both
runs. A page read from the cache, or read by case, must show what comparing the whole
runs again shows, and the cache must never outlive a new claim, verdict or review mark."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cards.models import Claim
from cards.run_state import roster_for
from cards.services.claims import claim_create
from cards.services.reviews import response_mark_complete
from cards.verdicts import Source
from compare import pages
from compare.comparison import compare_runs
from compare.pages import PAIRS_PER_PAGE, compared_page, comparison_state
from compare.rows import filter_pairs, summary_band
from evidence.canonical import text_sha256
from replay.models import Response, Run
from tests.cards.conftest import judge
from tests.compare.test_comparison_rules import CONSENSUS, SEED, import_run
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def runs(a: str = "r1", b: str = "r2") -> tuple[Run, Run]:
    stored = Run.objects.select_related("snapshot")
    return stored.get(run_id=a), stored.get(run_id=b)


def page_view(run_a: Run, run_b: Run, source: Source, show: str = "all", page=1) -> dict:
    state = comparison_state(run_a=run_a, run_b=run_b)
    roster = roster_for(runs=[run_a, run_b], state=state)
    compared = compared_page(
        run_a=run_a, run_b=run_b, roster=roster, source=source, state=state, show=show,
        page_number=page,
    )  # fmt: skip
    return {
        "pairs": [row["pair"].as_json() for row in compared.rows],
        "band": compared.summary.band,
        "figures": [
            (n, a.as_json(), b.as_json(), d) for n, a, b, d in compared.summary.figure_rows
        ],
        "pages": compared.page.paginator.num_pages,
    }


def fresh_view(run_a: Run, run_b: Run, source: Source, show: str = "all", page=1) -> dict:
    comparison = compare_runs(run_a=run_a, run_b=run_b, source=source)
    shown = filter_pairs(comparison.pairs, show)
    start = (page - 1) * PAIRS_PER_PAGE
    return {
        "pairs": [pair.as_json() for pair in shown[start : start + PAIRS_PER_PAGE]],
        "band": summary_band(comparison),
        "figures": [
            (
                n,
                comparison.metrics_a["micro"][n].as_json(),
                comparison.metrics_b["micro"][n].as_json(),
                d,
            )
            for n, d in comparison.difference().items()
        ],  # fmt: skip
        "pages": max(1, -(-len(shown) // PAIRS_PER_PAGE)),
    }


def test_a_cached_page_follows_every_new_claim_verdict_and_review_mark(project, reviewer):
    # The page must never show figures older than the newest revision or review mark of
    # either run.
    import_run("r1", "kb@1")
    import_run("r2", "kb@2")
    run_a, run_b = runs()
    response = Response.objects.get(run=run_b)
    claim = Claim.objects.get(response=response)
    seen = [page_view(run_a, run_b, CONSENSUS)]
    for change in (
        lambda: judge(claim, reviewer, "unsupported", "Passage 0 says 11 units."),
        lambda: claim_create(response=response, author=reviewer, text="More.", spans=[(0, 5)]),
        lambda: response_mark_complete(response=response, author=reviewer, complete=False),
    ):
        change()
        assert page_view(run_a, run_b, CONSENSUS) == fresh_view(run_a, run_b, CONSENSUS)
        assert page_view(run_a, run_b, CONSENSUS) != seen[-1]
        seen.append(page_view(run_a, run_b, CONSENSUS))
    assert page_view(run_a, run_b, Source()) == fresh_view(run_a, run_b, Source())
    assert page_view(run_a, run_b, Source()) != page_view(run_a, run_b, CONSENSUS)


def test_a_state_is_compared_once_then_every_view_reads_the_state_and_the_cache(
    project, monkeypatch
):
    import_run("r1", "kb@1")
    import_run("r2", "kb@2")
    run_a, run_b = runs()
    first = page_view(run_a, run_b, CONSENSUS)

    def refuse(**kwargs):
        raise AssertionError("compared again")

    monkeypatch.setattr(pages, "compare_runs", refuse)
    monkeypatch.setattr(pages, "compare_cases", refuse)
    with CaptureQueriesContext(connection) as state:
        comparison_state(run_a=run_a, run_b=run_b)
    with CaptureQueriesContext(connection) as again:
        assert page_view(run_a, run_b, CONSENSUS) == first
    assert len(again) == len(state)


@pytest.fixture
def mixed_runs(project):
    """Two runs of 45 cases: drifted, reworded, missing and changed cases among them, and
    an imported judge who changed some labels (so some facts regress, some improve)."""
    for run_id in ("r1", "r2"):
        lines = synthetic_bundle(run_id=run_id, cases=45, claims=2, snapshot=f"kb@{run_id}")
        for line in lines:
            case = int(line.get("case_id", "case-0").split("-")[1])
            second = run_id == "r2"
            if line["kind"] == "passage" and second and line["ref"] == "doc3@v1#c0":
                line["text"] = "A rewritten passage."
                line["sha256"] = text_sha256(line["text"])
            if line["kind"] == "case" and second and case == 5:
                line["query"] = "Reworded?"
            if line["kind"] == "case" and second and case == 6:
                line["known_gaps"] = []
            for k, claim in enumerate(line.get("claims", ())):
                label = ("supported", "partial", "unsupported")[(case + k + second) % 3]
                for judgement in claim["judgements"]:
                    judgement["annotator"] = "seed-protocol"
                    judgement["support"] = label
                    if label == "unsupported" and case % 2:
                        judgement["diagnosis"] = "citation_conflicts"
        if run_id == "r2":
            lines = [x for x in lines if x.get("case_id") not in ("case-7", "case-8")]
        import_bytes(bundle_bytes(*lines), new_expectation_versions=True)
    return runs()


SHOWN = ["all", "regressions", "improvements", "not_comparable", "diagnosis:citation_conflicts",
         "diagnosis:locator_drift", "something-else"]  # fmt: skip


@pytest.mark.parametrize("show", SHOWN)
def test_every_page_of_every_filter_shows_what_comparing_the_whole_runs_shows(mixed_runs, show):
    run_a, run_b = mixed_runs
    first = page_view(run_a, run_b, SEED, show)
    for page in range(1, first["pages"] + 1):
        assert page_view(run_a, run_b, SEED, show, page) == fresh_view(
            run_a, run_b, SEED, show, page
        ), page
    assert page_view(run_a, run_b, SEED, "all")["band"]["reasons"] == {
        "passage_drift": 1, "query_changed": 1, "expectation_changed": 1, "case_missing": 2,
    }  # fmt: skip


def test_a_page_shows_both_answers_and_the_one_answer_of_a_missing_case(mixed_runs):
    run_a, run_b = mixed_runs
    state = comparison_state(run_a=run_a, run_b=run_b)
    compared = compared_page(
        run_a=run_a, run_b=run_b, roster=roster_for(runs=[run_a, run_b], state=state),
        source=SEED, state=state, show="not_comparable", page_number=1,
    )  # fmt: skip
    pairs = {row["pair"].case_id: row["pair"] for row in compared.rows}
    texts = dict(Response.objects.filter(run=run_a).values_list("case__case_id", "text"))
    assert pairs["case-3"].a.answer == pairs["case-3"].b.answer == texts["case-3"]
    assert (pairs["case-7"].a.answer, pairs["case-7"].b) == (texts["case-7"], None)


def test_a_page_takes_the_same_number_of_queries_whatever_the_size(project):
    from django.core.cache import cache

    for run_id, cases, snapshot in (
        ("s1", 2, "kb@1"), ("s2", 2, "kb@2"), ("b1", 45, "kb@1"), ("b2", 45, "kb@2"),
    ):  # fmt: skip
        import_bytes(
            bundle_bytes(*synthetic_bundle(run_id=run_id, cases=cases, snapshot=snapshot))
        )
    counts = {}
    for pair in (("s1", "s2"), ("b1", "b2")):
        run_a, run_b = runs(*pair)
        cache.clear()
        with CaptureQueriesContext(connection) as first:
            page_view(run_a, run_b, CONSENSUS)
        with CaptureQueriesContext(connection) as again:
            page_view(run_a, run_b, CONSENSUS)
        counts[pair] = (len(first), len(again))
    assert counts[("s1", "s2")] == counts[("b1", "b2")]


# --- large runs: the pairs first, the summary after -----------------------------------------


@pytest.fixture
def large(settings):
    """The mixed runs' 45 pairs count as many: a first view does not wait for the summary."""
    from django.core.cache import cache

    settings.COMPARE_INLINE_PAIRS = 10
    cache.clear()


@pytest.mark.parametrize("source", [SEED, Source()], ids=["annotator", "default"])
def test_the_first_view_of_large_runs_shows_every_page_of_pairs_without_comparing(
    mixed_runs, large, monkeypatch, source
):
    run_a, run_b = mixed_runs
    expected = [fresh_view(run_a, run_b, source, "all", page) for page in (1, 2, 3)]

    def refuse(**kwargs):
        raise AssertionError("compared the whole runs")

    monkeypatch.setattr(pages, "compare_runs", refuse)
    state = comparison_state(run_a=run_a, run_b=run_b)
    roster = roster_for(runs=[run_a, run_b], state=state)
    for page, fresh in zip((1, 2, 3), expected, strict=True):
        compared = compared_page(
            run_a=run_a, run_b=run_b, roster=roster, source=source, state=state, show="all",
            page_number=page,
        )  # fmt: skip
        assert compared.summary is None
        assert [row["pair"].as_json() for row in compared.rows] == fresh["pairs"], page
        assert compared.page.paginator.num_pages == fresh["pages"]


@pytest.mark.parametrize("show", [s for s in SHOWN if s not in ("all", "something-else")])
def test_a_filter_of_large_runs_compares_at_once(mixed_runs, large, show):
    run_a, run_b = mixed_runs
    assert page_view(run_a, run_b, SEED, show) == fresh_view(run_a, run_b, SEED, show)


def test_the_summary_of_large_runs_is_compared_then_shown_with_the_pairs(mixed_runs, large):
    run_a, run_b = mixed_runs
    state = comparison_state(run_a=run_a, run_b=run_b)
    roster = roster_for(runs=[run_a, run_b], state=state)
    summary = pages.compared_summary(
        run_a=run_a, run_b=run_b, roster=roster, source=SEED, state=state
    )
    fresh = fresh_view(run_a, run_b, SEED)
    assert summary.band == fresh["band"]
    assert page_view(run_a, run_b, SEED) == fresh  # the summary kept, shown with the pairs


def test_the_page_of_large_runs_loads_its_summary_from_its_own_url(
    client, reviewer, mixed_runs, large
):
    from django.urls import reverse

    client.force_login(reviewer)
    query = {"a": "r1", "b": "r2", "source": SEED.label}
    first = client.get(reverse("run_compare", args=["demo"]), query)
    content = first.content.decode()
    assert first.status_code == 200 and "comparison" not in first.context
    summary_url = first.context["summary_url"]
    assert f'hx-get="{summary_url.replace("&", "&amp;")}"' in content
    assert "pairs comparable" not in content and "case-0" in content
    fragment = client.get(summary_url, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200
    text = fragment.content.decode()
    assert "pairs comparable" in text and "<html" not in text and 'id="summary"' in text
    assert "case-0" not in text  # the band and the figures, not the pairs
    band = fresh_view(*runs(), SEED)["band"]
    assert f"<strong>{band['comparable']}</strong> of {band['pairs']} pairs" in text
    # Without JavaScript the link opens the page with its summary.
    whole = client.get(summary_url).content.decode()
    assert "pairs comparable" in whole and "case-0" in whole and "<html" in whole
    # A later page's link keeps the page: without JavaScript it opens that page again.
    later = client.get(reverse("run_compare", args=["demo"]), query | {"page": "2"})
    assert later.context["summary_url"].endswith("&page=2")
    second = later.context["rows"][0]["pair"].case_id
    assert second not in content  # not on page 1
    assert second in client.get(later.context["summary_url"]).content.decode()
    # Kept: the next view shows it at once.
    again = client.get(reverse("run_compare", args=["demo"]), query)
    assert again.context["summary"] == band and "hx-trigger" not in again.content.decode()
