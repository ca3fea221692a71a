"""The titles a comparison page shows for its codes (metrics.md, "Comparing two runs").

The codes stay codes in the comparison's JSON, the command's output and the audit
package; only the page shows these, in the reader's language.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

# A required fact's status in one run: the best verdict of the claims reporting it. The
# context keeps them apart from the labels of a claim (Italian: "fatto" is masculine).
FACT_STATUS_TITLES = {
    "supported": pgettext_lazy("a fact's status", "Supported"),
    "partial": pgettext_lazy("a fact's status", "Partial"),
    "unsupported": pgettext_lazy("a fact's status", "Unsupported"),
    "absent": pgettext_lazy("a fact's status", "Absent"),
    "unreviewed": pgettext_lazy("a fact's status", "Unreviewed"),
}

# The rows of the replay metadata the application adds after the run's own `system` keys
# (those are the bundle's field names, shown as codes).
METADATA_TITLES = {
    "snapshot": _("Snapshot"),
    "locale": _("Locale of the data"),
    "generated": _("Generated"),
}

# Why a pair is not comparable: the part of a reason before its colon
# (`passage_drift: REF old→new`).
REASON_TITLES = {
    "query_changed": _("Query changed"),
    "expectation_changed": _("Case expectation changed"),
    "passage_drift": _("Passage drift"),
    "case_missing": _("Case missing from one run"),
}
