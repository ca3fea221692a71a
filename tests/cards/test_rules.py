"""The judgement rules that the review, the figures and the bundle import share."""

from __future__ import annotations

import pytest

from cards.rules import association_problem, default_association


def test_the_association_defaults_to_attached_when_the_claim_has_citations():
    assert default_association(["D-01@v4#p04"]) == "attached"
    assert default_association([]) == "missing"


@pytest.mark.parametrize(
    ("association", "citations", "problem"),
    [
        ("attached", ["a"], None),
        ("missing", [], None),
        (None, ["a"], None),  # not given: the default applies
        ("missing", ["a"], "is missing, but the claim has citations"),
        ("attached", [], "is attached, but the claim has no citations"),
    ],
)
def test_an_association_must_agree_with_the_claims_citations(association, citations, problem):
    assert association_problem(association, citations) == problem
