"""The pre-checks of metrics.md ("Automatic pre-checks"), one table row per rule.

Each row is one response: its answer, its ranked passages, what it cites, its claims;
and every hint that must fire, with its details, and no other.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cards.prechecks import (
    NUMBER,
    ClaimFacts,
    PassageFacts,
    ResponseFacts,
    numbers_in,
    prechecks,
    without_spans,
)


def passage(ref: str, text: str = "", status: str = "current") -> PassageFacts:
    # Passage numbers are stored at import with the same numbers_in (evidence/services.py).
    return PassageFacts(ref, frozenset(numbers_in(text)), status)


def response(
    answer: str = "An answer.", *, retrieved: tuple = (), cited_only: tuple = (),
    cited: tuple = (), relevant: tuple = (), markers: tuple = (), drifted: tuple = (),
    claims: tuple = (),
) -> ResponseFacts:  # fmt: skip
    """`retrieved` in rank order; `cited_only` are passages cited but not retrieved."""
    return ResponseFacts(
        answer=answer,
        marker_spans=list(markers),
        cited_refs=list(cited),
        retrieved=list(retrieved),
        passages={p.ref: p for p in (*retrieved, *cited_only)},
        relevant_refs=list(relevant),
        drifted_refs=frozenset(drifted),
        claims=list(claims),
    )


def factual(key: str, text: str = "A claim.", *citations: str) -> ClaimFacts:
    return ClaimFacts(key, "factual", text, list(citations))


def abstention(key: str, text: str = "The sources do not say.") -> ClaimFacts:
    return ClaimFacts(key, "abstention", text, [])


A, B, C, D = (passage(ref) for ref in ("a", "b", "c", "d"))
OLD = passage("old", status="superseded")

ROWS = [
    # `claim_without_citation`: "a factual claim has no attached citation"
    pytest.param(
        response(retrieved=(A,), claims=(factual("c1"), factual("c2", "B.", "a"))),
        {},
        {"c1": ["claim_without_citation"]},
        id="claim-without-citation-fires-on-a-bare-factual-claim",
    ),
    pytest.param(
        response(claims=(abstention("c1"),)),
        {},
        {},
        id="claim-without-citation-leaves-an-abstention-alone",
    ),
    # `citation_not_retrieved`: "a cited ref is not in the response's `retrieved` list"
    pytest.param(
        response(
            retrieved=(A,),
            cited_only=(B, C),
            cited=("c", "a", "b", "c"),
            claims=(factual("c1", "X.", "b"), factual("c2", "Y.", "a")),
        ),  # fmt: skip
        {"citation_not_retrieved": ["c", "b"]},
        {"c1": ["citation_not_retrieved"]},
        id="citation-not-retrieved-names-the-cited-refs-in-order-without-repeats",
    ),
    # `cites_superseded_version`: "a cited passage has `version_status` `superseded`"
    pytest.param(
        response(
            retrieved=(OLD, A),
            cited=("old", "a", "old"),
            claims=(factual("c1", "X.", "old"), factual("c2", "Y.", "a")),
        ),  # fmt: skip
        {"cites_superseded_version": ["old"]},
        {"c1": ["cites_superseded_version"]},
        id="cites-superseded-version-fires-on-a-cited-superseded-passage",
    ),
    pytest.param(
        response(retrieved=(OLD, A), cited=("a",), claims=(factual("c1", "X.", "a"),)),
        {},
        {},
        id="cites-superseded-version-ignores-a-superseded-passage-only-retrieved",
    ),
    pytest.param(
        response(
            retrieved=(A,),
            cited_only=(OLD,),
            cited=("old",),
            claims=(factual("c1", "X.", "old"),),
        ),  # fmt: skip
        {"cites_superseded_version": ["old"], "citation_not_retrieved": ["old"]},
        {"c1": ["cites_superseded_version", "citation_not_retrieved"]},
        id="a-superseded-passage-cited-and-not-retrieved-gets-both-codes",
    ),
    pytest.param(
        response(retrieved=(A,), claims=(factual("c1", "X.", "ghost"),)),
        {},
        {"c1": ["citation_not_retrieved"]},
        id="a-claim-citing-a-passage-never-stored-is-not-superseded",
    ),
    # `number_not_in_evidence`, per response: "a number in the answer appears in none of
    # the retrieved passages"
    pytest.param(
        response("Returns take 5 days.", retrieved=(passage("a", "Returns take 15 days."),)),
        {"number_not_in_evidence": ["5"]},
        {},
        id="numbers-are-whole-tokens-so-5-does-not-match-15",
    ),
    pytest.param(
        response("Returns take 15 days.", retrieved=(passage("a", "5 days, or 150 for firms."),)),
        {"number_not_in_evidence": ["15"]},
        {},
        id="numbers-are-whole-tokens-so-15-matches-neither-5-nor-150",
    ),
    pytest.param(
        response("It weighs 2.5 kg or 1,5 kg.", retrieved=(passage("a", "2 kg, 5 kg, 1 kg"),)),
        {"number_not_in_evidence": ["2.5", "1,5"]},
        {},
        id="numbers-with-a-decimal-point-or-comma-are-one-token",
    ),
    pytest.param(
        response("It weighs 2.5 kg.", retrieved=(passage("a", "It weighs 2.5 kg."),)),
        {},
        {},
        id="a-decimal-number-found-in-evidence-is-fine",
    ),
    pytest.param(
        response(
            "It takes 5 days and costs 49 euros.",
            retrieved=(passage("a", "5"), passage("b", "49")),
        ),
        {},
        {},
        id="a-number-in-any-retrieved-passage-is-fine",
    ),
    pytest.param(
        response("It costs 49 euros.", retrieved=(A,), cited_only=(passage("x", "49"),)),
        {"number_not_in_evidence": ["49"]},
        {},
        id="numbers-of-the-answer-are-looked-for-in-retrieved-passages-only",
    ),
    # "The detail is the list of such numbers, in order of first appearance, without repeats"
    pytest.param(
        response("30 days, 7 days, 30 again, then 12 and 7.", retrieved=(passage("a", "12"),)),
        {"number_not_in_evidence": ["30", "7"]},
        {},
        id="missing-numbers-in-order-of-first-appearance-without-repeats",
    ),
    # "after removing the citation markers (the `citations[]` spans) from the answer"
    pytest.param(
        response(
            "Within 30 days [3]. See [D1].",
            retrieved=(passage("a", "30"),),
            markers=((15, 18), (24, 28)),
        ),  # fmt: skip
        {},
        {},
        id="citation-markers-are-removed-before-looking-for-numbers",
    ),
    pytest.param(
        response("Within 30 days [3]. See [D1].", retrieved=(passage("a", "30"),)),
        {"number_not_in_evidence": ["3", "1"]},
        {},
        id="without-its-marker-spans-a-markers-digits-would-count",
    ),
    pytest.param(
        response("Within 30 days[3].", retrieved=(passage("a", "303"),), markers=((14, 17),)),
        {"number_not_in_evidence": ["30"]},
        {},
        id="a-number-is-not-found-inside-a-longer-number-of-the-passage",
    ),
    # per claim: "a number in the claim appears in none of its attached passages"
    pytest.param(
        response(
            "Returns take 30 days.",
            retrieved=(passage("a", "no numbers"), passage("b", "30")),
            claims=(factual("c1", "Returns take 30 days.", "a"),),
        ),  # fmt: skip
        {},
        {"c1": ["number_not_in_evidence"]},
        id="a-claims-numbers-are-checked-against-its-own-citations-only",
    ),
    pytest.param(
        response(
            "Within 14 days.",
            retrieved=(passage("a", "14"),),
            cited_only=(passage("x", "30"),),
            cited=("x",),
            claims=(factual("c1", "Within 30 days.", "x"),),
        ),  # fmt: skip
        {"citation_not_retrieved": ["x"]},
        {"c1": ["citation_not_retrieved"]},
        id="a-claims-attached-passage-counts-even-when-not-retrieved",
    ),
    pytest.param(
        response(
            "Open 24 hours.",
            retrieved=(passage("a", "24"),),
            claims=(factual("c1", "Open 24 hours."), abstention("c2", "No word on 2026.")),
        ),
        {},
        {
            "c1": ["claim_without_citation", "number_not_in_evidence"],
            "c2": ["number_not_in_evidence"],
        },  # fmt: skip
        id="a-claim-without-attached-passages-has-no-evidence-for-its-numbers",
    ),
    pytest.param(
        response(
            "Open 24 hours.",
            retrieved=(passage("a", "24"),),
            claims=(factual("c1", "Open 24 hours.", "a"),),
        ),  # fmt: skip
        {},
        {},
        id="a-claims-number-in-its-attached-passage-is-fine",
    ),
    # `relevant_not_retrieved`: "no ref of R is in the top 3 (`hit@3` = 0)"; cli.md: the detail
    # "lists the relevant refs missing from the top 3"
    pytest.param(
        response(retrieved=(A, B, C, D), relevant=("c", "z")),
        {},
        {},
        id="relevant-not-retrieved-is-quiet-when-a-relevant-ref-is-third",
    ),
    pytest.param(
        response(retrieved=(A, B, C, D), relevant=("d", "z", "d")),
        {"relevant_not_retrieved": ["d", "z"]},
        {},
        id="relevant-not-retrieved-fires-when-the-first-relevant-ref-is-fourth",
    ),
    pytest.param(
        response(retrieved=(A,), relevant=()),
        {},
        {},
        id="relevant-not-retrieved-needs-relevant-refs",
    ),
    # `passage_drift`: "a cited ref has a different text (hash) in another snapshot"
    pytest.param(
        response(retrieved=(A, B), cited=("a", "b", "a"), drifted=("a", "b", "c")),
        {"passage_drift": ["a", "b"]},
        {},
        id="passage-drift-names-the-cited-refs-that-drifted",
    ),
    pytest.param(
        response(retrieved=(A, B), cited=("a",), drifted=("b",)),
        {},
        {},
        id="passage-drift-ignores-a-drifted-passage-that-is-not-cited",
    ),
]


@pytest.mark.parametrize(("facts", "response_hints", "claim_hints"), ROWS)
def test_the_prechecks_of_one_response(facts, response_hints, claim_hints):
    result = prechecks(facts)
    assert result.response == response_hints
    assert result.claims == claim_hints
    assert result.as_dict() == {"response": response_hints, "claims": claim_hints}


# "Numbers are whole tokens matched by `\d+(?:[.,]\d+)?`"
NUMBER_ROWS = [
    pytest.param("5 of 15 users", ["5", "15"], id="integers"),
    pytest.param("2.5 hours, 1,5 litres", ["2.5", "1,5"], id="one-decimal-separator"),
    pytest.param("v2.0.1", ["2.0", "1"], id="a-second-separator-starts-a-new-number"),
    pytest.param("12. 3, and 7,", ["12", "3", "7"], id="a-trailing-separator-is-not-part"),
    pytest.param("-40 °C", ["40"], id="no-sign"),
    pytest.param("1,000,000", ["1,000", "000"], id="thousands-separators-split"),
    pytest.param("5, 5 and 5.0", ["5", "5.0"], id="repeats-once-in-order-of-first-appearance"),
    pytest.param("no numbers", [], id="none"),
]


@pytest.mark.parametrize(("text", "numbers"), NUMBER_ROWS)
def test_number_tokens(text, numbers):
    assert numbers_in(text) == numbers


def scanned(text: str) -> list[str]:
    """What numbers_in means: NUMBER over the whole text, repeats dropped."""
    return list(dict.fromkeys(NUMBER.findall(text)))


number_texts = st.text(st.sampled_from("0123456789.,, ;-a\t\n\x00\x7f")) | st.text(
    st.characters(codec="ascii")
)


@given(number_texts)
def test_the_number_tokens_of_an_ascii_text_are_those_of_the_whole_scan(text):
    assert numbers_in(text) == scanned(text)


@given(number_texts, st.sampled_from(["٣", "é", "१२", "½", "²", "𝟗"]))
def test_a_text_with_other_digits_or_letters_is_scanned_whole(text, other):
    assert numbers_in(text + other + text) == scanned(text + other + text)


@pytest.mark.parametrize(
    ("spans", "blanked"),
    [
        pytest.param([], "ab[1]cd[2]", id="none"),
        pytest.param([(2, 5)], "ab   cd[2]", id="one"),
        pytest.param([(7, 10), (2, 5)], "ab   cd   ", id="unsorted"),
        pytest.param([(2, 5), (3, 8)], "ab      2]", id="overlapping"),
        pytest.param([(2, 5), (3, 4), (7, 10)], "ab   cd   ", id="nested-then-another"),
        pytest.param([(8, 99)], "ab[1]cd[  ", id="past-the-end"),
        pytest.param([(4, 2)], "ab[1]cd[2]", id="empty"),
    ],
)
def test_markers_are_blanked_in_place(spans, blanked):
    # Blanked, not cut: the numbers either side of a marker stay apart, offsets stay valid.
    assert without_spans("ab[1]cd[2]", spans) == blanked
