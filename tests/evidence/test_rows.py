"""evidence.rows: model instances from hand-written SQL equal the ORM's, on either database."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evidence.models import Case, Expectation, Passage, Project
from evidence.rows import Columns, insert, insert_then, instances, prepared_cursor
from replay.models import Retrieval, Run
from tests.conftest import import_fixture

PASSAGE, RETRIEVAL, RUN, PROJECT = (
    Columns(Passage, "p"), Columns(Retrieval, "t"), Columns(Run, "r"), Columns(Project, "j"),
)  # fmt: skip


def fields_of(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def rows(sql: str, *params) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def test_a_row_builds_the_instance_the_orm_reads(project):
    import_fixture("q017-r1.jsonl")
    # Dates, booleans and JSON (jsonb on PostgreSQL, text on SQLite, and verbatim JSON text).
    expectation = Expectation.objects.get()
    (row,) = rows(f"SELECT {Columns(Expectation, 'e').sql} FROM evidence_expectation e")
    built = Columns(Expectation, "e").build(row)
    assert fields_of(built) == fields_of(expectation)
    assert built.required_facts and isinstance(built.required_facts, list)
    assert not built._state.adding and built._state.db == "default"
    for row in rows(
        f"SELECT {RETRIEVAL.sql}, {PASSAGE.sql} FROM replay_retrieval t "
        "JOIN evidence_passage p ON p.id = t.passage_id ORDER BY t.id"
    ):
        retrieval, passage = instances(row, RETRIEVAL, PASSAGE)
        assert fields_of(retrieval) == fields_of(Retrieval.objects.get(pk=retrieval.pk))
        assert fields_of(passage) == fields_of(Passage.objects.get(pk=passage.pk))


def test_nothing_of_a_built_instance_is_deferred(project, django_assert_num_queries):
    import_fixture("q017-r1.jsonl")
    (row,) = rows(f"SELECT {RUN.sql}, {PROJECT.sql} FROM replay_run r JOIN evidence_project j "
                  "ON j.id = r.project_id")  # fmt: skip
    with django_assert_num_queries(0):
        run, built = instances(row, RUN, PROJECT)
        assert run.get_deferred_fields() == set() and built.get_deferred_fields() == set()
        assert built.slug == "demo" and run.run_id == "q017-r1"


def test_an_insert_stores_what_the_orm_would_and_gives_the_row_its_key(project):
    import_fixture("q017-r1.jsonl")
    first = Retrieval.objects.order_by("rank").first()
    row = Retrieval(
        response_id=first.response_id, rank=99, passage_id=first.passage_id, score=0.25,
        score_as_imported=0.25, filters={"lang": ["en"], "big": 10**30},
    )  # fmt: skip
    assert insert(row) is row and row.pk is not None and not row._state.adding
    assert fields_of(Retrieval.objects.get(pk=row.pk)) == fields_of(row)


@pytest.mark.parametrize("matched", [1, 0])
def test_an_insert_then_an_update_stores_both_and_counts_what_the_update_changed(project, matched):
    import_fixture("q017-r1.jsonl")
    first = Retrieval.objects.order_by("rank").first()
    row = Retrieval(
        response_id=first.response_id, rank=98, passage_id=first.passage_id, score=0.5,
        score_as_imported=0.5, filters={},
    )  # fmt: skip
    rename = "UPDATE evidence_project SET name = %s WHERE id = %s"
    with CaptureQueriesContext(connection) as queries:
        stored, changed = insert_then(row, rename, ["Renamed", project.pk if matched else -1])
    assert stored is row and row.pk is not None and not row._state.adding
    assert changed == matched
    assert fields_of(Retrieval.objects.get(pk=row.pk)) == fields_of(row)
    project.refresh_from_db()
    assert (project.name == "Renamed") == bool(matched)
    # One round trip on PostgreSQL (a data-modifying WITH), two elsewhere.
    assert len(queries) == (1 if connection.vendor == "postgresql" else 2)


def test_an_insert_refuses_a_field_left_to_its_database_default(project):
    with pytest.raises(ValueError, match="Case.created_at is left to its db_default"):
        insert(Case(project=project, case_id="new"))
    assert not Case.objects.filter(case_id="new").exists()


def test_a_raw_field_is_left_as_the_database_sent_it(project):
    import_fixture("q017-r1.jsonl")
    columns = Columns(Expectation, "e", raw=("required_facts",))
    (row,) = rows(f"SELECT {columns.sql} FROM evidence_expectation e")
    values = dict(zip(columns.attnames, columns.values(row), strict=True))
    assert json.loads(values["required_facts"]) == Expectation.objects.get().required_facts
    assert isinstance(values["relevant_refs"], list)  # the others converted
    with pytest.raises(ValueError, match="required_facts would be left unconverted"):
        columns.build(row)


def test_a_prepared_cursors_statements_are_counted_as_any_other(project):
    with CaptureQueriesContext(connection) as queries, prepared_cursor() as cursor:
        cursor.execute("SELECT slug FROM evidence_project WHERE id = %s", [project.pk])
        assert cursor.fetchone() == ("demo",)
    assert len(queries.captured_queries) == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_on_postgresql_its_statements_are_prepared_once_per_connection(project):
    sql = "SELECT slug FROM evidence_project WHERE id = %s AND slug <> 'prepared-test'"
    for _ in range(3):
        with prepared_cursor() as cursor:
            cursor.execute(sql, [project.pk])
            assert cursor.fetchone() == ("demo",)
    assert prepared("prepared-test") == 1
    with connection.cursor() as cursor:  # Django's own cursor prepares nothing
        cursor.execute("SELECT slug FROM evidence_project WHERE slug <> 'not-prepared'")
        cursor.execute("SELECT slug FROM evidence_project WHERE slug <> 'not-prepared'")
    assert prepared("not-prepared") == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_prepared_statements_can_be_switched_off(project, settings):
    settings.DB_PREPARED_STATEMENTS = False
    with prepared_cursor() as cursor:
        cursor.execute("SELECT slug FROM evidence_project WHERE slug <> 'switched-off'")
    assert prepared("switched-off") == 0


def prepared(marker: str) -> int:
    (count,) = rows(
        "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", f"%{marker}%"
    )[0]
    return count


def test_a_prepared_cursors_statements_are_logged_with_their_values(project):
    with CaptureQueriesContext(connection) as queries, prepared_cursor() as cursor:
        cursor.execute("SELECT slug FROM evidence_project WHERE id = %s", [project.pk])
    assert queries.captured_queries[0]["sql"] == (
        f"SELECT slug FROM evidence_project WHERE id = {project.pk}"
    )
