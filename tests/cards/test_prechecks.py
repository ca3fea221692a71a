"""Pre-checks: hints beside the cards, checked against the known answers and unit by unit."""

from __future__ import annotations

import json

import pytest

from cards.metrics import run_metrics
from cards.prechecks import (
    ClaimFacts,
    PassageFacts,
    ResponseFacts,
    numbers_in,
    prechecks,
    without_spans,
)
from cards.services.claims import claim_create
from replay.models import Response, Run
from tests.cards.conftest import D01, FINAL_SALE, NO_DURATION, WINDOW, page_for
from tests.conftest import KNOWN_ANSWERS

EXPECTED = json.loads(KNOWN_ANSWERS.read_text(encoding="utf-8"))["runs"]


def expected_cases() -> list[tuple[str, str | None, dict]]:
    """(run_id, case_id or None for the run's only case, {"response": …, "claims"?: …})."""
    cases = []
    for run_id, run in sorted(EXPECTED.items()):
        if "prechecks" in run:
            cases.append((run_id, None, run["prechecks"]))
        for case_id, case in sorted(run.get("per_case", {}).items()):
            cases.append((run_id, case_id, {"response": case["prechecks"]}))
    return cases


def test_the_known_answers_cover_every_run_with_prechecks():
    covered = {(run_id, case_id) for run_id, case_id, _ in expected_cases()}
    assert len(covered) == 9
    assert {run_id for run_id, _ in covered} == {
        "p7-answer-a", "p7-answer-b", "policy-r1", "pro-plan-r1", "q017-r1", "q017-r2",
        "q017-r3",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("run_id", "case_id", "expected"),
    expected_cases(),
    ids=[f"{run}-{case or 'response'}" for run, case, _ in expected_cases()],
)
def test_the_prechecks_match_the_known_answers(reviewer, demo_runs, run_id, case_id, expected):
    # Every bundle is in one project: passage_drift compares across runs' snapshots.
    case_id = case_id or Response.objects.get(run__run_id=run_id).case.case_id
    page = page_for(reviewer, run_id, case_id)
    for code, details in expected["response"].items():
        if details:
            assert page.response_hints.get(code) == details, code
        else:
            assert code not in page.response_hints, code
    if "claims" in expected:
        fired = {card.claim.key: card.hints for card in page.cards if card.hints}
        assert fired == expected["claims"]


def test_hints_are_shown_on_the_card_and_above_the_answer(client, reviewer, demo_runs):
    client.force_login(reviewer)
    content = client.get("/p/demo/runs/p7-answer-a/cases/P7-Q1/").content.decode()
    assert (
        '<li class="hint"><span class="mono">number_not_in_evidence</span>: '
        '<span class="mono">1000</span>'
    ) in content
    card = content[content.index('id="card-c5"') :]
    card = card[: card.index("</article>")]
    # The compact card names the hint, and says what it means on hover.
    assert '<li class="hint mono small" title="A number here appears in none' in card
    other = content[content.index('id="card-c1"') :]
    assert "number_not_in_evidence" not in other[: other.index("</article>")]
    whole = client.get(
        "/p/demo/runs/p7-answer-a/cases/P7-Q1/claims/c5/card/", HTTP_HX_REQUEST="true"
    )
    card = whole.content.decode()
    assert '<li class="hint"><span class="mono">number_not_in_evidence</span>' in card
    assert "A number here appears in none of the passages it rests on." in card


def test_a_new_claim_gets_its_hints_at_once(reviewer, demo_runs):
    response = Response.objects.get(run__run_id="q017-r3")
    # The replayed D-01 says 14 days; the claim says 30.
    claim = claim_create(
        response=response,
        author=reviewer,
        text="Returns are accepted for 30 days; final-sale items are excluded.",
        spans=[WINDOW, FINAL_SALE],
    )
    # The last sentence has no marker: nothing to attach (cards.rules.refs_for_spans).
    bare = claim_create(
        response=response, author=reviewer, text="No time is given.", spans=[NO_DURATION]
    )
    page = page_for(reviewer, "q017-r3", "Q-017")
    assert page.card(claim.key).revision.citations == [D01]
    assert page.card(claim.key).hints == ["number_not_in_evidence"]
    assert page.card(bare.key).hints == ["claim_without_citation"]


# The superseded passage c1 cites says 30 days, as the claim does; the response never
# retrieved or marked it. Checked against the retrieved passage only, c1 would get a false
# number_not_in_evidence and miss cites_superseded_version.
ASIDE_HINTS = ["cites_superseded_version", "citation_not_retrieved"]


def test_a_claim_citing_a_passage_its_response_never_retrieved_gets_its_hints_on_the_page(
    reviewer, aside_claim
):
    card = page_for(reviewer, "aside-r1", "A-1").card("c1")
    assert card.hints == ASIDE_HINTS


