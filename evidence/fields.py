from __future__ import annotations

import functools
import json
from typing import Any

from django.db import models
from django.db.models import F, TextField
from django.db.models.functions import Cast

from evidence.canonical import is_plain


def as_text(name: str) -> Cast:
    """A JSON column read as its stored text (`values()`, `values_list()`): Django's per-row
    JSON converters cost more than the decoding itself. Decode it with `decoded`."""
    return Cast(F(name), output_field=TextField())


def decoded(text: str | None) -> Any:
    """JSON text decoded, a short one once per distinct value: most `facts`, `gaps`,
    relevance maps and scores repeat. The results may be shared: never mutate them."""
    if text is None:
        return None
    if len(text) > 256:  # rarely repeated, and the cache's memory stays small
        return json.loads(text)
    return _decoded_short(text)


_decoded_short = functools.lru_cache(maxsize=4096)(json.loads)


def decoded_plain(text: str | None) -> tuple[Any, bool]:
    """`decoded`, and whether the value has only the types orjson writes as json.dumps does
    (`evidence.canonical.is_plain`): known once per distinct short text, as the value is."""
    if text is None:
        return None, True
    if len(text) > 256:
        value = json.loads(text)
        return value, is_plain(value)
    return _decoded_plain_short(text)


@functools.lru_cache(maxsize=4096)
def _decoded_plain_short(text: str) -> tuple[Any, bool]:
    value = _decoded_short(text)
    return value, is_plain(value)


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
