from __future__ import annotations

import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from cards.models import Claim, ClaimKind, ClaimRevision, Origin
from cards.services.claims import citations_within, claim_create
from replay.models import Response
from tests.cards.conftest import (
    ANSWER,
    D01,
    D02,
    FINAL_SALE,
    NO_DURATION,
    REFUND_START,
    WINDOW,
    response_for,
)
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def test_the_spans_used_here_cover_the_words_they_name(replay_response):
    text = replay_response.text
    assert text[slice(*WINDOW)].endswith("14 calendar days of delivery")
    assert text[slice(*FINAL_SALE)] == "final-sale items are excluded"
    assert text[slice(*REFUND_START)].startswith("Refund processing starts")
    assert text[slice(*NO_DURATION)] == "The sources do not say how long processing takes"


def test_it_stores_the_claim_and_its_first_revision(replay_response, reviewer):
    claim = claim_create(
        response=replay_response,
        author=reviewer,
        text="  Final-sale items are excluded from returns.  ",
        spans=[FINAL_SALE],
        facts=["G2"],
    )
    assert (claim.key, claim.position) == ("c1", 1)
    revision = claim.revisions.get()
    assert revision.seq == 1
    assert revision.prev_sha256 is None
    assert revision.text == "Final-sale items are excluded from returns."
    assert revision.kind == ClaimKind.FACTUAL
    assert revision.spans == [FINAL_SALE]
    assert revision.facts == ["G2"]
    assert (revision.author, revision.annotator, revision.origin) == (
        reviewer,
        "alice",
        Origin.REVIEW,
    )
    assert (revision.withdrawn, revision.reason) == (False, "")


def test_it_numbers_keys_c1_c2_in_order(replay_response, reviewer, second_reviewer):
    first = claim_create(response=replay_response, author=reviewer, text="A.", spans=[WINDOW])
    second = claim_create(
        response=replay_response, author=second_reviewer, text="B.", spans=[REFUND_START]
    )
    third = claim_create(response=replay_response, author=reviewer, text="C.", spans=[])
    assert [(c.key, c.position) for c in (first, second, third)] == [
        ("c1", 1),
        ("c2", 2),
        ("c3", 3),
    ]


def test_a_new_key_never_collides_with_an_imported_one(reviewer, demo_runs):
    # p7-answer-a arrives with claims c1, c4 and c5.
    response = response_for("p7-answer-a")
    claim = claim_create(response=response, author=reviewer, text="New.", spans=[[0, 10]])
    assert claim.key == "c6"
    assert claim.position == 4
    assert sorted(response.claims.values_list("key", flat=True)) == ["c1", "c4", "c5", "c6"]


def test_it_sorts_the_spans_of_a_claim_split_in_several_pieces(replay_response, reviewer):
    claim = claim_create(
        response=replay_response,
        author=reviewer,
        text="Direct purchases, but not final-sale items, can be returned.",
        spans=[FINAL_SALE, WINDOW],
    )
    assert claim.revisions.get().spans == [WINDOW, FINAL_SALE]


# --- citations attached automatically --------------------------------------------------------


def test_a_marker_right_after_the_span_is_attached(replay_response, reviewer):
    # "… final-sale items are excluded [D-01]." — one blank between span and marker.
    claim = claim_create(
        response=replay_response, author=reviewer, text="Final-sale excluded.", spans=[FINAL_SALE]
    )
    assert claim.revisions.get().citations == [D01]


def test_a_marker_after_punctuation_is_attached(reviewer, demo_runs):
    # q017-r1 writes the marker after the full stop: "… final-sale items.[D-01]".
    response = response_for("q017-r1")
    claim = claim_create(
        response=response, author=reviewer, text="Any item can be returned.", spans=[[0, 66]]
    )
    assert claim.revisions.get().citations == [D01]


def test_a_marker_inside_the_span_is_attached(replay_response, reviewer):
    claim = claim_create(
        response=replay_response,
        author=reviewer,
        text="Final-sale items are excluded and refund processing starts.",
        spans=[[94, 156]],
    )
    assert claim.revisions.get().citations == [D01]


