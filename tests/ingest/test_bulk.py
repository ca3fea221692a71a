"""The row writer puts values in the columns their field names say, on either database."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import FieldDoesNotExist
from django.db import IntegrityError, connection, transaction

from cards.models import Claim, ClaimTally
from evidence.models import Case, Expectation
from ingest import bulk
from ingest.bulk import RowWriter
from ingest.rows import ExpectationRow
from replay.models import Response


def test_it_writes_each_value_into_the_column_its_field_name_names(project):
    writer = RowWriter()
    with transaction.atomic():
        first, second = writer.reserve_ids(Case, 2)
        # Names in another order than the table's columns: the order of `names` decides.
        writer.write(
            Case,
            ("case_id", "project_id", "id"),
            [("q-1", project.pk, first), ("q-2", project.pk, second)],
        )
    stored = Case.objects.order_by("pk").values_list("pk", "project_id", "case_id")
    assert list(stored) == [(first, project.pk, "q-1"), (second, project.pk, "q-2")]


def test_it_refuses_a_name_that_is_no_field_of_the_model(project):
    with pytest.raises(FieldDoesNotExist), transaction.atomic():
        RowWriter().write(Case, ("id", "project_id", "name"), [(1, project.pk, "q-1")])


def test_it_writes_nothing_and_asks_nothing_for_no_rows(project, django_assert_num_queries):
    with django_assert_num_queries(0):
        RowWriter().write(Case, ("id", "project_id", "case_id"), [])


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite checks keys at COMMIT")
def test_with_immediate_checks_a_missing_key_is_refused_by_the_copy_itself(project):
    writer = RowWriter()
    with pytest.raises(IntegrityError), transaction.atomic():
        writer.check_foreign_keys_immediately(but=[(Response, "run")])
        (pk,) = writer.reserve_ids(Case, 1)
        writer.write(Case, ("id", "project_id", "case_id"), [(pk, project.pk + 1000, "q-1")])
        pytest.fail("the COPY took a case of a project that does not exist")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite checks keys at COMMIT")
@pytest.mark.django_db(transaction=True)
def test_the_key_left_deferred_and_all_keys_after_the_import_are_checked_at_commit(project):
    writer = RowWriter()
    reached_commit = False
    with pytest.raises(IntegrityError), transaction.atomic():
        writer.check_foreign_keys_immediately(but=[(Expectation, "case")])
        (pk,) = writer.reserve_ids(Expectation, 1)
        no_case = ExpectationRow(pk, 10**9, 1, "q", "", "[]", "[]", "[]", "0" * 64)
        writer.write(Expectation, ExpectationRow._fields, [no_case])  # not checked yet…
        writer.defer_foreign_keys()
        (other,) = writer.reserve_ids(Case, 1)
        no_project = (other, project.pk + 1000, "q-1")
        writer.write(Case, ("id", "project_id", "case_id"), [no_project])  # …nor this one
        reached_commit = True
    assert reached_commit  # and COMMIT refused them
    assert not Case.objects.exists()


def reltuples(table: str) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [table])
        return cursor.fetchone()[0]


def test_an_import_makes_its_stored_figures_without_reading_its_run_back(project, monkeypatch):
    # The stored figures are made from each batch's rows as they are written
    # (ingest.tallies): reading the run back once written was a third of an import.
    # What the figures would read back: the claims' revisions and verdicts, the ranked
    # retrieval and the citations.
    from tests.conftest import bundle_bytes, import_bytes
    from tests.factories import synthetic_bundle

    monkeypatch.setattr(bulk, "ANALYZE_THRESHOLD", 20)
    analyzed_after = []
    monkeypatch.setattr(transaction, "on_commit", lambda fn, **kw: analyzed_after.append(fn))
    statements = []
    with connection.execute_wrapper(
        lambda run, sql, *args: statements.append(sql) or run(sql, *args)
    ):
        import_bytes(bundle_bytes(*synthetic_bundle(run_id="stats-r1", cases=10, passages=3)))
    read = re.compile(
        r"\bFROM\W+(cards_claimrevision|cards_verdictrevision|replay_retrieval|replay_citation)\b"
    )
    reserve = "SELECT COALESCE(MAX(id), 0) FROM "  # SQLite's ids (RowWriter.reserve_ids)
    assert [sql for sql in statements if read.search(sql) and not sql.startswith(reserve)] == []
    claims = Claim.objects.filter(response__run__run_id="stats-r1").count()
    assert claims and ClaimTally.objects.filter(run__run_id="stats-r1").count() == claims
    if connection.vendor == "postgresql":
        # After the commit, every table that grew, the stored figures' own rows among them.
        statements.clear()
        with connection.execute_wrapper(
            lambda run, sql, *args: statements.append(sql) or run(sql, *args)
        ):
            for fn in analyzed_after:
                fn()
        analyze = [sql for sql in statements if sql.startswith("ANALYZE")]
        assert analyze and "replay_retrieval" in analyze[0] and "cards_claimtally" in analyze[0]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite keeps no such statistics")
def test_an_import_does_not_wait_for_another_one_analyzing_the_same_tables(project, monkeypatch):
    # An analysis holds its lock until its transaction ends: the analysis after an import
    # skips a table another transaction is analyzing instead of waiting for it.
    import psycopg

    monkeypatch.setattr(bulk, "ANALYZE_THRESHOLD", 1)
    settings = connection.settings_dict
    other = psycopg.connect(
        host=settings["HOST"] or None, port=settings["PORT"] or None, dbname=settings["NAME"],
        user=settings["USER"] or None, password=settings["PASSWORD"] or None,
    )  # fmt: skip
    try:
        other.execute("ANALYZE replay_retrieval")  # in its transaction: held until it ends
        writer = RowWriter()
        writer.rows_by_table = {"replay_retrieval": 10, "cards_claim": 10}
        after = []
        monkeypatch.setattr(transaction, "on_commit", lambda fn, **kw: after.append(fn))
        writer.analyze_after_commit()
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '1s'")  # a wait fails, not hangs
        (analyze,) = after
        analyze()
    finally:
        other.rollback()
        other.close()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite: one COPY-less writer")
def test_a_batch_is_stored_while_the_next_one_is_read(project, monkeypatch):
    # PostgreSQL stores one batch (RowWriter.send: its COPYs in a thread of their own)
    # while Python reads the next, where they took turns: half an import's time was
    # waiting on the server.
    from ingest import services
    from tests.conftest import bundle_bytes, import_bytes
    from tests.factories import synthetic_bundle

    monkeypatch.setattr(services, "FLUSH_EVERY_RESPONSES", 1)
    sending_while_read = []
    feed = services._Importer.feed

    def reading(self, number, chunk):
        sending_while_read.append(self.rows.sender is not None)
        return feed(self, number, chunk)

    monkeypatch.setattr(services._Importer, "feed", reading)
    summary = import_bytes(bundle_bytes(*synthetic_bundle(run_id="overlap-r1", cases=4)))
    assert any(sending_while_read)
    assert summary.responses == 4
    assert ClaimTally.objects.filter(run__run_id="overlap-r1").count() == summary.claims


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite: one COPY-less writer")
def test_a_refusal_of_a_batch_stored_while_the_next_was_read_refuses_the_import(
    project, monkeypatch
):
    # A COPY the database refuses in the sender's thread is the import's refusal, raised
    # where the next batch waits for it, and nothing of the run is stored.
    from ingest import responses, services
    from ingest.services import BundleInvalid
    from replay.models import Run
    from tests.conftest import bundle_bytes, import_bytes
    from tests.factories import synthetic_bundle

    monkeypatch.setattr(services, "FLUSH_EVERY_RESPONSES", 1)
    add, added = responses.ResponseRows.add, []

    def broken(self, seen):
        add(self, seen)
        added.append(seen)
        if len(added) == 2:  # the second batch's review mark names no account
            self.reviews[0] = self.reviews[0]._replace(author_id=10**9)

    monkeypatch.setattr(responses.ResponseRows, "add", broken)
    with pytest.raises(BundleInvalid) as refused:
        import_bytes(bundle_bytes(*synthetic_bundle(run_id="refused-r1", cases=4)))
    (line,) = refused.value.lines()
    assert line.startswith("the database refused the import: ") and "cards_responsereview" in line
    assert not Run.objects.filter(run_id="refused-r1").exists()
    assert not ClaimTally.objects.exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite: one COPY-less writer")
def test_a_batchs_stored_figures_are_made_while_the_batch_is_stored(project, monkeypatch):
    # They need no database but to be written: made while the batch's COPYs run, written
    # with the next batch's.
    from ingest import services, tallies
    from tests.conftest import bundle_bytes, import_bytes
    from tests.factories import synthetic_bundle

    monkeypatch.setattr(services, "FLUSH_EVERY_RESPONSES", 1)
    made_while_sending = []
    add = tallies.ImportTallies.add

    def making(self, *args):
        made_while_sending.append(self.rows.sender is not None)
        return add(self, *args)

    monkeypatch.setattr(tallies.ImportTallies, "add", making)
    summary = import_bytes(bundle_bytes(*synthetic_bundle(run_id="made-r1", cases=4)))
    # One batch a response: each but perhaps the last (made once it is stored) meanwhile.
    assert len(made_while_sending) == 4 and all(made_while_sending[:3]), made_while_sending
    assert ClaimTally.objects.filter(run__run_id="made-r1").count() == summary.claims
