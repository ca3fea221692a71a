"""Blind double review: what a reviewer may see of other reviewers' work. One rule, here."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied

from evidence.models import Membership

BLIND_FIGURES = (
    "This project reviews blind: figures built from other reviewers' verdicts are for leads "
    "until the review is over."
)


def blind_for(membership: Membership) -> bool:
    """Blind double review hides others' verdicts from reviewers, in aggregates too."""
    return membership.project.blind_review and not membership.can_lead


def require_unblinded(membership: Membership) -> None:
    """403 on pages built from everyone's verdicts (figures, comparisons) while blind."""
    if blind_for(membership):
        raise PermissionDenied(BLIND_FIGURES)
