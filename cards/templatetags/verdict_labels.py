"""Label codes shown in the reader's language: the data, exports and JSON keep the codes."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext_lazy as _

from cards.dashboard import LABEL_TITLES

register = template.Library()

# A case's status on the figures page (cards.figures: per-response "status").
CASE_STATUS = {
    "reviewed": _("reviewed"),
    "unreviewed": _("unreviewed"),
    "abstention": _("abstention"),
}


@register.filter
def label_title(code: str) -> str:
    """`supported` → "Supported" (or "Supportata"); an unknown code is shown as it is."""
    return LABEL_TITLES.get(code, code)


@register.filter
def case_status(code: str) -> str:
    return CASE_STATUS.get(code, code)
