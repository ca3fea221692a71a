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


@pytest.mark.django_db(transaction=True)
def test_migrating_back_gives_each_key_its_index_again_and_forward_drops_it():
    from django.db.migrations.executor import MigrationExecutor

    back = [("evidence", "0003_project_settings"), ("replay", "0006_retrieval_score_as_imported"),
            ("cards", "0004_tallies")]  # fmt: skip
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    triggers_before = triggers()
    executor.migrate(back)
    try:
        for label, name in LEADING:
            model = apps.get_model(label)
            column = model._meta.get_field(name).column
            found = indexes_of(model._meta.db_table)
            assert [n for n, c in found.items() if c["columns"] == [column] and c["index"]]
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
    for label, name in LEADING:
        model = apps.get_model(label)
        column = model._meta.get_field(name).column
        found = indexes_of(model._meta.db_table)
        assert not [n for n, c in found.items() if c["columns"] == [column] and c["index"]]
    assert triggers() == triggers_before  # no table was copied: every trigger stands


def triggers() -> list[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1")
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY 1")
        return [row[0] for row in cursor.fetchall()]
