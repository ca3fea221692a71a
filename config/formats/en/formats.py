"""English dates as the pages always showed them (ISO order, 24 hours); Django's for the rest."""

from __future__ import annotations

SHORT_DATETIME_FORMAT = "Y-m-d H:i"
DATETIME_FORMAT = "Y-m-d H:i e"
