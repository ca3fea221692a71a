"""Rules of a claim's judgement that the review, the figures and the bundle import share.

Pure functions over plain values, so the import can apply them to a line before
anything is stored and the review to a form before it is saved.
"""

from __future__ import annotations

from collections.abc import Sequence

from cards.models import Association


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
