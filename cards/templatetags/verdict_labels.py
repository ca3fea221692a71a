"""Label codes shown in the reader's language: the data, exports and JSON keep the codes."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from django import template
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from cards.dashboard import FIGURE_TITLES, LABEL_TITLES
from cards.models import Diagnosis
from cards.verdicts import Source

register = template.Library()

# A case's status on the figures page (cards.figures: per-response "status").
CASE_STATUS = {
    "reviewed": _("reviewed"),
    "unreviewed": _("unreviewed"),
    "abstention": _("abstention"),
}
# The figures a run may leave undefined for a case (no denominator): the claim figures
# and the retrieval's context precision.
MEASURE_TITLES = {**FIGURE_TITLES, "context_precision": _("Context precision")}
DIAGNOSIS_TITLES = dict(Diagnosis.choices)


def _titled(titles: Mapping[str, str]) -> Callable[[str], str]:
    """A filter that shows a code by its title; an unknown code is shown as it is."""
    return lambda code: titles.get(code, code)


# `supported` → "Supported" (or "Supportata"), `reviewed` → "reviewed", `citation_precision`
# → "Citation precision", `qualifier_dropped` → "Qualifier dropped" (as the verdict form).
for name, titles in {
    "label_title": LABEL_TITLES,
    "case_status": CASE_STATUS,
    "measure_title": MEASURE_TITLES,
    "diagnosis_title": DIAGNOSIS_TITLES,
}.items():
    register.filter(name, _titled(titles))


@register.filter
def source_title(source: Source) -> str:
    """Where the figures' verdicts come from, as a reader says it; `source.label` (the
    `?source=` value: `default`, `consensus`, `annotator:NAME`) stays in URLs and files."""
    if source.mode == "annotator":
        return gettext("annotator: %(name)s") % {"name": source.name}
    if source.mode == "consensus":
        return gettext("consensus of the annotators")
    return gettext("default source")
