"""A comparison's codes shown in the reader's language (compare.labels); the data keeps them."""

from __future__ import annotations

from typing import NamedTuple

from django import template

from cards.dashboard import FIGURE_TITLES
from compare.labels import FACT_STATUS_TITLES, METADATA_TITLES, REASON_TITLES

register = template.Library()


class Reason(NamedTuple):
    code: str  # passage_drift
    title: str  # "Passage drift" (or "Deriva del passaggio")
    detail: str  # what follows the code: the ref and both hashes, else ""


@register.filter
def figure_title(name: str) -> str:
    """`support_or_partial` → "Supported or partial"; an unknown name is shown as it is."""
    return FIGURE_TITLES.get(name, name)


@register.filter
def fact_status(code: str) -> str:
    """`absent` → "Absent" (or "Assente"); an unknown code is shown as it is."""
    return FACT_STATUS_TITLES.get(code, code)


@register.filter
def metadata_title(key: str) -> str:
    """`generated` → "Generated"; a key of the run's `system` gives "" (shown as a code)."""
    return METADATA_TITLES.get(key, "")


@register.filter
def reason_title(code: str) -> str:
    """`passage_drift` → "Passage drift"; an unknown code is shown as it is."""
    return REASON_TITLES.get(code, code)


@register.filter
def reason_parts(text: str) -> Reason:
    """A pair's reason split into its code, that code's title, and its detail."""
    code, _, detail = text.partition(":")
    return Reason(code, reason_title(code), detail.strip())