def test_a_claim_citing_a_passage_its_response_never_retrieved_gets_its_hints_in_the_figures(
    aside_claim,
):
    (figures,) = run_metrics(run=Run.objects.get(run_id="aside-r1")).per_response
    assert figures["prechecks"]["claims"] == {"c1": ASIDE_HINTS}
    assert figures["prechecks"]["response"]["number_not_in_evidence"] == ["30"]


# --- the rules, one by one -------------------------------------------------------------------


def passage(ref: str, text: str, status: str = "current") -> PassageFacts:
    return PassageFacts(ref, frozenset(numbers_in(text)), status)


def facts(answer: str, *passages: PassageFacts, **kwargs) -> ResponseFacts:
    return ResponseFacts(
        **{
            "answer": answer,
            "marker_spans": [],
            "cited_refs": [],
            "retrieved": list(passages),
            "passages": {p.ref: p for p in passages},
            "relevant_refs": [],
        }
        | kwargs
    )


def test_numbers_are_whole_tokens_in_order_of_first_appearance():
    assert numbers_in("5 of 15 users, 5 again, 2.5 hours, 1,5 litres, 80 °C") == [
        "5",
        "15",
        "2.5",
        "1,5",
        "80",
    ]


def test_5_does_not_match_15():
    result = prechecks(facts("Returns take 5 days.", passage("a", "Returns take 15 days.")))
    assert result.response == {"number_not_in_evidence": ["5"]}


def test_15_does_not_match_5_or_150():
    evidence = passage("a", "Returns take 5 days, or 150 for business customers.")
    assert prechecks(facts("Returns take 15 days.", evidence)).response == {
        "number_not_in_evidence": ["15"]
    }


def test_a_decimal_is_one_number():
    result = prechecks(facts("It weighs 10.5 kg.", passage("a", "It weighs 10 kg, or 5 kg.")))
    assert result.response == {"number_not_in_evidence": ["10.5"]}


def test_a_number_found_in_any_retrieved_passage_is_fine():
    result = prechecks(
        facts("It takes 5 days and costs 49 euros.", passage("a", "5 days"), passage("b", "49"))
    )
    assert result.response == {}


def test_citation_markers_are_removed_before_looking_for_numbers():
    answer = "Returns take 30 days [3]. See also [D1]."
    markers = [(answer.index(m), answer.index(m) + len(m)) for m in ("[3]", "[D1]")]
    evidence = passage("a", "within 30 days")
    assert prechecks(facts(answer, evidence, marker_spans=markers)).response == {}
    # The same answer, markers left in: their digits would count as numbers.
    assert prechecks(facts(answer, evidence)).response == {"number_not_in_evidence": ["3", "1"]}
    assert without_spans("a [1] b", [(2, 5)]) == "a     b"


def test_a_claims_numbers_are_checked_against_its_own_citations_only():
    cited, other = passage("cited", "no numbers here"), passage("other", "within 30 days")
    claim = ClaimFacts("c1", "factual", "Returns take 30 days.", ["cited"])
    result = prechecks(facts("Returns take 30 days.", cited, other, claims=[claim]))
    assert result.response == {}  # 30 is in a retrieved passage
    assert result.claims == {"c1": ["number_not_in_evidence"]}


def test_a_factual_claim_without_citation_is_flagged_and_an_abstention_is_not():
    claims = [
        ClaimFacts("c1", "factual", "It is so.", []),
        ClaimFacts("c2", "abstention", "The sources do not say.", []),
    ]
    assert prechecks(facts("It is so.", claims=claims)).claims == {
        "c1": ["claim_without_citation"]
    }


def test_a_claim_citing_a_superseded_passage_that_was_not_retrieved_gets_both_codes():
    old = passage("old", "approved automatically", status="superseded")
    claim = ClaimFacts("c1", "factual", "Approved automatically.", ["old"])
    result = prechecks(
        facts(
            "Approved automatically.",
            passage("new", "verification first"),
            passages={"old": old},
            cited_refs=["old"],
            claims=[claim],
        )
    )
    assert result.claims == {"c1": ["cites_superseded_version", "citation_not_retrieved"]}
    assert result.response == {
        "cites_superseded_version": ["old"],
        "citation_not_retrieved": ["old"],
    }


@pytest.mark.parametrize(("rank", "fires"), [(1, False), (3, False), (4, True)])
def test_relevant_not_retrieved_looks_at_the_top_3(rank, fires):
    ranked = [passage(f"p{i}", "") for i in range(1, 6)]
    result = prechecks(facts("Answer.", *ranked, relevant_refs=[f"p{rank}"]))
    assert ("relevant_not_retrieved" in result.response) is fires
    if fires:
        assert result.response["relevant_not_retrieved"] == [f"p{rank}"]


def test_passage_drift_names_the_cited_refs_that_drifted():
    result = prechecks(
        facts(
            "A [1]. B [2].", passage("a", ""), cited_refs=["a", "b"], drifted_refs=frozenset({"b"})
        )
    )
    assert result.response["passage_drift"] == ["b"]
