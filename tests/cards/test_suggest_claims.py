"""Suggested splits: sentences first, then parts at conjunctions; markers never in the text."""

from __future__ import annotations

import re

import pytest

from cards.suggestions import suggest_claims
from replay.models import Response

MARKER = re.compile(r"\[[^\]]{1,20}\]")


def markers_of(text: str) -> list[tuple[int, int]]:
    return [match.span() for match in MARKER.finditer(text)]


def suggest(text: str):
    return suggest_claims(text, markers_of(text))


def texts(text: str) -> list[str]:
    return [s.text for s in suggest(text)]


def test_one_sentence_is_one_suggestion():
    (only,) = suggest("The Pro plan costs 49 euros a month.")
    assert (only.text, only.spans, only.parts) == (
        "The Pro plan costs 49 euros a month.",
        [(0, 36)],
        [],
    )


def test_each_sentence_is_a_suggestion():
    assert texts("Returns take 30 days. Refunds start at the warehouse! Is that all? Yes") == [
        "Returns take 30 days.",
        "Refunds start at the warehouse!",
        "Is that all?",
        "Yes",
    ]


def test_a_sentence_with_a_conjunction_is_offered_in_parts():
    text = "The Pro plan costs 49 euros a month and includes up to 25 users."
    (sentence,) = suggest(text)
    assert sentence.text == text
    assert [part.text for part in sentence.parts] == [
        "The Pro plan costs 49 euros a month",
        "includes up to 25 users.",
    ]
    for part in sentence.parts:
        ((start, end),) = part.spans
        assert text[start:end] == part.text


@pytest.mark.parametrize("joint", [", but", " but", " while", " whereas", ";", " and"])
def test_it_splits_at_each_conjunction(joint):
    text = f"Direct purchases can be returned{joint} final-sale items are excluded."
    (sentence,) = suggest(text)
    assert [part.text for part in sentence.parts] == [
        "Direct purchases can be returned",
        "final-sale items are excluded.",
    ]


def test_a_short_phrase_around_and_is_not_split():
    (sentence,) = suggest("Salt and pepper are sold here.")
    assert sentence.parts == []


def test_markers_are_left_out_of_the_text_but_inside_the_span():
    text = "The continuous limit is 80 °C [D1]. The archive holds no estimate."
    first, second = suggest(text)
    assert "[D1]" not in first.text
    assert first.text.startswith("The continuous limit is 80 °C")
    ((start, end),) = first.spans
    assert "[D1]" in text[start:end]  # so the marker is attached when the claim is added
    assert second.text == "The archive holds no estimate."


def test_parts_leave_the_markers_out_too(demo_runs):
    response = Response.objects.get(run__run_id="p7-answer-c")
    markers = [(c.start, c.end) for c in response.citations.all()]
    sentences = suggest_claims(response.text, markers)
    assert len(sentences) == 3
    parts = [part.text for part in sentences[1].parts]
    assert parts[0] == "The Eco pilot observed machines for 30 days"
    assert parts[1].startswith("reported a 15% reduction in downtime")
    assert not any("[D3]" in s.text for s in sentences)


def test_an_empty_answer_has_no_suggestion():
    assert suggest("") == []
    assert suggest("   ") == []
    assert suggest("[1]") == []


def test_a_marker_right_after_the_full_stop_still_ends_the_sentence(demo_runs):
    response = Response.objects.get(run__run_id="q017-r1")
    markers = [(c.start, c.end) for c in response.citations.all()]
    assert [s.text for s in suggest_claims(response.text, markers)] == [
        "You can return any item within 30 days, including final-sale items.",
        "Your refund starts when you submit the request.",
        "It normally completes within five days.",
    ]


def test_a_marker_left_out_leaves_no_blank_before_the_punctuation():
    (sentence,) = suggest("The continuous limit is 80 °C [D1].")
    assert sentence.text == "The continuous limit is 80 °C."
