"""Help texts shown beside the labels; the codes themselves are in cards.models."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from cards.models import Diagnosis, Support

# metrics.md, "Diagnoses": what was seen, and the next check (not a proven cause).
DIAGNOSIS_HELP: dict[str, tuple[str, str]] = {
    Diagnosis.EXPECTED_PASSAGE_NOT_RETRIEVED: (
        _("The evidence needed was not visible to the answering step in this run."),
        _("Collection membership, index version, query, filters, depth."),
    ),
    Diagnosis.QUALIFIER_DROPPED: (
        _(
            "The passage is retrieved but the answer drops a visible qualifier, exclusion or "
            "condition."
        ),
        _("Generation instructions and the saved trace."),
    ),
    Diagnosis.CITATION_CONFLICTS: (
        _("An attached citation contradicts or does not support the claim."),
        _("Citation selection and claim-to-passage mapping."),
    ),
    Diagnosis.SUPPORTING_PASSAGE_NOT_CITED: (
        _("A supporting passage is retrieved but no citation is shown."),
        _("Citation rendering and payload."),
    ),
    Diagnosis.LOCATOR_DRIFT: (
        _("The locator resolves to different text in a replay."),
        _("Restore the recorded version or mark the replay not comparable."),
    ),
    Diagnosis.NOT_IN_COLLECTION: (
        _("The collection does not contain the requested fact."),
        _("Expect an honest miss or a clearly limited answer."),
    ),
}

# The review page's keys 1, 2, 3 … pick a support label, in the order of Support:
# (key, value, label), read by the verdict form, the keyboard help and app.js alike.
SUPPORT_KEYS: list[tuple[str, str, str]] = [
    (str(n), value, label) for n, (value, label) in enumerate(Support.choices, start=1)
]
