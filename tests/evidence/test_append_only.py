"""The database itself refuses to change stored evidence, whatever the caller.

Raw SQL goes around every model and service on purpose: the triggers and
named check constraints must hold for a shell session or a future bug too.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from audit.models import AuditExport
from cards.models import Claim, ClaimRevision, Origin, Unblinding, VerdictRevision
from evidence.dbguards import APPEND_ONLY_TABLES
from evidence.models import Project
from replay.models import Run

TABLES = [table for tables in APPEND_ONLY_TABLES.values() for table in tables]
STATEMENTS = ["UPDATE {table} SET id = id", "DELETE FROM {table}"]
SEQ_GUARDED = ["cards_claimrevision", "cards_verdictrevision"]

# pg_trigger.tgtype bits (PostgreSQL's include/catalog/pg_trigger.h).
TRIGGER_ROW, TRIGGER_BEFORE, TRIGGER_INSERT, TRIGGER_DELETE, TRIGGER_UPDATE = 1, 2, 4, 8, 16


def execute(sql: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {table}")  # noqa: S608 - our own table names
        return cursor.fetchone()[0]


def triggers(table: str) -> dict[str, str]:
    """User triggers on a table: name → what it fires on, as 'BEFORE ROW UPDATE DELETE'."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT tgname, tgtype FROM pg_trigger "
                "WHERE tgrelid = %s::regclass AND NOT tgisinternal",
                [table],
            )
            found = {}
            for name, bits in cursor.fetchall():
                words = ["BEFORE" if bits & TRIGGER_BEFORE else "AFTER"]
                words += ["ROW"] if bits & TRIGGER_ROW else ["STATEMENT"]
                words += [
                    word
                    for bit, word in (
                        (TRIGGER_INSERT, "INSERT"),
                        (TRIGGER_UPDATE, "UPDATE"),
                        (TRIGGER_DELETE, "DELETE"),
                    )
                    if bits & bit
                ]
                found[name] = " ".join(words)
            return found
        cursor.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
            [table],
        )
        # SQLite triggers are always FOR EACH ROW; the event is in the CREATE statement.
        return {
            name: " ".join(
                ["BEFORE ROW"]
                + [event for event in ("INSERT", "UPDATE", "DELETE") if f"BEFORE {event}" in sql]
            )
            for name, sql in cursor.fetchall()
        }


# --- UPDATE and DELETE ----------------------------------------------------------------------


@pytest.mark.parametrize("statement", STATEMENTS, ids=["update", "delete"])
@pytest.mark.parametrize("table", TABLES)
def test_the_database_refuses_to_change_an_append_only_table(demo_runs, table, statement):
    AuditExport.objects.create(project=Project.objects.get(slug="demo"), package_id="0" * 64)
    run = Run.objects.order_by("pk").first()
    Unblinding.objects.create(run=run, author=User.objects.create_user(username="lead"))
    rows = count(table)
    assert rows > 0, "a row-level trigger only fires when there is a row"
    # Both vendors raise IntegrityError (PostgreSQL: SQLSTATE 23000; SQLite: RAISE(ABORT)).
    with pytest.raises(IntegrityError) as info, transaction.atomic():
        execute(statement.format(table=table))
    assert "append-only" in str(info.value)
    assert count(table) == rows


def test_a_targeted_delete_by_primary_key_is_refused_too(demo_runs):
    verdict = VerdictRevision.objects.order_by("id").first()
    with pytest.raises(IntegrityError), transaction.atomic():
        execute("DELETE FROM cards_verdictrevision WHERE id = %s", [verdict.id])
    assert VerdictRevision.objects.filter(id=verdict.id).exists()


def test_an_update_of_a_verdict_reason_is_refused(demo_runs):
    verdict = VerdictRevision.objects.order_by("id").first()
    with pytest.raises(IntegrityError), transaction.atomic():
        execute("UPDATE cards_verdictrevision SET reason = %s WHERE id = %s", ["x", verdict.id])
    verdict.refresh_from_db()
    assert verdict.reason != "x"


def test_the_orm_meets_the_same_refusal(demo_runs):
    claim_revision = ClaimRevision.objects.order_by("id").first()
    with pytest.raises(IntegrityError), transaction.atomic():
        ClaimRevision.objects.filter(id=claim_revision.id).update(text="rewritten")
    with pytest.raises(IntegrityError), transaction.atomic():
        ClaimRevision.objects.filter(id=claim_revision.id).delete()


