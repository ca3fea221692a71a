"""Invariants of the offset helpers, by property: whatever the answer, its markers and spans.

`citations_within` and `answer_pieces` read only offsets and refs from the rows they are
given, so plain stand-ins take the place of Response, Citation and Card here: no database,
hundreds of answers a second.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from cards.prechecks import numbers_in, without_spans
from cards.selectors import answer_pieces
from cards.services.claims import citations_within
from cards.suggestions import suggest_claims

# Letters, digits, blanks and punctuation (Unicode category P, as `_filler` reads it).
PROSE = st.text(alphabet="ab c1.5,;:!?()\n–", max_size=12)


@st.composite
def answers(draw) -> tuple[str, list[tuple[int, int, str]]]:
    """An answer with citation markers `[n]` between runs of prose: (text, [(start, end, ref)])."""
    text, markers = "", []
    for i in range(draw(st.integers(0, 5))):
        text += draw(PROSE)
        marker = f"[{i + 1}]"
        markers.append((len(text), len(text) + len(marker), f"R{i + 1}"))
        text += marker
    return text + draw(PROSE), markers


def spans_in(text: str):
    if not text:
        return st.just([])
    bound = st.integers(0, len(text))
    pair = st.tuples(bound, bound).filter(lambda p: p[0] < p[1])
    return st.lists(pair, max_size=3)


class Citations(list):
    """Stands in for `response.citations`: select_related() and order_by() in position order."""

    def select_related(self, *_):
        return self

    def order_by(self, *_):
        return self


def response(text: str, markers) -> SimpleNamespace:
    rows = Citations(
        SimpleNamespace(start=s, end=e, passage=SimpleNamespace(ref=ref)) for s, e, ref in markers
    )
    return SimpleNamespace(text=text, citations=rows)


def filler_only(text: str, markers, start: int, end: int) -> bool:
    """Only blanks, punctuation and other markers between start and end."""
    between = list(text[start:end])
    for s, e, _ in markers:
        for i in range(max(s, start), min(e, end)):
            between[i - start] = " "
    return re.fullmatch(r"[\s.,;:!?()–]*", "".join(between)) is not None


# --- citations_within: the markers a new claim's spans cover, or that follow them --------


@given(st.data())
def test_citations_within_are_the_markers_covered_or_right_after_a_span(data):
    # A span that takes no marker of its own takes the markers ending its sentence
    # (cards.rules.refs_for_spans): with one span that takes some, no more is added.
    text, markers = data.draw(answers())
    spans = data.draw(spans_in(text))
    refs = citations_within(response(text, markers), spans)
    own = [
        ref
        for s, e, ref in markers
        if any((s < end and e > start) or (s >= end and filler_only(text, markers, end, s))
               for start, end in spans)
    ]  # fmt: skip
    assert [ref for ref in refs if ref in own] == own
    assert set(refs) <= {ref for _, _, ref in markers}
    if len(spans) == 1 and own:
        assert refs == own


@given(answers())
def test_a_span_over_the_whole_answer_takes_every_marker_once_in_order(answer):
    text, markers = answer
    if text:
        refs = citations_within(response(text, markers), [(0, len(text))])
        assert refs == [ref for _, _, ref in markers]


@given(st.data())
def test_citations_within_never_repeat_a_ref(data):
    text, markers = data.draw(answers())
    markers = [(s, e, "R1") for s, e, _ in markers]  # every marker cites one passage
    refs = citations_within(response(text, markers), data.draw(spans_in(text)))
    assert refs in ([], ["R1"])


# --- without_spans: markers blanked in place -----------------------------------------------


@given(st.data())
def test_without_spans_blanks_exactly_the_spans_and_keeps_every_offset(data):
    text = data.draw(st.text(max_size=30))
    spans = data.draw(st.lists(st.tuples(st.integers(-3, 40), st.integers(-3, 40)), max_size=4))
    result = without_spans(text, spans)
    assert len(result) == len(text)
    inside = {i for s, e in spans for i in range(max(s, 0), min(e, len(text)))}
    for i, char in enumerate(result):
        assert char == (" " if i in inside else text[i])


@given(answers())
def test_no_digit_of_a_marker_is_read_as_a_number(answer):
    text, markers = answer
    blanked = without_spans(text, [(s, e) for s, e, _ in markers])
    assert numbers_in(blanked) == numbers_in(re.sub(r"\[\d+\]", " ", text))


# --- suggest_claims: sentences of the answer, markers left out -----------------------------


def visible(text: str, markers) -> list[bool]:
    """Which characters a suggestion must cover: not blank and not inside a marker."""
    shown = [not char.isspace() for char in text]
    for s, e, _ in markers:
        shown[s:e] = [False] * (e - s)
    return shown


@given(answers())
def test_suggestions_cover_the_answer_in_order_without_markers(answer):
    text, markers = answer
    suggestions = suggest_claims(text, [(s, e) for s, e, _ in markers])
    spans = [span for s in suggestions for span in s.spans]
    shown = visible(text, markers)
    covered = [False] * len(text)
    previous_end = 0
    for start, end in spans:
        assert previous_end <= start < end <= len(text)
        assert shown[start] and shown[end - 1]  # trimmed of blanks and markers
        covered[start:end] = [True] * (end - start)
        previous_end = end
    assert all(covered[i] for i, show in enumerate(shown) if show)


@given(answers())
def test_a_suggestions_text_is_its_span_without_markers_up_to_blanks(answer):
    text, markers = answer
    for suggestion in suggest_claims(text, [(s, e) for s, e, _ in markers]):
        [(start, end)] = suggestion.spans
        kept = "".join(c for i, c in enumerate(text[start:end], start) if not _in(markers, i))
        assert "[" not in suggestion.text
        assert re.sub(r"\s", "", suggestion.text) == re.sub(r"\s", "", kept)
        assert suggestion.text == suggestion.text.strip()


@given(answers())
def test_parts_lie_inside_their_sentence_in_order_and_come_two_or_more(answer):
    text, markers = answer
    for suggestion in suggest_claims(text, [(s, e) for s, e, _ in markers]):
        [(start, end)] = suggestion.spans
        assert len(suggestion.parts) != 1
        previous_end = start
        for part in suggestion.parts:
            [(a, b)] = part.spans
            assert previous_end <= a < b <= end
            previous_end = b


def _in(markers, i: int) -> bool:
    return any(s <= i < e for s, e, _ in markers)


# --- answer_pieces: the answer cut at every marker and claim-span edge ----------------------


SUPPORT = st.none() | st.sampled_from(["supported", "partial"]).map(
    lambda label: SimpleNamespace(support=label)
)


@st.composite
def pages(draw):
    """An answer, markers (some without offsets, some overlapping) and cards (some withdrawn)."""
    text = draw(st.text(alphabet="ab .[]1", max_size=25))
    if not text:
        return text, [], []
    bound = st.integers(0, len(text))
    offsets = st.tuples(bound, bound).map(sorted).filter(lambda p: p[0] < p[1])
    citations = [
        SimpleNamespace(start=o[0] if o else None, end=o[1] if o else None, key=i)
        for i, o in enumerate(draw(st.lists(st.none() | offsets, max_size=4)))
    ]
    cards = [
        SimpleNamespace(
            withdrawn=draw(st.booleans()),
            revision=SimpleNamespace(spans=draw(st.lists(offsets, max_size=2))),
            claim=SimpleNamespace(key=f"c{i}"),
            current=draw(SUPPORT),
        )
        for i in range(draw(st.integers(0, 3)))
    ]
    return text, citations, cards


@given(pages())
def test_pieces_concatenate_back_to_the_answer(page):
    text, citations, cards = page
    pieces, _ = answer_pieces(text, citations, cards)
    assert "".join(p.text for p in pieces) == text
    assert all(p.text for p in pieces)
    assert [p.start for p in pieces] == [
        sum(len(q.text) for q in pieces[:i]) for i in range(len(pieces))
    ]


@given(pages())
def test_each_marker_is_placed_once_or_listed_apart(page):
    text, citations, cards = page
    pieces, unplaced = answer_pieces(text, citations, cards)
    placed = {id(p.citation): p.citation for p in pieces if p.citation is not None}
    assert sorted(c.key for c in [*placed.values(), *unplaced]) == [c.key for c in citations]
    for citation in placed.values():
        # A placed marker is exactly the pieces that point to it.
        assert (
            "".join(p.text for p in pieces if p.citation is citation)
            == text[citation.start : citation.end]
        )
    assert all(c.start is not None for c in placed.values())
    ordered = sorted(placed.values(), key=lambda c: c.start)
    assert all(a.end <= b.start for a, b in zip(ordered, ordered[1:], strict=False))


@given(pages())
def test_each_piece_names_the_current_claims_whose_spans_cover_it(page):
    text, citations, cards = page
    pieces, _ = answer_pieces(text, citations, cards)
    for piece in pieces:
        end = piece.start + len(piece.text)
        covering = [
            card
            for card in cards
            if not card.withdrawn
            and any(s <= piece.start and end <= e for s, e in card.revision.spans)
        ]
        assert piece.claims == [card.claim.key for card in covering]
        first = covering[0].current if covering else None
        assert piece.support == (first.support if first else "")