def test_each_span_of_a_claim_attaches_its_own_marker(replay_response, reviewer):
    claim = claim_create(
        response=replay_response,
        author=reviewer,
        text="Final-sale items are excluded; refunds start at the warehouse.",
        spans=[REFUND_START, FINAL_SALE],
    )
    assert claim.revisions.get().citations == [D01, D02]


def test_part_of_a_sentence_takes_the_marker_that_ends_the_sentence(replay_response, reviewer):
    # The span stops at "delivery"; ", but final-sale items are excluded [D-01]." follows:
    # the marker is not right after the span, but it closes the span's sentence.
    claim = claim_create(
        response=replay_response, author=reviewer, text="A 14-day window.", spans=[WINDOW]
    )
    assert claim.revisions.get().citations == [D01]
    within = ANSWER.index("within 14 calendar days of delivery")
    assert citations_within(replay_response, [[within, within + 35]]) == [D01]


def test_a_span_with_its_own_marker_does_not_take_the_sentences_last_one(project):
    response = one_answer("The limit is 10 units [1], and the fee is 5 euros [2]. Next.", "[1]")
    assert citations_within(response, [[0, 21]]) == ["doc0@v1#c0"]
    assert citations_within(response, [[31, 49]]) == []  # "[2]" is no marker here


def test_a_marker_inside_the_sentence_does_not_end_it(project):
    # "[1]" sits after "10 units", not at the end: the fee has no marker of its own.
    response = one_answer("The limit is 10 units [1] and the fee is 5 euros. Next [2].", "[1]")
    assert citations_within(response, [[30, 48]]) == []


def test_a_span_takes_the_marker_of_its_own_sentence_never_the_next_one(project):
    response = one_answer("The fee is 5 euros. The limit is 10 units [1].")
    assert citations_within(response, [[0, 10]]) == []
    assert citations_within(response, [[33, 41]]) == ["doc0@v1#c0"]  # "10 units"


def test_a_sentence_without_marker_gets_no_citation(replay_response, reviewer):
    claim = claim_create(
        response=replay_response,
        author=reviewer,
        text="The sources do not give a processing time.",
        spans=[NO_DURATION],
        kind=ClaimKind.ABSTENTION,
        gaps=["X1"],
    )
    assert claim.revisions.get().citations == []


def test_a_marker_that_cites_the_same_passage_twice_is_attached_once(reviewer, demo_runs):
    # p7-answer-c: "… 30 days [D3] and reported a 15% reduction in downtime [D3]."
    response = response_for("p7-answer-c")
    assert citations_within(response, [[36, 125]]) == ["D3@v1#p1"]


def test_explicit_citations_replace_the_automatic_ones(replay_response, reviewer):
    claim = claim_create(
        response=replay_response,
        author=reviewer,
        text="Final-sale items are excluded.",
        spans=[FINAL_SALE],
        citations=[D02, D02],
    )
    assert claim.revisions.get().citations == [D02]


# --- links to the expectation ----------------------------------------------------------------


def test_an_abstention_claim_links_a_known_gap(replay_response, reviewer):
    claim = claim_create(
        response=replay_response,
        author=reviewer,
        text="The sources do not say how long processing takes.",
        spans=[NO_DURATION],
        kind=ClaimKind.ABSTENTION,
        gaps=["X1"],
    )
    revision = claim.revisions.get()
    assert (revision.kind, revision.gaps, revision.facts) == ("abstention", ["X1"], [])


def test_a_factual_claim_links_required_facts(replay_response, reviewer):
    claim = claim_create(
        response=replay_response,
        author=reviewer,
        text="Direct purchases can be returned within 14 days, final-sale items excluded.",
        spans=[WINDOW, FINAL_SALE],
        facts=["G1", "G2", "G1"],
    )
    assert claim.revisions.get().facts == ["G1", "G2"]


