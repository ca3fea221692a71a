"""The comparison rules of metrics.md ("Comparing two runs"), one table row each.

Fact status, change and claim matching are pure and tested on plain claims; the
comparable rule needs two imported runs, so it is tested through the smallest bundles.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from cards.annotators import Annotator
from cards.figures import ClaimState, Verdict, response_figures, run_totals
from cards.models import Origin
from cards.stats import Proportion
from cards.verdicts import Source

# The one import of the module under test.
from compare.comparison import (
    Comparison,
    FactChange,
    Pair,
    compare_runs,
    fact_status,
    match_claims,
)
from evidence.canonical import text_sha256
from replay.models import Run
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
IMPORTED_NAMES = {"judge", "seed-protocol"}  # the annotators these tables import


def annotator_source(name: str) -> Source:
    """`annotator NAME`: an imported judge by its name, else the local account."""
    return Source.of(Annotator(name, imported=name in IMPORTED_NAMES))


SEED = annotator_source("seed-protocol")
CONSENSUS = Source("consensus")


def claim(
    key: str, *labels: str, facts: tuple = ("G1",), kind: str = "factual",
    withdrawn: bool = False, text: str = "", by: str = "alice",
) -> ClaimState:  # fmt: skip
    """A claim with one verdict per label, newest first, each from its own annotator when
    there are several (so consensus can be tested), else from `by`."""
    names = [by] if len(labels) == 1 else [f"r{i}" for i in range(len(labels))]
    verdicts = [
        Verdict(name, Origin.REVIEW, label, "attached", {}, "", EPOCH)
        for name, label in zip(names, labels, strict=False)
    ]
    return ClaimState(
        key, kind, text or f"Claim {key}.", ["p"], list(facts), [], withdrawn, verdicts
    )


# --- fact status: "the best verdict among the current factual claims linked to it
# (supported > partial > unsupported; not_assessable and unreviewed count as unsupported
# here), or absent when no claim reports it"; a fact that only unreviewed claims report is
# `unreviewed` (docs/decisions.md, issue 10) ---------------------------------------------

FACT_ROWS = [
    pytest.param(
        [claim("a", "partial"), claim("b", "supported")],
        Source(),
        "supported",
        id="supported-beats-partial",
    ),
    pytest.param(
        [claim("a", "unsupported"), claim("b", "partial")],
        Source(),
        "partial",
        id="partial-beats-unsupported",
    ),
    pytest.param(
        [claim("a", "supported"), claim("b", "unsupported")],
        Source(),
        "supported",
        id="the-best-wins-whatever-the-order",
    ),
    pytest.param([claim("a", "unsupported")], Source(), "unsupported", id="unsupported"),
    pytest.param(
        [claim("a", "not_assessable")],
        Source(),
        "unsupported",
        id="not-assessable-counts-as-unsupported",
    ),
    pytest.param([claim("a")], Source(), "unreviewed", id="a-fact-nobody-judged-is-unreviewed"),
    pytest.param(
        [claim("a"), claim("b", facts=("G1", "G2"))],
        Source(),
        "unreviewed",
        id="a-fact-none-of-whose-claims-is-judged-is-unreviewed",
    ),
    pytest.param(
        [claim("a", "supported", by="bob")],
        annotator_source("alice"),
        "unreviewed",
        id="judged-only-by-another-annotator-than-the-source-is-unreviewed",
    ),
    pytest.param(
        [claim("a", "partial"), claim("b")],
        Source(),
        "partial",
        id="beside-a-judged-claim-unreviewed-counts-as-unsupported",
    ),
    pytest.param(
        [claim("a", "unsupported"), claim("b")],
        Source(),
        "unsupported",
        id="beside-an-unsupported-claim-unreviewed-is-unsupported",
    ),
    pytest.param(
        [claim("a", "supported", "partial")],
        CONSENSUS,
        "unsupported",
        id="no-consensus-counts-as-unsupported",
    ),
    pytest.param(
        [claim("a", "supported", "supported", "partial")],
        CONSENSUS,
        "supported",
        id="a-consensus-label-counts",
    ),
    pytest.param([], Source(), "absent", id="absent-when-no-claim-reports-it"),
    pytest.param(
        [claim("a", "supported", facts=("G2",))],
        Source(),
        "absent",
        id="absent-when-only-other-facts-are-reported",
    ),
    pytest.param(
        [claim("a", "supported", facts=("G2",)), claim("b", "partial")],
        Source(),
        "partial",
        id="a-claim-on-another-fact-does-not-hide-the-next",
    ),
    pytest.param(
        [claim("a", "supported", withdrawn=True)],
        Source(),
        "absent",
        id="a-withdrawn-claim-does-not-report-it",
    ),
    pytest.param(
        [claim("a", "supported", kind="abstention")],
        Source(),
        "absent",
        id="an-abstention-claim-does-not-report-it",
    ),
    pytest.param(
        [claim("a", "supported", by="bob"), claim("b", "partial")],
        annotator_source("alice"),
        "partial",
        id="the-status-follows-the-verdict-source",
    ),
]


@pytest.mark.parametrize(("claims", "source", "status"), FACT_ROWS)
def test_the_status_of_a_required_fact(claims, source, status):
    assert fact_status(claims, "G1", source) == status


# cli.md: "`change` is `improved`, `regressed` or `same`, ordering `absent` < `unsupported` <
# `partial` < `supported`"
LADDER = ["absent", "unsupported", "partial", "supported"]


@pytest.mark.parametrize(("a", "b"), list(itertools.product(LADDER, LADDER)), ids=lambda s: s[:5])
def test_a_change_follows_the_ladder_absent_unsupported_partial_supported(a, b):
    expected = {-1: "regressed", 0: "same", 1: "improved"}[
        (LADDER.index(b) > LADDER.index(a)) - (LADDER.index(b) < LADDER.index(a))
    ]
    assert FactChange(a, b).change == expected


@pytest.mark.parametrize(
    ("a", "b", "change"),
    [
        ("partial", "supported", "improved"),  # q017-r1 → q017-r2 in expected.json
        ("absent", "unsupported", "improved"),
        ("supported", "absent", "regressed"),
        ("partial", "unsupported", "regressed"),
        ("unsupported", "unsupported", "same"),
    ],
)
def test_changes_spelled_out(a, b, change):
    assert FactChange(a, b).change == change


@pytest.mark.parametrize("other", [*LADDER, "unreviewed"])
def test_a_fact_nobody_judged_neither_improves_nor_regresses(other):
    assert FactChange("unreviewed", other).change == "unreviewed"
    assert FactChange(other, "unreviewed").change == "unreviewed"


# --- claim matching: "by the required facts they report, then by their text; the unmatched
# are listed on each side" -------------------------------------------------------------------

MATCH_ROWS = [
    pytest.param(
        [claim("a1", text="The limit is 80 degrees."), claim("a2", facts=(), text="Eco mode.")],
        [claim("b1", text="Continuous operation: 80 °C max."), claim("b2", facts=(), text="x")],
        ([("a1", "b1")], ["a2"], ["b2"]),
        id="claims-reporting-the-same-fact-match-whatever-their-text",
    ),
    pytest.param(
        [claim("a1", facts=("G1", "G2")), claim("a2", facts=("G2",), text="Quite other words.")],
        [claim("b1", facts=("G2",)), claim("b2", facts=("G3", "G1"), text="Nothing alike.")],
        ([("a1", "b1")], ["a2"], ["b2"]),
        id="a-claim-is-matched-once-by-the-first-claim-sharing-a-fact",
    ),
    pytest.param(
        [claim("a1", facts=(), text="Eco saves energy every year.")],
        [claim("b1", facts=(), text="ECO SAVES ENERGY EVERY SINGLE YEAR.")],
        ([("a1", "b1")], [], []),
        id="then-by-text-similarity-ignoring-case",
    ),
    pytest.param(
        [claim("a1", facts=(), text="abcd")],
        [claim("b1", facts=(), text="abcx")],
        ([("a1", "b1")], [], []),
        id="a-text-similarity-of-exactly-0.75-matches",
    ),
    pytest.param(
        [claim("a1", facts=(), text="abcd")],
        [claim("b1", facts=(), text="abxy")],
        ([], ["a1"], ["b1"]),
        id="a-text-similarity-below-0.75-does-not-match",
    ),
    pytest.param(
        [claim("a1", facts=(), text="Returns within 14 days.")],
        [
            claim("b1", facts=(), text="Returns within 30 days."),
            claim("b2", facts=(), text="Returns within 14 days!"),
        ],
        ([("a1", "b2")], [], ["b1"]),
        id="the-most-similar-text-wins",
    ),
    pytest.param(
        [
            claim("a1", facts=(), text="Returns within 14 days."),
            claim("a2", facts=(), text="Returns within 14 days!"),
        ],
        [claim("b1", facts=(), text="Returns within 14 days.")],
        ([("a1", "b1")], ["a2"], []),
        id="a-claim-is-matched-by-text-at-most-once",
    ),
    pytest.param(
        [claim("a1", text="Same text."), claim("a2", facts=(), text="Other words here.")],
        [claim("b1", facts=("G9",), text="Same text.")],
        ([("a1", "b1")], ["a2"], []),
        id="claims-left-over-from-fact-matching-match-by-text",
    ),
    pytest.param(
        [claim("a1", withdrawn=True), claim("a2", facts=(), text="Gone too.", withdrawn=True)],
        [claim("b1"), claim("b2", facts=(), text="Gone too.")],
        ([], [], ["b1", "b2"]),
        id="withdrawn-claims-are-neither-matched-nor-listed",
    ),
]


@pytest.mark.parametrize(("a", "b", "expected"), MATCH_ROWS)
def test_claims_are_matched_across_two_responses(a, b, expected):
    assert match_claims(a, b) == expected


# --- run-level figures: "shown for both runs and their difference, computed over the
# comparable pairs only, with the counts of pairs left out" ----------------------------------


def figures_of(*labels: str, gaps: tuple = ()) -> dict:
    claims = [claim(f"c{i}", label) for i, label in enumerate(labels)]
    expectation = {
        "required_facts": [{"fact_id": "G1"}],
        "known_gaps": [{"gap_id": gap} for gap in gaps],
        "relevant_refs": [],
    }
    return response_figures(
        reviewed=True, expectation=expectation, claims=claims, ranked=[], doc_of={},
        source=Source(),
    )  # fmt: skip


def test_the_difference_is_b_minus_a_and_undefined_when_either_is():
    comparison = Comparison(
        Run(run_id="a"), Run(run_id="b"), Source(),
        [Pair("Q1", True, []), Pair("Q2", False, ["case_missing"])],
        run_totals([figures_of("supported", "unsupported", "partial", gaps=("X1",))]),
        run_totals([figures_of("supported", "supported", "partial", "partial")]),
    )  # fmt: skip
    difference = comparison.difference()
    assert difference["support"] == round(2 / 4 - 1 / 3, 4)
    assert difference["support_or_partial"] == round(4 / 4 - 2 / 3, 4)
    assert difference["support_assessed"] == round(2 / 4 - 1 / 3, 4)
    assert difference["honest_misses"] is None  # a known gap in run a only
    assert difference["citation_precision"] is None  # no judged citation in either run
    document = comparison.as_json()
    # cli.md: {"run_a", "run_b", "pairs": [{"case_id", "comparable", …}], "left_out", "metrics"}
    assert document["pairs"] == [pair.as_json() for pair in comparison.pairs]
    assert document["left_out"] == 1
    assert document["metrics"]["pairs"] == 1
    assert document["metrics"]["a"]["support"]["k"] == 1
    assert document["metrics"]["b"]["support"]["n"] == 4
    assert document["metrics"]["difference"] == difference
    assert (document["run_a"], document["run_b"], document["verdicts_from"]) == (
        "a", "b", "default",
    )  # fmt: skip


def test_a_pair_lists_its_facts_and_claims_in_the_cli_shape():
    pair = Pair(
        "Q1", True, [], facts={"G1": FactChange("partial", "supported")},
        matched=[("a1", "b1")], only_a=["a2"], only_b=[],
    )  # fmt: skip
    assert pair.as_json() == {
        "case_id": "Q1", "comparable": True, "reasons": [], "notes": [],
        "facts": {"G1": {"a": "partial", "b": "supported", "change": "improved"}},
        "claims": {"matched": [["a1", "b1"]], "only_a": ["a2"], "only_b": []},
    }  # fmt: skip
    assert pair.changes == {"improved"}


def test_a_pair_that_is_not_comparable_is_never_counted_as_improved_or_regressed():
    from compare.rows import filter_pairs, summary_band

    drifted = Pair(
        "Q1", False, ["passage_drift: D-01 aaa→bbb"],
        facts={"G1": FactChange("absent", "supported"), "G2": FactChange("supported", "absent")},
    )  # fmt: skip
    changed = Pair("Q2", True, [], facts={"G1": FactChange("partial", "supported")})
    comparison = Comparison(Run(run_id="a"), Run(run_id="b"), Source(), [drifted, changed], {}, {})
    assert drifted.changes == set()
    summary = summary_band(comparison)
    assert (summary["improvements"], summary["regressions"], summary["left_out"]) == (1, 0, 1)
    assert filter_pairs(comparison.pairs, "improvements") == [changed]
    assert filter_pairs(comparison.pairs, "regressions") == []


# --- comparable: "every ref that either response cites, or that is relevant, has the same
# SHA-256 in both runs" (through two imported runs) -----------------------------------------


def import_run(
    run_id: str, snapshot: str, *, changed: tuple[int, ...] = (), cited: int = 0,
    relevant: tuple[int, ...] = (0, 2),
) -> None:  # fmt: skip
    """One case with four retrieved passages c0…c3; its response and claim cite `cited` (c0),
    its relevant refs are `relevant` (c0 and c2). The passages numbered in `changed` get
    another text in this run."""
    lines = synthetic_bundle(run_id=run_id, cases=1, passages=4, claims=1, snapshot=snapshot)
    ref = f"doc0@v1#c{cited}"
    for line in lines:
        if line["kind"] == "case":
            line["relevant_refs"] = [f"doc0@v1#c{i}" for i in relevant]
        if line["kind"] == "passage" and int(line["chunk_id"][1:]) in changed:
            line["text"] = "A rewritten passage: the limit is 99 units."
            line["sha256"] = text_sha256(line["text"])
        if line["kind"] == "response":
            for citation in line["citations"]:
                citation["ref"] = ref
            for claim_line in line["claims"]:
                claim_line["citations"] = [ref]
    import_bytes(bundle_bytes(*lines), new_expectation_versions=True)


def compare(a: str, b: str):
    runs = Run.objects.select_related("snapshot")
    return compare_runs(run_a=runs.get(run_id=a), run_b=runs.get(run_id=b), source=CONSENSUS)


# "every ref that either response cites, or that is relevant, has the same SHA-256 in both
# runs": c3 is the passage that gets another text in the second run.
DRIFT_ROWS = [
    pytest.param({}, {"cited": 3}, [], id="a-ref-cited-in-the-second-run-only"),
    pytest.param({"cited": 3}, {}, [], id="a-ref-cited-in-the-first-run-only"),
    pytest.param(
        {"cited": 3, "relevant": (3,)}, {"cited": 3, "relevant": (3,)}, [],
        id="a-ref-cited-and-relevant-in-both",
    ),
    pytest.param(
        {}, {"relevant": (0, 2, 3)}, ["expectation_changed"],
        id="a-ref-relevant-in-the-second-run-only",
    ),
    pytest.param(
        {"relevant": (0, 2, 3)}, {}, ["expectation_changed"],
        id="a-ref-relevant-in-the-first-run-only",
    ),
    pytest.param(
        {"relevant": (3,)}, {"relevant": (3,)}, [],
        id="a-relevant-ref-that-drifted-though-not-cited",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("run_a", "run_b", "other_reasons"), DRIFT_ROWS)
def test_a_pair_is_not_comparable_when_a_cited_or_relevant_ref_drifted(
    project, run_a, run_b, other_reasons
):
    import_run("r1", "kb@1", **run_a)
    import_run("r2", "kb@2", changed=(3,), **run_b)
    [pair] = compare("r1", "r2").pairs
    assert pair.comparable is False
    old = Run.objects.get(run_id="r1").snapshot.passages.get(ref="doc0@v1#c3").sha256
    new = Run.objects.get(run_id="r2").snapshot.passages.get(ref="doc0@v1#c3").sha256
    # cli.md: `passage_drift: REF OLDHASH→NEWHASH`
    assert pair.reasons == [*other_reasons, f"passage_drift: doc0@v1#c3 {old}→{new}"]


def case_line(lines: list[dict], case_id: str) -> dict:
    return next(x for x in lines if x["kind"] == "case" and x["case_id"] == case_id)


def reword_the_query(lines: list[dict]) -> None:
    case_line(lines, "case-0")["query"] = "Reworded?"


def drop_the_known_gaps(lines: list[dict]) -> None:
    case_line(lines, "case-0")["known_gaps"] = []


def answer_one_case_less(lines: list[dict]) -> None:
    lines[:] = [x for x in lines if x.get("case_id") != "case-0"]


# "A case pair is comparable when: same case expectation (query text, required facts, relevant
# refs, known gaps) … Every pair that is not comparable says why (`query_changed`,
# `expectation_changed`, …, `case_missing`)." The change is made to the second run's bundle,
# or to the first's.
@pytest.mark.parametrize(
    ("changed_run", "change", "reasons"),
    [
        pytest.param(
            "r2", reword_the_query, {"case-0": ["query_changed"], "case-1": []},
            id="query-changed",
        ),
        pytest.param(
            "r2", drop_the_known_gaps, {"case-0": ["expectation_changed"], "case-1": []},
            id="expectation-changed-with-the-same-query",
        ),
        pytest.param(
            "r2", answer_one_case_less, {"case-0": ["case_missing"], "case-1": []},
            id="case-missing-in-the-second-run",
        ),
        pytest.param(
            "r1", answer_one_case_less, {"case-0": ["case_missing"], "case-1": []},
            id="case-missing-in-the-first-run",
        ),
    ],
)  # fmt: skip
def test_a_pair_says_why_it_is_not_comparable(project, changed_run, change, reasons):
    for run_id in ("r1", "r2"):
        lines = synthetic_bundle(run_id=run_id, cases=2, snapshot="kb@1")
        if run_id == changed_run:
            change(lines)
        import_bytes(bundle_bytes(*lines), new_expectation_versions=True)
    comparison = compare("r1", "r2")
    assert {p.case_id: p.reasons for p in comparison.pairs} == reasons
    assert {p.case_id: p.comparable for p in comparison.pairs} == {
        case_id: not why for case_id, why in reasons.items()
    }
    assert comparison.left_out == 1
    assert all(p.notes == [] for p in comparison.pairs)  # the same snapshot
    # The side-by-side page shows what was answered: a pair keeps both responses, or the one
    # of the run that answered the case.
    for pair in comparison.pairs:
        gone = pair.reasons == ["case_missing"]
        assert (pair.a is None, pair.b is None) == (
            gone and changed_run == "r1", gone and changed_run == "r2",
        ), pair.case_id  # fmt: skip


def test_identical_evidence_in_another_snapshot_is_comparable_and_says_so(project):
    # "A different `collection_snapshot` with identical evidence is comparable and says so."
    import_run("r1", "kb@1")
    import_run("r2", "kb@2")
    [pair] = compare("r1", "r2").pairs
    assert (pair.comparable, pair.reasons) == (True, [])
    assert pair.notes == ["different snapshots (kb@1 → kb@2) with identical evidence"]


def test_a_drifted_passage_neither_cited_nor_relevant_leaves_the_pair_comparable(project):
    import_run("r1", "kb@1")
    import_run("r2", "kb@2", changed=(3,))
    comparison = compare("r1", "r2")
    [pair] = comparison.pairs
    assert (pair.comparable, pair.reasons) == (True, [])
    assert comparison.left_out == 0
    assert comparison.metrics_a["micro"]["support"].n == 1


def test_both_runs_figures_use_the_verdict_source_asked_for(project):
    # "for each claim the verdict that the metrics are asked to use. Which one was used is
    # part of every result": the bundles' verdicts are an imported judge's, which consensus
    # counts and the default (reviewers of the project) does not.
    import_run("r1", "kb@1")
    import_run("r2", "kb@2")
    runs = Run.objects.select_related("snapshot")
    run_a, run_b = runs.get(run_id="r1"), runs.get(run_id="r2")
    for source, supported, status in ((CONSENSUS, 1, "supported"), (Source(), 0, "unreviewed")):
        comparison = compare_runs(run_a=run_a, run_b=run_b, source=source)
        assert comparison.metrics_a["micro"]["support"] == Proportion(supported, 1), source
        assert comparison.metrics_b["micro"]["support"] == Proportion(supported, 1), source
        # "For each required fact … its status in each run": a fact whose claims carry no
        # verdict of the source is unreviewed (docs/decisions.md, issue 10).
        [pair] = comparison.pairs
        assert pair.facts == {"G1": FactChange(status, status)}, source
        assert comparison.as_json()["verdicts_from"] == source.label


def test_figures_are_computed_over_the_comparable_pairs_only(project):
    for run_id, snapshot, changed in (("r1", "kb@1", ()), ("r2", "kb@2", (0,))):
        lines = synthetic_bundle(run_id=run_id, cases=2, claims=1, snapshot=snapshot)
        for line in lines:
            if line["kind"] == "passage" and line["ref"] == "doc0@v1#c0" and changed:
                line["text"] = "A rewritten passage."
                line["sha256"] = text_sha256(line["text"])
        import_bytes(bundle_bytes(*lines))
    comparison = compare("r1", "r2")
    assert [(p.case_id, p.comparable) for p in comparison.pairs] == [
        ("case-0", False), ("case-1", True),
    ]  # fmt: skip
    assert comparison.left_out == 1
    assert comparison.metrics_a["responses"] == comparison.metrics_b["responses"] == 1
    assert comparison.metrics_a["micro"]["support"].n == 1