# --- the triggers are installed -------------------------------------------------------------


@pytest.mark.parametrize("table", TABLES)
def test_every_append_only_table_has_its_triggers(db, table):
    # A SQLite migration that rebuilds a table (ALTER of a column) drops its triggers
    # without a word; this is the test that notices.
    found = triggers(table)
    if connection.vendor == "postgresql":
        assert found.get(f"{table}_append_only") == "BEFORE ROW UPDATE DELETE"
    else:
        assert found.get(f"{table}_no_update") == "BEFORE ROW UPDATE"
        assert found.get(f"{table}_no_delete") == "BEFORE ROW DELETE"


@pytest.mark.parametrize("table", SEQ_GUARDED)
def test_both_revision_tables_have_the_chain_seq_guard(db, table):
    assert triggers(table).get(f"{table}_seq_free") == "BEFORE ROW INSERT"


def test_no_other_table_carries_an_append_only_trigger(db):
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT DISTINCT tgrelid::regclass::text FROM pg_trigger "
                "WHERE NOT tgisinternal AND tgname LIKE '%%append_only'"
            )
        else:
            cursor.execute(
                "SELECT DISTINCT tbl_name FROM sqlite_master WHERE type = 'trigger' "
                "AND (name LIKE '%%_no_update' OR name LIKE '%%_no_delete')"
            )
        guarded = {row[0] for row in cursor.fetchall()}
    assert guarded == set(TABLES)


# --- the chain's seq across both revision tables --------------------------------------------


def verdict_fields(claim: Claim, **overrides) -> dict:
    """A verdict revision the database accepts, until `overrides` break one rule."""
    fields = {
        "claim": claim,
        "seq": 99,
        "annotator": "judge-model",
        "origin": Origin.IMPORTED,
        "association": "attached",
        "support": "supported",
        "reason": "The passage states it.",
        "created_at": timezone.now(),
        "prev_sha256": "a" * 64,
        "sha256": "b" * 64,
    }
    return fields | overrides


def claim_revision_fields(claim: Claim, **overrides) -> dict:
    """A claim revision the database accepts, until `overrides` break one rule."""
    fields = {
        "claim": claim,
        "seq": 99,
        "text": "The window is 30 days.",
        "annotator": "judge-model",
        "origin": Origin.IMPORTED,
        "created_at": timezone.now(),
        "prev_sha256": "a" * 64,
        "sha256": "c" * 64,
    }
    return fields | overrides


@pytest.fixture
def claim(demo_runs) -> Claim:
    """A claim whose chain is: claim revision 1, verdict revision 2."""
    claim = Claim.objects.get(key="C-017-1", response__run__run_id="q017-r1")
    assert list(claim.revisions.values_list("seq", flat=True)) == [1]
    assert list(claim.verdicts.values_list("seq", flat=True)) == [2]
    return claim


def test_a_revision_with_a_free_seq_is_accepted(claim):
    VerdictRevision.objects.create(**verdict_fields(claim, seq=3))
    ClaimRevision.objects.create(**claim_revision_fields(claim, seq=4))
    assert claim.verdicts.count() == 2


def test_a_verdict_revision_cannot_take_a_seq_of_a_claim_revision(claim):
    with pytest.raises(IntegrityError), transaction.atomic():
        VerdictRevision.objects.create(**verdict_fields(claim, seq=1))
    assert claim.verdicts.count() == 1


def test_a_claim_revision_cannot_take_a_seq_of_a_verdict_revision(claim):
    with pytest.raises(IntegrityError), transaction.atomic():
        ClaimRevision.objects.create(**claim_revision_fields(claim, seq=2))
    assert claim.revisions.count() == 1


def test_raw_sql_cannot_take_a_used_seq_either(claim):
    with pytest.raises(IntegrityError), transaction.atomic():
        execute(
            "INSERT INTO cards_verdictrevision (claim_id, seq, annotator, origin, association, "
            "support, contradicts, reason, diagnosis, citation_relevance, note, created_at, "
            "sha256) VALUES (%s, 1, 'x', 'imported', 'attached', 'supported', %s, 'r', '', "
            "'{}', '', %s, %s)",
            [claim.pk, False, timezone.now(), "d" * 64],
        )