@pytest.mark.parametrize(
    ("links", "field"),
    [
        ({"facts": ["G9"]}, "facts"),
        ({"gaps": ["X9"]}, "gaps"),
        ({"citations": ["nowhere@v1#p1"]}, "citations"),
        # A passage of the same project, but neither retrieved nor cited by this response.
        ({"citations": ["D1@v3#p1"]}, "citations"),
    ],
)
def test_it_refuses_an_unknown_fact_gap_or_ref(replay_response, reviewer, links, field):
    with pytest.raises(ValidationError) as refused:
        claim_create(response=replay_response, author=reviewer, text="A.", spans=[WINDOW], **links)
    assert field in refused.value.message_dict
    assert not Claim.objects.filter(response=replay_response).exists()


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_it_refuses_a_blank_claim_text(replay_response, reviewer, text):
    with pytest.raises(ValidationError) as refused:
        claim_create(response=replay_response, author=reviewer, text=text, spans=[WINDOW])
    assert "text" in refused.value.message_dict
    assert ClaimRevision.objects.filter(claim__response=replay_response).count() == 0


@pytest.mark.parametrize("spans", [[[5, 5]], [[10, 4]], [[-1, 4]], [[0, 251]], [[1, 2, 3]]])
def test_it_refuses_a_span_outside_the_answer(replay_response, reviewer, spans):
    with pytest.raises(ValidationError) as refused:
        claim_create(response=replay_response, author=reviewer, text="A.", spans=spans)
    assert "spans" in refused.value.message_dict


def test_it_refuses_an_unknown_kind(replay_response, reviewer):
    with pytest.raises(ValidationError) as refused:
        claim_create(
            response=replay_response, author=reviewer, text="A.", spans=[WINDOW], kind="opinion"
        )
    assert "kind" in refused.value.message_dict


def test_it_refuses_someone_from_another_project(replay_response, outsider):
    with pytest.raises(PermissionDenied):
        claim_create(response=replay_response, author=outsider, text="A.", spans=[WINDOW])
    assert not Claim.objects.filter(response=replay_response).exists()


def test_a_claim_added_beside_imported_ones_gets_a_fresh_key(reviewer):
    import_bytes(bundle_bytes(*synthetic_bundle(cases=1, claims=2)))
    response = response_for("synthetic-r1")
    claim = claim_create(response=response, author=reviewer, text="A.", spans=[[0, 21]])
    # c0 and c1 are imported: the new key is another c<number>, not one of theirs.
    assert re.fullmatch(r"c\d+", claim.key)
    assert claim.key not in {"c0", "c1"}
    assert claim.revisions.get().citations == ["doc0@v1#c0"]


def one_answer(text: str, marker: str = "[1]") -> Response:
    """A run of one case whose answer is `text`, with `marker` citing the case's first passage."""
    lines = synthetic_bundle(run_id="one", cases=1, passages=2, claims=0)
    start = text.index(marker)
    lines[-1] |= {
        "text": text,
        "citations": [
            {"marker": marker, "ref": "doc0@v1#c0", "start": start, "end": start + len(marker)}
        ],
    }
    del lines[-1]["claims"]
    import_bytes(bundle_bytes(*lines))
    return response_for("one")


@pytest.mark.parametrize("between", ["", " ", "  ", ".", ". ", ",", " ;", "!?", ":"])
def test_a_marker_after_blanks_and_punctuation_is_attached(project, between):
    response = one_answer(f"The limit is 10 units{between}[1] Next.")
    assert citations_within(response, [[0, 21]]) == ["doc0@v1#c0"]


@pytest.mark.parametrize(
    "between",
    [
        pytest.param("\n", id="newline"),
        pytest.param("\u00a0", id="no-break-space"),
        pytest.param(")", id="closing-parenthesis"),
        pytest.param(".\u201d ", id="closing-quote"),
    ],
)
def test_a_marker_after_other_blanks_and_punctuation_is_attached(project, between):
    response = one_answer(f"The limit is 10 units{between}[1] Next.")
    assert citations_within(response, [[0, 21]]) == ["doc0@v1#c0"]
