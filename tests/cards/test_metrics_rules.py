"""The rules of metrics.md, one table row each, over the pure figure functions.

Read beside ../shared/spec/metrics.md: every row's id names the rule it guards and
its comment quotes the spec (or docs/decisions.md where the spec is silent). No
database: `choose`, `response_figures` and `Totals` take plain data, so mutation
testing can run these in milliseconds.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cards.annotators import Annotator
from cards.figures import (
    CLAIM_FIGURES,
    ClaimState,
    Totals,
    Verdict,
    choose,
    response_figures,
    run_totals,
    to_json,
)
from cards.models import Origin
from cards.prechecks import PassageFacts
from cards.stats import Proportion, wilson
from cards.verdicts import Source

ADJUDICATION, REVIEW, IMPORTED = Origin.ADJUDICATION, Origin.REVIEW, Origin.IMPORTED
CONSENSUS = Source("consensus")
S, P, U, NA = "supported", "partial", "unsupported", "not_assessable"
IRR = "irrelevant"

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
IMPORTED_NAMES = {"judge", "seed-protocol"}  # the annotators these tables import


def annotator_source(name: str) -> Source:
    """`annotator NAME`: an imported judge by its name, else the local account."""
    return Source.of(Annotator(name, imported=name in IMPORTED_NAMES))


def verdict(
    support: str, *, by: str = "alice", origin: str = REVIEW, association: str = "attached",
    relevance: dict[str, str] | None = None, diagnosis: str = "",
) -> Verdict:  # fmt: skip
    """One row of ClaimState.verdicts: (annotator, origin, support, association, relevance,
    diagnosis)."""
    return Verdict(by, origin, support, association, relevance, diagnosis, EPOCH)


def claim(
    *verdicts: tuple, key: str = "c", kind: str = "factual", citations: tuple = ("p1",),
    facts: tuple = (), gaps: tuple = (), withdrawn: bool = False,
) -> ClaimState:  # fmt: skip
    """A claim in its current state; `verdicts` newest first, as the metrics read them."""
    return ClaimState(
        key, kind, f"Claim {key}.", list(citations), list(facts), list(gaps), withdrawn,
        list(verdicts),
    )  # fmt: skip


def expectation(facts: int = 0, gaps: int = 0, relevant: tuple = (), evidence=None) -> dict:
    """Facts G1…Gn (evidence from `evidence[i]`), gaps X1…Xn, relevant refs R."""
    evidence = evidence or {}
    return {
        "required_facts": [
            {"fact_id": f"G{i}", "evidence": list(evidence.get(f"G{i}", ()))}
            for i in range(1, facts + 1)
        ],
        "known_gaps": [{"gap_id": f"X{i}"} for i in range(1, gaps + 1)],
        "relevant_refs": list(relevant),
    }


def figures(
    claims: list[ClaimState], *, facts: int = 0, gaps: int = 0, source: Source = Source(),  # noqa: B008
    reviewed: bool = True, ranked: tuple = (), relevant: tuple = (), evidence=None,
    doc_of: dict | None = None,
) -> dict:  # fmt: skip
    return response_figures(
        reviewed=reviewed,
        expectation=expectation(facts, gaps, relevant, evidence),
        claims=claims,
        ranked=[PassageFacts(ref, frozenset(), "current") for ref in ranked],
        doc_of=doc_of or {},
        source=source,
    )


def kn(value):
    """A figure as the spec writes it: (k, n), None when undefined, a count as it is."""
    if isinstance(value, Proportion):
        return (value.k, value.n) if value.defined else None
    return value


# --- which verdict counts (metrics.md, "Only the current state counts") ----------------------

CHOOSE_ROWS = [
    # "default: the adjudicated verdict where a lead adjudicated, …"
    pytest.param(
        Source(),
        [verdict("unsupported", by="bob"), verdict("supported", by="lead", origin=ADJUDICATION)],
        "supported",
        id="default-adjudication-wins-over-a-newer-review",
    ),
    # "… else the newest verdict of any reviewer of the project"
    pytest.param(
        Source(),
        [verdict("partial", by="bob"), verdict("supported", by="alice")],
        "partial",
        id="default-else-the-newest-verdict-of-any-reviewer",
    ),
    # decisions.md: imported judgements count only when chosen by name or in consensus.
    pytest.param(
        Source(),
        [verdict("supported", by="judge", origin=IMPORTED)],
        None,
        id="default-ignores-imported-judgements",
    ),
    pytest.param(
        Source(),
        [verdict("supported", by="judge", origin=IMPORTED), verdict("partial", by="alice")],
        "partial",
        id="default-takes-the-reviewer-behind-a-newer-imported-judgement",
    ),
    pytest.param(Source(), [], None, id="default-no-verdict-is-unreviewed"),
    # "`annotator NAME`: that annotator's newest verdict"
    pytest.param(
        annotator_source("alice"),
        [verdict("unsupported", by="bob"), verdict("partial"), verdict("supported")],
        "partial",
        id="annotator-that-annotators-newest-verdict",
    ),
    # "(a person, or an imported annotator such as a judge model)"
    pytest.param(
        annotator_source("judge"),
        [verdict("partial", by="alice"), verdict("supported", by="judge", origin=IMPORTED)],
        "supported",
        id="annotator-an-imported-judge-by-name",
    ),
    # "claims it did not label are `unreviewed`"
    pytest.param(
        annotator_source("carol"),
        [verdict("supported", by="alice"), verdict("supported", by="carol", origin=ADJUDICATION)],
        None,
        id="annotator-unlabelled-claim-is-unreviewed-and-an-adjudication-is-no-label",
    ),
    # "`consensus`: the label a strict majority of the annotators who labelled the claim agree on"
    pytest.param(
        CONSENSUS,
        [
            verdict("supported", by="a"),
            verdict("unsupported", by="b"),
            verdict("supported", by="c"),
        ],
        "supported",
        id="consensus-two-of-three-is-a-strict-majority",
    ),
    pytest.param(CONSENSUS, [verdict("partial", by="a")], "partial", id="consensus-one-of-one"),
    # "a claim without one is counted as `no_consensus`"
    pytest.param(
        CONSENSUS,
        [verdict("supported", by="a"), verdict("unsupported", by="b")],
        "no_consensus",
        id="consensus-a-tie-of-two-is-no-consensus",
    ),
    pytest.param(
        CONSENSUS,
        [
            verdict(s, by=b)
            for s, b in [
                ("partial", "a"),
                ("supported", "b"),
                ("partial", "c"),
                ("supported", "d"),
            ]
        ],
        "no_consensus",
        id="consensus-a-tie-of-four-is-no-consensus",
    ),
    pytest.param(
        CONSENSUS,
        [
            verdict(s, by=b)
            for s, b in [
                ("partial", "a"),
                ("partial", "b"),
                ("supported", "c"),
                ("unsupported", "d"),
            ]
        ],
        "no_consensus",
        id="consensus-a-plurality-of-two-in-four-is-not-a-majority",
    ),
    # Each annotator's newest label only ("Otherwise, and for imported annotators, the newest").
    pytest.param(
        CONSENSUS,
        [
            verdict("supported", by="a"),
            verdict("unsupported", by="b"),
            verdict("supported", by="c"),
            verdict("unsupported", by="a"),
        ],
        "supported",
        id="consensus-counts-only-each-annotators-newest-label",
    ),
    # decisions.md: "adjudications are not annotators".
    pytest.param(
        CONSENSUS,
        [
            verdict("supported", by="lead", origin=ADJUDICATION),
            verdict("supported", by="a"),
            verdict("unsupported", by="b"),
        ],
        "no_consensus",
        id="consensus-an-adjudication-is-not-a-vote",
    ),
    # "An imported annotator is never the same annotator as a local account, even when the
    # names are equal."
    pytest.param(
        CONSENSUS,
        [
            verdict("unsupported", by="alice", origin=IMPORTED),
            verdict("supported", by="alice"),
            verdict("supported", by="bob"),
        ],
        "supported",
        id="consensus-an-imported-annotator-is-not-the-local-account-of-the-same-name",
    ),
    pytest.param(
        CONSENSUS,
        [verdict("supported", by="lead", origin=ADJUDICATION)],
        None,
        id="consensus-no-annotator-is-unreviewed",
    ),
]


@pytest.mark.parametrize(("source", "verdicts", "expected"), CHOOSE_ROWS)
def test_the_verdict_the_figures_use(source, verdicts, expected):
    view = choose(claim(*verdicts), source)
    assert (view.support if view else None) == expected


def test_the_chosen_verdict_brings_its_association_relevance_and_diagnosis():
    chosen = verdict(
        "unsupported", association="missing", relevance={"p1": "irrelevant"},
        diagnosis="not_in_collection",
    )  # fmt: skip
    view = choose(claim(verdict("supported", by="bob"), chosen), annotator_source("alice"))
    assert (view.association, view.relevance, view.diagnosis) == (
        "missing", {"p1": "irrelevant"}, "not_in_collection",
    )  # fmt: skip


def test_a_consensus_brings_the_verdict_of_an_annotator_who_gave_the_label():
    view = choose(
        claim(
            verdict("supported", by="a", association="missing", diagnosis="qualifier_dropped"),
            verdict("supported", by="b", association="missing", diagnosis="qualifier_dropped"),
        ),
        CONSENSUS,
    )
    assert (view.support, view.association, view.diagnosis) == (
        "supported", "missing", "qualifier_dropped",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("citations", "association"), [(("p1",), "attached"), ((), "missing")], ids=["cited", "bare"]
)
def test_no_consensus_keeps_the_association_of_the_claims_citations(citations, association):
    view = choose(
        claim(verdict("supported", by="a"), verdict("partial", by="b"), citations=citations),
        CONSENSUS,
    )
    assert (view.support, view.association, view.relevance, view.diagnosis) == (
        "no_consensus", association, {}, "",
    )  # fmt: skip


def test_a_verdict_without_a_relevance_map_has_an_empty_one():
    assert choose(claim(verdict("supported")), Source()).relevance == {}


# --- per response: claim figures (metrics.md, "Per response") --------------------------------

CLAIM_ROWS = [
    # "the newest revision of each claim that is not withdrawn"
    pytest.param(
        {"claims": [claim(verdict(S)), claim(verdict(U), withdrawn=True)]},
        {"claims": 1, "support": (1, 1), "citation_presence": (1, 1)},
        id="withdrawn-claims-are-left-out-of-F",
    ),
    # "Abstention claims (kind `abstention`) are not in F."
    pytest.param(
        {"claims": [claim(verdict(S)), claim(verdict(U), kind="abstention", citations=())]},
        {"claims": 1, "support": (1, 1), "citation_presence": (1, 1), "status": "reviewed"},
        id="abstention-claims-are-not-in-F",
    ),
    # "`verdicts`: counts of supported, partial, unsupported, not_assessable, unreviewed over F"
    pytest.param(
        {
            "claims": [claim(verdict(x)) for x in (S, S, P, U, NA)] + [claim()],
        },
        {
            "verdicts": {S: 2, P: 1, U: 1, NA: 1, "unreviewed": 1, "no_consensus": 0},
            "claims": 6,
        },
        id="verdicts-are-counted-per-label-over-F",
    ),
    # "`citation_presence`: claims in F with association `attached` / n"
    pytest.param(
        {
            "claims": [
                claim(verdict(S)),
                claim(verdict(S, association="missing"), citations=()),
                claim(verdict(S, association="missing")),
            ]
        },
        {"citation_presence": (1, 3)},
        id="citation-presence-counts-the-verdicts-association",
    ),
    # decisions.md: a claim without a verdict counts as attached when it has citations.
    pytest.param(
        {"claims": [claim(), claim(citations=())]},
        {"citation_presence": (1, 2)},
        id="citation-presence-of-an-unjudged-claim-follows-its-citations",
    ),
    # "`support` (S): claims in F judged `supported` / n"
    pytest.param(
        {"claims": [claim(verdict(x)) for x in (S, P, U, NA)] + [claim()]},
        {"support": (1, 5), "support_or_partial": (2, 5)},
        id="support-and-support-or-partial-over-all-of-F",
    ),
    # "`support_assessed`: supported / (n − not_assessable − unreviewed)"
    pytest.param(
        {"claims": [claim(verdict(x)) for x in (S, P, U, NA, NA)] + [claim()]},
        {"support_assessed": (1, 3), "support": (1, 6)},
        id="support-assessed-leaves-out-not-assessable-and-unreviewed",
    ),
    # "undefined when: no assessed claim"
    pytest.param(
        {"claims": [claim(verdict(NA)), claim()]},
        {"support_assessed": None, "support": (0, 2)},
        id="support-assessed-is-undefined-when-nothing-was-assessed",
    ),
    # "`coverage` (U): required facts g such that some claim in F linked to g is supported / |G|"
    pytest.param(
        {
            "claims": [
                claim(verdict(S), facts=("G1",)),
                claim(verdict(S), facts=("G1", "G9")),  # G9 is not a required fact
                claim(verdict(P), facts=("G2",)),
                claim(verdict(S), facts=("G3",), withdrawn=True),
                claim(verdict(S), facts=("G3",), kind="abstention"),
            ],
            "facts": 3,
        },
        {"coverage": (1, 3)},
        id="coverage-counts-facts-with-a-supported-current-factual-claim",
    ),
    # "undefined when |G| = 0"
    pytest.param(
        {"claims": [claim(verdict(S), facts=("G1",))]},
        {"coverage": None},
        id="coverage-is-undefined-without-required-facts",
    ),
    # "`citation_recall`: claims in F that are supported **and** attached / n"
    pytest.param(
        {
            "claims": [
                claim(verdict(S)),
                claim(verdict(S, association="missing"), citations=()),
                claim(verdict(P)),
                claim(),
            ]
        },
        {"citation_recall": (1, 4)},
        id="citation-recall-needs-supported-and-attached",
    ),
    # "`citation_precision`: attached citations judged necessary or redundant / attached
    # citations with a relevance judgement"
    pytest.param(
        {
            "claims": [
                claim(
                    verdict(
                        S, relevance={"p1": "necessary", "p2": "redundant", "p3": "irrelevant"}
                    ),
                    citations=("p1", "p2", "p3", "p4"),  # p4 has no judgement
                ),
                claim(
                    verdict(P, relevance={"p1": "irrelevant", "p9": "necessary"})
                ),  # p9 not cited
            ]
        },
        {"citation_precision": (2, 4)},
        id="citation-precision-over-judged-attached-citations",
    ),
    # "a response with no judged citation is undefined, not 0"
    pytest.param(
        {"claims": [claim(verdict(S)), claim()]},
        {"citation_precision": None},
        id="citation-precision-is-undefined-when-no-citation-is-judged",
    ),
    # "`honest_misses`: known gaps addressed by an abstention claim / known gaps"
    pytest.param(
        {
            "claims": [
                claim(kind="abstention", gaps=("X1",), citations=()),
                claim(verdict(S), gaps=("X2",)),  # a factual claim does not address a gap
                claim(kind="abstention", gaps=("X3",), withdrawn=True),
            ],
            "gaps": 3,
        },
        {"honest_misses": (1, 3)},
        id="honest-misses-count-gaps-of-current-abstention-claims",
    ),
    # decisions.md: "a current abstention claim … not judged unsupported".
    pytest.param(
        {
            "claims": [
                claim(verdict(U), kind="abstention", gaps=("X1",)),
                claim(verdict(S), kind="abstention", gaps=("X2",)),
                claim(verdict(P), kind="abstention", gaps=("X3",)),
                claim(kind="abstention", gaps=("X4",)),
            ],
            "gaps": 4,
        },
        {"honest_misses": (3, 4), "status": "abstention"},
        id="honest-misses-leave-out-an-abstention-judged-unsupported",
    ),
    # "undefined when: no known gap"
    pytest.param(
        {"claims": [claim(kind="abstention", gaps=("X1",))]},
        {"honest_misses": None},
        id="honest-misses-are-undefined-without-known-gaps",
    ),
    # "`invented_over_gap`: factual claims linked to a known gap, or judged unsupported with
    # diagnosis not_in_collection"
    pytest.param(
        {
            "claims": [
                claim(verdict(S), gaps=("X1",)),
                claim(gaps=("X1",)),
                claim(verdict(U, diagnosis="not_in_collection")),
                claim(verdict(U, diagnosis="not_in_collection")),
                claim(verdict(U, diagnosis="qualifier_dropped")),
                claim(verdict(P, diagnosis="not_in_collection")),
                claim(kind="abstention", gaps=("X1",)),
                claim(verdict(U, diagnosis="not_in_collection"), withdrawn=True),
            ],
            "gaps": 1,
        },
        {"invented_over_gap": 4},
        id="invented-over-gap-counts-factual-claims-on-a-gap-or-not-in-collection",
    ),
    # "consensus … a claim without one is counted as no_consensus and left out of the ratios"
    pytest.param(
        {
            "claims": [
                claim(verdict(S, by="a"), verdict(U, by="b")),
                claim(verdict(S, by="a"), verdict(S, by="b"), facts=("G1",)),
                claim(),
            ],
            "facts": 1,
            "source": CONSENSUS,
        },
        {
            "claims": 3,
            "verdicts": {S: 1, P: 0, U: 0, NA: 0, "unreviewed": 1, "no_consensus": 1},
            "support": (1, 2),
            "support_or_partial": (1, 2),
            "support_assessed": (1, 1),
            "citation_presence": (2, 2),
            "citation_recall": (1, 2),
            "coverage": (1, 1),
        },
        id="consensus-no-consensus-is-counted-and-left-out-of-the-ratios",
    ),
    pytest.param(
        {
            "claims": [
                claim(
                    verdict(S, by="a", relevance={"p1": "irrelevant"}),
                    verdict(U, by="b", relevance={"p1": "irrelevant"}),
                ),
                claim(verdict(S, relevance={"p1": "necessary"})),
            ],
            "source": CONSENSUS,
        },
        {"citation_precision": (1, 1)},
        id="consensus-no-consensus-claims-leave-citation-precision-too",
    ),
    # "`annotator NAME` … claims it did not label are `unreviewed`"
    pytest.param(
        {
            "claims": [claim(verdict(S, by="carol")), claim(verdict(S, by="alice"))],
            "source": annotator_source("carol"),
        },
        {
            "verdicts": {S: 1, P: 0, U: 0, NA: 0, "unreviewed": 1, "no_consensus": 0},
            "support": (1, 2),
            "support_assessed": (1, 1),
        },
        id="annotator-unlabelled-claims-are-unreviewed",
    ),
    # "A reviewed response with n = 0 … is recorded as an abstention: S and citation presence
    # are undefined, coverage is 0 / |G|."
    pytest.param(
        {"claims": [claim(kind="abstention", gaps=("X1",), citations=())], "facts": 2, "gaps": 1},
        {
            "status": "abstention",
            "claims": 0,
            "support": None,
            "support_or_partial": None,
            "citation_presence": None,
            "citation_recall": None,
            "coverage": (0, 2),
            "honest_misses": (1, 1),
            "invented_over_gap": 0,
        },
        id="a-reviewed-response-with-no-factual-claim-is-an-abstention",
    ),
    pytest.param(
        {"claims": [], "facts": 1},
        {"status": "abstention", "support": None, "coverage": (0, 1)},
        id="an-empty-answer-never-scores",
    ),
    # "Claim figures leave unreviewed responses out and count them"
    pytest.param(
        {"claims": [claim(verdict(S), facts=("G1",)), claim()], "facts": 1, "reviewed": False},
        {"status": "unreviewed", "claims": 2, "verdicts": None, "invented_over_gap": None}
        | dict.fromkeys(CLAIM_FIGURES),
        id="an-unreviewed-response-has-no-claim-figures",
    ),
]


@pytest.mark.parametrize(("inputs", "expected"), CLAIM_ROWS)
def test_the_claim_figures_of_one_response(inputs, expected):
    result = figures(**inputs)
    assert {name: kn(result[name]) for name in expected} == expected


def test_every_claim_figure_is_there_for_a_reviewed_response():
    result = figures([claim(verdict(S))])
    assert {*CLAIM_FIGURES, "invented_over_gap", "verdicts", "claims", "status"} <= set(result)


def test_a_responses_figures_in_json_are_k_n_with_interval_and_null_when_undefined():
    # "Every figure is shown as k / n … with its 95 % Wilson interval"; "A figure whose
    # denominator is zero is undefined and is shown as such (and as `null` in JSON)".
    low, high = wilson(1, 2)
    result = to_json(figures([claim(verdict(S)), claim(verdict(U))]))
    assert result["support"] == {
        "k": 1, "n": 2, "value": 0.5, "low": round(low, 4), "high": round(high, 4),
    }  # fmt: skip
    assert result["coverage"] is None  # no required fact
    assert result["claims"] == 2
    assert result["verdicts"] == {S: 1, P: 0, U: 1, NA: 0, "unreviewed": 0, "no_consensus": 0}


# --- per response: retrieval figures (metrics.md, "Retrieval") -------------------------------

RANKED = ("a@1#1", "b@1#1", "c@1#1", "d@1#1", "e@1#1", "f@1#1", "g@1#1")

RETRIEVAL_ROWS = [
    # "`passage_recall@k` = |R ∩ top-k refs| / |R|"
    pytest.param(
        {"ranked": RANKED, "relevant": ("a@1#1", "c@1#1", "z@1#1")},
        {
            "passage_recall@1": (1, 3),
            "passage_recall@2": (1, 3),
            "passage_recall@3": (2, 3),
            "passage_recall@7": (2, 3),
        },
        id="passage-recall-at-k",
    ),
    pytest.param(
        {"ranked": RANKED[:2], "relevant": ("b@1#1", "b@1#1")},
        {"passage_recall@1": (0, 1), "passage_recall@2": (1, 1)},
        id="passage-recall-counts-a-relevant-ref-once",
    ),
    # "`doc_recall@k` = |D(R) ∩ documents of top-k| / |D(R)|", D(R) the distinct doc_id of R
    pytest.param(
        {
            "ranked": ("x@2#9", "b@1#1", "y@1#1"),
            "relevant": ("x@1#1", "x@1#2", "y@1#1"),
            "doc_of": {"x@2#9": "X", "x@1#1": "X", "x@1#2": "X", "b@1#1": "B", "y@1#1": "Y"},
        },
        {
            "doc_recall@1": (1, 2),
            "doc_recall@2": (1, 2),
            "doc_recall@3": (2, 2),
            "passage_recall@1": (0, 3),
            "passage_recall@3": (1, 3),
        },
        id="doc-recall-counts-documents-once-whatever-passage-of-them-is-retrieved",
    ),
    # bundle.md: a ref is DOC_ID@VERSION#CHUNK_ID, so a ref never stored names its document.
    pytest.param(
        {"ranked": ("q@2#9",), "relevant": ("q@1#1", "r@1#1")},
        {"doc_recall@1": (1, 2)},
        id="doc-recall-reads-the-document-from-a-ref-without-a-stored-passage",
    ),
    # "`fact_evidence_recall@k` = facts g with at least one evidence ref in top-k / |G|"
    pytest.param(
        {
            "ranked": RANKED,
            "facts": 3,
            "evidence": {"G1": ("b@1#1", "f@1#1"), "G2": ("z@1#1",), "G3": ("d@1#1",)},
        },
        {
            "fact_evidence_recall@1": (0, 3),
            "fact_evidence_recall@2": (1, 3),
            "fact_evidence_recall@4": (2, 3),
            "fact_evidence_recall@7": (2, 3),
        },
        id="fact-evidence-recall-at-k",
    ),
    # "each is undefined when … for facts, G is empty"
    pytest.param(
        {"ranked": RANKED, "relevant": ("a@1#1",)},
        {"fact_evidence_recall@1": None, "passage_recall@1": (1, 1)},
        id="fact-evidence-recall-is-undefined-without-facts",
    ),
    # "`hit@k` = 1 when top-k holds at least one ref of R, else 0"
    pytest.param(
        {"ranked": RANKED, "relevant": ("c@1#1", "z@1#1")},
        {"hit@1": 0, "hit@2": 0, "hit@3": 1, "hit@10": 1},
        id="hit-at-k",
    ),
    # "each is undefined when R … is empty"
    pytest.param(
        {"ranked": RANKED, "facts": 1, "evidence": {"G1": ("a@1#1",)}},
        {
            "passage_recall@1": None,
            "doc_recall@1": None,
            "hit@1": None,
            "context_precision": None,
            "fact_evidence_recall@1": (1, 1),
        },
        id="retrieval-figures-are-undefined-without-relevant-refs",
    ),
    # "`context_precision` = the mean, over the refs of R that appear in the list, of
    # precision@rank at their rank"
    pytest.param(
        {"ranked": RANKED, "relevant": ("b@1#1", "f@1#1")},
        {"context_precision": 0.4167},  # (1/2 + 2/6) / 2, cli.md's example
        id="context-precision-is-the-mean-precision-at-the-relevant-ranks",
    ),
    pytest.param(
        {"ranked": RANKED, "relevant": ("a@1#1", "c@1#1")},
        {"context_precision": 0.8333},  # (1/1 + 2/3) / 2
        id="context-precision-with-a-miss-between-two-hits",
    ),
    pytest.param(
        {"ranked": RANKED, "relevant": ("c@1#1", "z@1#1")},
        {"context_precision": 0.3333},  # only c appears: 1/3, z is not averaged in
        id="context-precision-averages-only-the-relevant-refs-retrieved",
    ),
    pytest.param(
        {"ranked": RANKED, "relevant": ("a@1#1", "b@1#1")},
        {"context_precision": 1.0},
        id="context-precision-is-1-when-the-relevant-refs-lead",
    ),
    # "0 when no ref of R is retrieved"
    pytest.param(
        {"ranked": RANKED, "relevant": ("z@1#1",)},
        {"context_precision": 0.0, "hit@7": 0},
        id="context-precision-is-0-when-nothing-relevant-is-retrieved",
    ),
]


@pytest.mark.parametrize(("inputs", "expected"), RETRIEVAL_ROWS)
def test_the_retrieval_figures_of_one_response(inputs, expected):
    result = figures([], **inputs)
    assert {name: kn(result[name]) for name in expected} == expected


def test_context_precision_is_a_plain_number():
    value = figures([], ranked=RANKED, relevant=("b@1#1",))["context_precision"]
    assert type(value) is float and value == 0.5


@pytest.mark.parametrize(
    ("length", "ranks"),
    [
        (0, [1, 2, 3, 4, 5, 10]),
        (3, [1, 2, 3, 4, 5, 10]),
        (7, [1, 2, 3, 4, 5, 7, 10]),
        (10, [1, 2, 3, 4, 5, 10]),
        (12, [1, 2, 3, 4, 5, 10, 12]),
    ],
)
def test_k_takes_1_to_5_then_10_and_the_length_of_the_list(length, ranks):
    # "k takes every value from 1 to 5, then 10, and the length of the list"
    result = figures([], ranked=tuple(f"r{i}@1#1" for i in range(length)), relevant=("r0@1#1",))
    for base in ("passage_recall", "doc_recall", "fact_evidence_recall", "hit"):
        have = sorted(int(name.split("@")[1]) for name in result if name.startswith(f"{base}@"))
        assert have == ranks, base


def test_a_ref_not_retrieved_is_not_found_at_a_k_beyond_the_end_of_the_list():
    # "|R ∩ top-k refs|": a list of 2 has no rank 3, so at k = 5 or 10 a missing ref stays missing
    result = figures(
        [], ranked=RANKED[:2], relevant=("b@1#1", "z@9#1"), facts=2,
        evidence={"G1": ("a@1#1",), "G2": ("z@9#1",)},
    )  # fmt: skip
    for k in (2, 5, 10):
        assert kn(result[f"passage_recall@{k}"]) == (1, 2), k
        assert kn(result[f"doc_recall@{k}"]) == (1, 2), k
        assert kn(result[f"fact_evidence_recall@{k}"]) == (1, 2), k


def test_no_hit_at_a_k_beyond_the_end_of_the_list():
    result = figures([], ranked=RANKED[:2], relevant=("z@1#1",))
    assert [result[f"hit@{k}"] for k in (1, 2, 3, 4, 5, 10)] == [0] * 6


@pytest.mark.parametrize("reviewed", [True, False], ids=["reviewed", "unreviewed"])
def test_retrieval_figures_need_no_review(reviewed):
    # "retrieval figures and pre-checks do not need a review and are computed for every response"
    result = figures([], reviewed=reviewed, ranked=RANKED, relevant=("b@1#1",))
    assert kn(result["passage_recall@2"]) == (1, 1)
    assert result["hit@1"] == 0
    assert result["context_precision"] == 0.5


# --- per run (metrics.md, "Per run") ---------------------------------------------------------


def response(labels: str, *, reviewed: bool = True, hit_rank: int | None = 1, **kwargs) -> dict:
    """Figures of a response whose factual claims carry these labels (S/P/U/N, - unlabelled),
    with its one relevant ref at `hit_rank` of a three-passage list (None: not retrieved)."""
    code = {"S": S, "P": P, "U": U, "N": NA}
    claims = [claim(verdict(code[c])) if c in code else claim() for c in labels]
    ranked = ["x@1#1", "y@1#1", "z@1#1"]
    if hit_rank:
        ranked[hit_rank - 1] = "rel@1#1"
    return figures(
        claims, reviewed=reviewed, ranked=tuple(ranked), relevant=("rel@1#1",), **kwargs
    )


def test_micro_pools_k_and_n_and_macro_averages_per_case():
    # "micro: sum of k over sum of n … macro: the mean of the defined per-response values,
    # with the number of cases it is over"
    totals = run_totals([response("SU"), response("SSSU")])
    assert kn(totals["micro"]["support"]) == (4, 6)
    assert totals["macro"]["support"] == {"value": 0.625, "cases": 2}  # (1/2 + 3/4) / 2


def test_the_micro_figure_carries_its_wilson_interval():
    micro = run_totals([response("SU"), response("SSSU")])["micro"]["support"].as_json()
    low, high = wilson(4, 6)
    assert micro == {"k": 4, "n": 6, "value": 0.6667, "low": round(low, 4), "high": round(high, 4)}


def test_macro_averages_only_defined_values_and_says_over_how_many_cases():
    totals = run_totals([response("SU"), response(""), response("S")])
    assert totals["macro"]["support"] == {"value": 0.75, "cases": 2}
    assert kn(totals["micro"]["support"]) == (2, 3)
    # "undefined counts are reported as counts of cases"
    assert totals["undefined"]["support"] == 1


def test_macro_values_are_rounded_to_4_places():
    no_relevant = figures([], ranked=("x@1#1",))
    totals = run_totals([response("SUU", hit_rank=3), no_relevant])
    assert totals["macro"]["support"] == {"value": 0.3333, "cases": 1}
    assert totals["macro"]["passage_recall@3"] == {"value": 1.0, "cases": 1}
    assert totals["macro"]["context_precision"] == {"value": 0.3333, "cases": 1}
    two = run_totals([response("S", hit_rank=2), response("S", hit_rank=3)])
    assert two["macro"]["context_precision"] == {"value": 0.4166, "cases": 2}  # (0.5 + 0.3333) / 2


def test_a_retrieval_figure_undefined_for_a_response_is_counted_as_a_case():
    no_relevant = figures([], ranked=("x@1#1",))
    totals = run_totals([response("S"), no_relevant, response("", reviewed=False)])
    assert totals["undefined"]["passage_recall@1"] == 1
    assert totals["undefined"]["fact_evidence_recall@1"] == 3  # no required fact anywhere
    assert totals["macro"]["passage_recall@1"] == {"value": 1.0, "cases": 2}


def test_a_figure_undefined_everywhere_is_undefined_for_the_run():
    totals = run_totals([response(""), response("", reviewed=False)])
    assert totals["micro"]["support"].defined is False
    assert totals["macro"]["support"] is None
    assert totals["undefined"]["support"] == 1  # the abstention; the unreviewed is not a case


def test_a_run_with_no_reviewed_response_shows_claim_figures_as_0_of_0():
    # "shown as k / n": an undefined figure is 0 / 0 (null in JSON), never 1 / 0 or 0 / 1.
    totals = run_totals([response("S", reviewed=False)])
    assert totals["micro"]["support"] == Proportion(0, 0)
    assert totals["macro"]["support"] is None
    assert totals["undefined"]["support"] == 0  # no reviewed response: no case to count


def test_unreviewed_responses_are_counted_not_scored_but_their_retrieval_is():
    # "Claim figures leave unreviewed responses out and count them; retrieval figures … are
    # computed for every response"
    totals = run_totals([response("S", hit_rank=1), response("UU", reviewed=False, hit_rank=2)])
    assert (totals["responses"], totals["reviewed"], totals["unreviewed"]) == (2, 1, 1)
    assert kn(totals["micro"]["support"]) == (1, 1)
    assert totals["claims"] == 1
    assert totals["verdicts"][U] == 0
    assert kn(totals["micro"]["passage_recall@1"]) == (1, 2)
    assert totals["macro"]["passage_recall@1"] == {"value": 0.5, "cases": 2}
    assert kn(totals["micro"]["hit@2"]) == (2, 2)
    assert totals["macro"]["context_precision"] == {"value": 0.75, "cases": 2}


def test_hit_at_k_is_pooled_over_the_cases_with_relevant_refs():
    no_relevant = figures([], ranked=("x@1#1",))
    totals = run_totals([response("S", hit_rank=1), response("S", hit_rank=None), no_relevant])
    assert kn(totals["micro"]["hit@1"]) == (1, 2)
    assert totals["macro"]["context_precision"] == {"value": 0.5, "cases": 2}


def test_abstentions_honest_misses_and_invented_claims_are_counts_of_cases():
    # "Abstentions, honest misses and undefined counts are reported as counts of cases."
    honest = figures([claim(kind="abstention", gaps=("X1",))], gaps=2)
    missed = figures([claim(verdict(U), gaps=("X1",))], gaps=1)
    totals = run_totals([honest, missed, response("S"), response("", reviewed=False)])
    assert totals["abstentions"] == 1
    assert totals["honest_misses_cases"] == 1
    assert totals["invented_over_gap"] == 1
    assert kn(totals["micro"]["honest_misses"]) == (1, 3)


def test_run_verdict_counts_add_up_over_reviewed_responses():
    consensus = figures([claim(verdict(S, by="a"), verdict(U, by="b"))], source=CONSENSUS)
    totals = run_totals([response("SPUN-"), consensus])
    assert totals["verdicts"] == {S: 1, P: 1, U: 1, NA: 1, "unreviewed": 1, "no_consensus": 1}
    assert totals["claims"] == 6


def test_streamed_totals_equal_the_totals_of_the_list():
    rows = [response("SU"), response("", reviewed=False, hit_rank=2), response("")]
    totals = Totals()
    for row in rows:
        totals.add(row)
    assert totals.result() == run_totals(rows)


def test_the_run_lists_retrieval_figures_in_rank_order():
    # Lists of 12 and then 7 passages: @7 arrives last but is listed between @5 and @10.
    twelve = tuple(f"r{i}@1#1" for i in range(12))
    micro = run_totals(
        [
            figures([], ranked=twelve, relevant=("r0@1#1",)),
            figures([], ranked=RANKED, relevant=("a@1#1",)),
        ]
    )["micro"]
    recalls = [name for name in micro if name.startswith("passage_recall@")]
    assert recalls == [f"passage_recall@{k}" for k in (1, 2, 3, 4, 5, 7, 10, 12)]
    hits = [name for name in micro if name.startswith("hit@")]
    assert hits == [f"hit@{k}" for k in (1, 2, 3, 4, 5, 7, 10, 12)]
    assert kn(micro["passage_recall@7"]) == (1, 1)  # only the list of 7 has a k of 7