def test_the_seq_guard_is_per_claim(claim):
    other = Claim.objects.exclude(pk=claim.pk).first()
    VerdictRevision.objects.create(**verdict_fields(other, seq=60))
    VerdictRevision.objects.create(**verdict_fields(claim, seq=60, sha256="e" * 64))


# --- named check constraints ----------------------------------------------------------------


def refused_by(constraint: str, model, fields: dict) -> None:
    """Insert through the ORM (no model validation) and expect the named constraint."""
    with pytest.raises(IntegrityError) as info, transaction.atomic():
        model.objects.create(**fields)
    assert constraint in str(info.value)


@pytest.mark.parametrize("reason", ["", " ", "   \n\t"], ids=["empty", "space", "mixed"])
def test_a_blank_verdict_reason_is_refused(claim, reason):
    refused_by(
        "cards_verdictrevision_reason_not_blank",
        VerdictRevision,
        verdict_fields(claim, reason=reason),
    )


def test_an_invalid_support_label_is_refused(claim):
    refused_by(
        "cards_verdictrevision_valid_support",
        VerdictRevision,
        verdict_fields(claim, support="mostly"),
    )


@pytest.mark.parametrize("support", ["supported", "partial", "not_assessable"])
def test_contradicts_is_refused_with_a_label_other_than_unsupported(claim, support):
    refused_by(
        "cards_verdictrevision_contradicts_only_unsupported",
        VerdictRevision,
        verdict_fields(claim, support=support, contradicts=True),
    )


def test_contradicts_is_accepted_with_unsupported(claim):
    VerdictRevision.objects.create(
        **verdict_fields(claim, support="unsupported", contradicts=True)
    )


def test_an_invalid_association_is_refused(claim):
    refused_by(
        "cards_verdictrevision_valid_association",
        VerdictRevision,
        verdict_fields(claim, association="detached"),
    )


def test_an_unknown_diagnosis_is_refused(claim):
    refused_by(
        "cards_verdictrevision_valid_diagnosis",
        VerdictRevision,
        verdict_fields(claim, diagnosis="bad_luck"),
    )


def test_an_imported_verdict_with_an_author_user_is_refused(claim, reviewer):
    refused_by(
        "cards_verdictrevision_author_matches_origin",
        VerdictRevision,
        verdict_fields(claim, author=reviewer),
    )


def test_a_local_verdict_without_an_author_user_is_refused(claim):
    refused_by(
        "cards_verdictrevision_author_matches_origin",
        VerdictRevision,
        verdict_fields(claim, origin=Origin.REVIEW),
    )


def test_a_local_verdict_with_its_author_is_accepted(claim, reviewer):
    VerdictRevision.objects.create(
        **verdict_fields(claim, origin=Origin.REVIEW, author=reviewer, annotator="alice")
    )


def test_an_imported_claim_revision_with_an_author_user_is_refused(claim, reviewer):
    refused_by(
        "cards_claimrevision_author_matches_origin",
        ClaimRevision,
        claim_revision_fields(claim, author=reviewer),
    )


@pytest.mark.parametrize("reason", ["", "  \n"], ids=["empty", "blank"])
def test_a_withdrawn_claim_revision_without_a_reason_is_refused(claim, reason):
    refused_by(
        "cards_claimrevision_reason_when_withdrawn",
        ClaimRevision,
        claim_revision_fields(claim, withdrawn=True, reason=reason),
    )


def test_a_withdrawn_claim_revision_with_a_reason_is_accepted(claim):
    ClaimRevision.objects.create(
        **claim_revision_fields(claim, withdrawn=True, reason="Duplicate of C-017-2.")
    )


def test_an_empty_claim_text_is_refused(claim):
    refused_by(
        "cards_claimrevision_text_not_empty",
        ClaimRevision,
        claim_revision_fields(claim, text=""),
    )


def test_an_adjudication_origin_is_refused_for_a_claim_revision(claim, reviewer):
    refused_by(
        "cards_claimrevision_valid_origin",
        ClaimRevision,
        claim_revision_fields(claim, origin=Origin.ADJUDICATION, author=reviewer),
    )


def test_a_sha256_that_is_not_lowercase_hex_is_refused(claim):
    refused_by(
        "cards_verdictrevision_sha256_hex",
        VerdictRevision,
        verdict_fields(claim, sha256="B" * 64),
    )


def test_a_seq_of_zero_is_refused(claim):
    refused_by("cards_verdictrevision_seq_positive", VerdictRevision, verdict_fields(claim, seq=0))
