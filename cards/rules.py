"""Rules of a claim's judgement that the review, the figures and the bundle import share.

Pure functions over plain values, so the import can apply them to a line before
anything is stored and the review to a form before it is saved.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from cards.models import Association

# A sentence ends at . ! ? followed by blanks, the end, or a masked marker ("items.[D-01] Your").
SENTENCE_END = re.compile(r"[.!?](?:[\s\0]+|$)")


def default_association(citations: Sequence[str]) -> str:
    """`attached` when the claim has citations, else `missing` (bundle.md)."""
    return Association.ATTACHED if citations else Association.MISSING


def association_problem(association: str | None, citations: Sequence[str]) -> str | None:
    """Why an association contradicts the claim's citations, or None when it agrees.

    The association says whether a citation is attached to the claim, so it must agree
    with the claim's `citations`: a reviewer who finds the citation wrong relinks the
    claim (a claim revision) rather than recording a verdict that contradicts it.
    """
    if association == Association.ATTACHED and not citations:
        return "is attached, but the claim has no citations"
    if association == Association.MISSING and citations:
        return "is missing, but the claim has citations"
    return None


def masked(text: str, marker_spans: Sequence[Sequence[int]]) -> str:
    """The answer with every citation marker replaced by NULs, offsets unchanged."""
    chars = list(text)
    for start, end in marker_spans:
        for i in range(start, min(end, len(chars))):
            chars[i] = "\0"
    return "".join(chars)


def sentences(text: str, marker_spans: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """[start, end) of each sentence, end past its closing markers and blanks.

    "… are excluded [D-01]. Refund …" and "… final-sale items.[D-01] Your …" both end
    the first sentence after the marker: a marker belongs to the sentence it closes.
    """
    plain = masked(text, marker_spans)
    bounds, start = [], 0
    for match in SENTENCE_END.finditer(plain):
        bounds.append((start, match.end()))
        start = match.end()
    if start < len(plain):
        bounds.append((start, len(plain)))
    return bounds


def _filler(char: str) -> bool:
    return char.isspace() or unicodedata.category(char).startswith("P")


def refs_for_spans(
    text: str, markers: Sequence[tuple[int, int, str]], spans: Sequence[Sequence[int]]
) -> list[str]:
    """The refs a claim made of `spans` takes from the answer's markers (start, end, ref).

    Each span takes the markers inside it and those right after it, with only blanks,
    punctuation and other markers between ("… items.[D-01]", "… (see [1][2])"). A span
    that takes none (part of a sentence: "within 14 calendar days of delivery") takes
    the markers that end the sentence it lies in: the sentence's citation is the
    claim's. Refs in the order of their markers, each once.
    """
    markers = sorted(markers)
    covered = [False] * len(text)
    for start, end, _ in markers:
        for i in range(start, min(end, len(text))):
            covered[i] = True

    def between_is_filler(a: int, b: int) -> bool:
        return all(covered[i] or _filler(text[i]) for i in range(a, b))

    bounds = sentences(text, [(start, end) for start, end, _ in markers])
    taken: set[int] = set()
    for span_start, span_end in spans:
        own = [
            i
            for i, (start, end, _) in enumerate(markers)
            if (start < span_end and end > span_start)
            or (start >= span_end and between_is_filler(span_end, start))
        ]
        if not own:
            # The sentence the span ends in; its closing markers: after its last word.
            last = max(span_end - 1, span_start)
            sentence = next(((a, b) for a, b in bounds if a <= last < b), None)
            if sentence is not None:
                own = [
                    i
                    for i, (start, end, _) in enumerate(markers)
                    if sentence[0] <= start and end <= sentence[1] and start >= span_end
                    and between_is_filler(end, sentence[1])
                ]  # fmt: skip
        taken.update(own)
    return list(dict.fromkeys(markers[i][2] for i in sorted(taken)))
