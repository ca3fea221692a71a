from __future__ import annotations

import json

from django.db import models


class VerbatimJSONField(models.TextField):
    """JSON kept as text on every database.

    PostgreSQL's jsonb rewrites numbers (`1e23` comes back as an integer, `-0.0`
    as `0`); a run's trace, filters and system metadata are evidence and must
    come back as they were imported.
    """

    def from_db_value(self, value, expression, connection):
        return None if value is None else json.loads(value)

    def to_python(self, value):
        if value is None or not isinstance(value, str):
            return value
        return json.loads(value)

    def get_prep_value(self, value):
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def value_to_string(self, obj):
        return self.get_prep_value(self.value_from_object(obj))
