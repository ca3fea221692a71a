"""Italian dates as an Italian reader writes them (day first, 24 hours); Django's for the rest."""

from __future__ import annotations

SHORT_DATETIME_FORMAT = "d/m/Y H:i"
DATETIME_FORMAT = "j F Y H:i e"
