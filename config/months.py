"""The month names of Django's dates, marked again so that our catalog can translate them.

Django's own Italian catalog capitalises them ("28 Settembre 2026"); Italian writes them
lowercase ("28 settembre 2026", docs/i18n.md). A translation in LOCALE_PATHS wins over
Django's, but `makemessages --no-obsolete` keeps only what the project marks: this module
marks the same strings, with the same contexts, as `django.utils.dates`. Never imported:
the marks are for `make messages`; at run time Django's dates module asks for these
strings, and the catalog answers.
"""

from __future__ import annotations

from django.utils.translation import gettext_noop, pgettext_lazy

# `F` of a date format (DATETIME_FORMAT "j F Y H:i e"): django.utils.dates.MONTHS.
MONTHS = [
    gettext_noop("January"), gettext_noop("February"), gettext_noop("March"),
    gettext_noop("April"), gettext_noop("May"), gettext_noop("June"),
    gettext_noop("July"), gettext_noop("August"), gettext_noop("September"),
    gettext_noop("October"), gettext_noop("November"), gettext_noop("December"),
]  # fmt: skip

# `E` (the form some languages use after a day): django.utils.dates.MONTHS_ALT.
MONTHS_ALT = [
    pgettext_lazy("alt. month", "January"), pgettext_lazy("alt. month", "February"),
    pgettext_lazy("alt. month", "March"), pgettext_lazy("alt. month", "April"),
    pgettext_lazy("alt. month", "May"), pgettext_lazy("alt. month", "June"),
    pgettext_lazy("alt. month", "July"), pgettext_lazy("alt. month", "August"),
    pgettext_lazy("alt. month", "September"), pgettext_lazy("alt. month", "October"),
    pgettext_lazy("alt. month", "November"), pgettext_lazy("alt. month", "December"),
]  # fmt: skip

# `N` (abbreviated, Associated Press style): django.utils.dates.MONTHS_AP.
MONTHS_AP = [
    pgettext_lazy("abbrev. month", "Jan."), pgettext_lazy("abbrev. month", "Feb."),
    pgettext_lazy("abbrev. month", "March"), pgettext_lazy("abbrev. month", "April"),
    pgettext_lazy("abbrev. month", "May"), pgettext_lazy("abbrev. month", "June"),
    pgettext_lazy("abbrev. month", "July"), pgettext_lazy("abbrev. month", "Aug."),
    pgettext_lazy("abbrev. month", "Sept."), pgettext_lazy("abbrev. month", "Oct."),
    pgettext_lazy("abbrev. month", "Nov."), pgettext_lazy("abbrev. month", "Dec."),
]  # fmt: skip
