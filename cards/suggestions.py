"""The suggested split of an answer into claims: its sentences, and their parts at
conjunctions, each marked with the current claim that covers it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.utils.translation import gettext

from cards.rules import masked, sentences
from cards.selectors import ReviewPage

CONJUNCTION = re.compile(r",?\s+(?:and|but|while|whereas)\s+|;\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Suggestion:
    spans: list[tuple[int, int]]
    text: str
    parts: list[Suggestion] = field(default_factory=list)


def suggest_claims(text: str, marker_spans: list[tuple[int, int]]) -> list[Suggestion]:
    """Sentences of the answer (markers left out), each with its split at conjunctions."""
    plain = masked(text, marker_spans)
    suggestions = []
    for start, end in sentences(text, marker_spans):
        suggestions.extend(_sentence(plain, start, end))
    return suggestions


def _trimmed(plain: str, start: int, end: int) -> tuple[int, int]:
    while start < end and (plain[start].isspace() or plain[start] == "\0"):
        start += 1
    while end > start and (plain[end - 1].isspace() or plain[end - 1] == "\0"):
        end -= 1
    return start, end


def _clean(plain: str, start: int, end: int) -> str:
    text = re.sub(r"\s+", " ", plain[start:end].replace("\0", "")).strip()
    return re.sub(r"\s+([.,;:!?])", r"\1", text)  # "80 °C [D1]." → "80 °C."


def _sentence(plain: str, start: int, end: int) -> list[Suggestion]:
    start, end = _trimmed(plain, start, end)
    if start >= end or not _clean(plain, start, end):
        return []
    parts = []
    cursor = start
    for match in CONJUNCTION.finditer(plain, start, end):
        a, b = _trimmed(plain, cursor, match.start())
        if len(plain[a:b].split()) >= 3:
            parts.append(Suggestion([(a, b)], _clean(plain, a, b)))
            cursor = match.end()
    if parts:
        a, b = _trimmed(plain, cursor, end)
        if len(plain[a:b].split()) >= 2:
            parts.append(Suggestion([(a, b)], _clean(plain, a, b)))
        else:
            parts = []
    return [Suggestion([(start, end)], _clean(plain, start, end), parts if len(parts) > 1 else [])]


@dataclass
class SuggestedClaim:
    """A suggestion as the review page offers it: a sentence, or a part of one."""

    number: str  # "2", or "1.2" for the second part of the first sentence
    text: str
    spans: str  # as the form sends it, "0-131"
    taken: str = ""  # the key of a current claim that covers it already
    error: str = ""  # why accepting it was refused
    parts: list[SuggestedClaim] = field(default_factory=list)

    @property
    def is_part(self) -> bool:
        return "." in self.number

    @property
    def label(self) -> str:
        if self.is_part:
            sentence, part = self.number.split(".", 1)
            return gettext("Part %(part)s of suggestion %(sentence)s") % {
                "part": part,
                "sentence": sentence,
            }
        return gettext("Suggested claim %(number)s") % {"number": self.number}

    @property
    def button(self) -> str:
        if self.is_part:
            sentence, part = self.number.split(".", 1)
            return gettext("Accept part %(part)s of suggestion %(sentence)s") % {
                "part": part,
                "sentence": sentence,
            }
        return gettext("Accept suggestion %(number)s") % {"number": self.number}


def suggestions_for(*, page: ReviewPage) -> list[SuggestedClaim]:
    """The suggested split of the page's answer, each marked with a claim that covers it.

    A suggestion is taken by a current claim whose spans contain every span of it. One
    query (the markers).
    """
    response = page.response
    markers = [(c.start, c.end) for c in response.citations.all() if c.start is not None]
    claimed = [(card.claim.key, card.revision.spans) for card in page.cards if not card.withdrawn]

    def taken(spans) -> str:
        for key, claim_spans in claimed:
            if all(any(s <= a and b <= e for s, e in claim_spans) for a, b in spans):
                return key
        return ""

    def value(spans) -> str:
        return ",".join(f"{a}-{b}" for a, b in spans)

    rows = []
    for n, suggestion in enumerate(suggest_claims(response.text, markers), start=1):
        row = SuggestedClaim(
            str(n), suggestion.text, value(suggestion.spans), taken(suggestion.spans)
        )
        row.parts = [
            SuggestedClaim(f"{n}.{m}", part.text, value(part.spans), taken(part.spans))
            for m, part in enumerate(suggestion.parts, start=1)
        ]
        rows.append(row)
    return rows
