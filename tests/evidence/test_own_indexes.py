"""Foreign keys whose unique constraint (or index) starts with their column keep no index of
their own (evidence.dbguards.NoOwnIndex): one index fewer per row a bulk import writes, and
none that PostgreSQL's planner can take, with statistics still empty during an import, for a
passage's look-up by snapshot and ref (it then scanned the snapshot once per passage)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection

LEADING = [
    ("evidence.Passage", "snapshot"),
    ("evidence.Case", "project"),
    ("evidence.Expectation", "case"),
    ("replay.Response", "run"),
    ("replay.Retrieval", "response"),
    ("replay.Citation", "response"),
    ("cards.Claim", "response"),
    ("cards.ClaimRevision", "claim"),
    ("cards.VerdictRevision", "claim"),
    ("cards.ClaimTally", "run"),
    ("cards.ResponseTally", "run"),
]


def indexes_of(table: str) -> dict[str, dict]:
    with connection.cursor() as cursor:
        return connection.introspection.get_constraints(cursor, table)


@pytest.mark.django_db
@pytest.mark.parametrize(("label", "name"), LEADING, ids=[f"{m}.{f}" for m, f in LEADING])
def test_a_key_led_by_a_unique_constraint_has_no_index_of_its_own(label, name):
    model = apps.get_model(label)
    column = model._meta.get_field(name).column
    found = indexes_of(model._meta.db_table)
    own = [n for n, c in found.items() if c["columns"] == [column] and c["index"]]
    assert own == []
    # Look-ups by the column alone still have an index: one that starts with it.
    assert any(
        c["columns"][:1] == [column] and (c["index"] or c["unique"]) for c in found.values()
    )
