"""On export, passage hashes and revision chains are re-checked against the database.

The triggers refuse every UPDATE and DELETE, so each test first goes around
them the way only someone with the database's own rights could (PostgreSQL:
`DISABLE TRIGGER USER`; SQLite: `DROP TRIGGER`), inside the test's transaction,
and puts them back before the export runs. The export must then refuse loudly,
name the rows, and leave nothing at the --out path.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.management import CommandError
from django.db import IntegrityError, connection, transaction
from django.urls import reverse

from audit.models import AuditExport
from audit.verify import verify
from cards.models import Claim, ClaimRevision, VerdictRevision
from cards.services.verdicts import verdict_save
from evidence.dbguards import append_only_sql
from evidence.models import Passage
from jobs.models import Job
from tests.audit.test_audit_export import export_job
from tests.audit.test_audit_zip import export
from tests.conftest import ROOT, sqlite_copy, sqlite_env

D01 = "D-01@returns-v4#p04"
# A refused export closes its half-written zip (ZipStream.abandon): one left to the garbage
# collector would write to a closed file. Collected after each test and made an error, so
# such a regression fails here rather than echoing in whichever test runs next
# (tests/audit/conftest.py).
pytestmark = [
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.usefixtures("collect_abandoned_zips"),
]


def execute(sql: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


@contextmanager
def around_the_triggers(table: str, operation: str = "UPDATE") -> Iterator[None]:
    """The append-only trigger of `table` off for the block, then back exactly as installed."""
    if connection.vendor == "postgresql":
        # The test's inserts left deferred foreign-key checks pending, and ALTER TABLE
        # refuses to run over them: check them now, then defer again afterwards.
        execute("SET CONSTRAINTS ALL IMMEDIATE")
        execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
    else:
        execute(f"DROP TRIGGER {table}_no_{operation.lower()}")
    try:
        yield
    finally:
        if connection.vendor == "postgresql":
            execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
            execute("SET CONSTRAINTS ALL DEFERRED")
        else:
            installed, _ = append_only_sql("sqlite", table)
            execute(next(sql for sql in installed if f"BEFORE {operation} " in sql))


def refused(tmp_path, *args: str) -> str:
    """The export's refusal: exit 1, no file at --out, nothing half-written beside it."""
    out = tmp_path / "package.zip"
    with pytest.raises(CommandError) as caught:
        export(*args, out=out)
    assert caught.value.returncode == 1
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []
    assert not AuditExport.objects.exists()
    return str(caught.value)


@pytest.fixture
def d01(demo_runs) -> Passage:
    return Passage.objects.get(snapshot__name="store-kb@2026-07", ref=D01)


def test_the_triggers_are_back_after_going_around_them(d01):
    with around_the_triggers("evidence_passage"):
        execute("UPDATE evidence_passage SET title = title WHERE id = %s", [d01.pk])
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        execute("UPDATE evidence_passage SET title = title WHERE id = %s", [d01.pk])


def test_a_passage_edited_in_the_database_stops_the_export_naming_it(d01, tmp_path):
    with around_the_triggers("evidence_passage"):
        execute("UPDATE evidence_passage SET text = text || ' Not.' WHERE id = %s", [d01.pk])
    assert refused(tmp_path) == (
        "export refused: passage text no longer matches its stored SHA-256: "
        f"store-kb@2026-07 {D01} (row {d01.pk})"
    )


def test_every_edited_passage_is_named_not_only_the_first(d01, tmp_path):
    d02 = Passage.objects.get(snapshot__name="store-kb@2026-07", ref="D-02@refunds-v2#p07")
    with around_the_triggers("evidence_passage"):
        execute(
            "UPDATE evidence_passage SET text = text || '!' WHERE id IN (%s, %s)", [d01.pk, d02.pk]
        )
    message = refused(tmp_path, "--run", "q017-r1")
    assert f"{D01} (row {d01.pk})" in message
    assert f"D-02@refunds-v2#p07 (row {d02.pk})" in message


def test_a_refused_export_leaves_an_older_package_at_out_untouched(d01, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", out=out)
    before = out.read_bytes()
    with around_the_triggers("evidence_passage"):
        execute("UPDATE evidence_passage SET text = 'Anything.' WHERE id = %s", [d01.pk])
    with pytest.raises(CommandError, match="export refused"):
        export("--run", "q017-r1", out=out)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["package.zip"]


def test_an_edited_passage_outside_the_package_does_not_stop_it(demo_runs, tmp_path):
    p7 = Passage.objects.filter(snapshot__name="p7-archive@2026-09").first()
    with around_the_triggers("evidence_passage"):
        execute("UPDATE evidence_passage SET text = 'Anything.' WHERE id = %s", [p7.pk])
    export("--run", "q017-r1", out=tmp_path / "package.zip")
    verify(str(tmp_path / "package.zip"))


def test_a_verdict_reason_edited_in_the_database_stops_the_export_naming_it(demo_runs, tmp_path):
    verdict = VerdictRevision.objects.get(claim__key="C-017-2", seq=2)
    with around_the_triggers("cards_verdictrevision"):
        execute("UPDATE cards_verdictrevision SET reason = 'Fine.' WHERE id = %s", [verdict.pk])
    assert refused(tmp_path) == (
        "export refused: revision content does not match its hash at "
        f"demo/q017-r1/Q-017/C-017-2 revision 2 (row {verdict.pk} of cards_verdictrevision)"
    )


def test_a_claim_text_edited_in_the_database_stops_the_export_naming_it(demo_runs, tmp_path):
    revision = ClaimRevision.objects.get(claim__key="C-017-3", seq=1)
    with around_the_triggers("cards_claimrevision"):
        execute("UPDATE cards_claimrevision SET text = 'Other.' WHERE id = %s", [revision.pk])
    assert refused(tmp_path, "--run", "q017-r1") == (
        "export refused: revision content does not match its hash at "
        f"demo/q017-r1/Q-017/C-017-3 revision 1 (row {revision.pk} of cards_claimrevision)"
    )


def test_a_float_the_seal_never_had_in_a_cards_columns_stops_the_export(demo_runs, tmp_path):
    """Cards are written as plain lines (orjson, no check of their types): a float below
    1e-4 that orjson spells otherwise than json.dumps could only come from an edited
    column of the card's current revision, which revisions.jsonl then refuses against
    its seal, before any manifest."""
    revision = ClaimRevision.objects.filter(claim__key="C-017-3").order_by("-seq").first()
    with around_the_triggers("cards_claimrevision"):
        execute(
            "UPDATE cards_claimrevision SET spans = %s WHERE id = %s",
            ["[[0, 1e-05]]", revision.pk],
        )
    assert refused(tmp_path, "--run", "q017-r1") == (
        "export refused: revision content does not match its hash at "
        f"demo/q017-r1/Q-017/C-017-3 revision {revision.seq} "
        f"(row {revision.pk} of cards_claimrevision)"
    )


def test_a_broken_prev_sha256_link_stops_the_export_naming_it(demo_runs, tmp_path):
    verdict = VerdictRevision.objects.get(claim__key="C-017-1", seq=2)
    with around_the_triggers("cards_verdictrevision"):
        execute(
            "UPDATE cards_verdictrevision SET prev_sha256 = %s WHERE id = %s",
            ["0" * 64, verdict.pk],
        )
    assert refused(tmp_path, "--run", "q017-r1") == (
        "export refused: broken revision chain at "
        f"demo/q017-r1/Q-017/C-017-1 revision 2 (row {verdict.pk} of cards_verdictrevision)"
    )


def test_a_revision_deleted_from_the_middle_of_a_chain_stops_the_export(
    demo_runs, reviewer, second_reviewer, tmp_path
):
    claim = Claim.objects.get(response__run__run_id="q017-r1", key="C-017-4")
    for author in (reviewer, second_reviewer):
        verdict_save(
            claim=claim, author=author, support="partial", reason="Half of it.",
            seen_claim_seq=1, seen_own_seq=None,
        )  # fmt: skip
    gone, after = claim.verdicts.get(seq=3), claim.verdicts.get(seq=4)
    with around_the_triggers("cards_verdictrevision", "DELETE"):
        execute("DELETE FROM cards_verdictrevision WHERE id = %s", [gone.pk])
    assert refused(tmp_path, "--run", "q017-r1") == (
        "export refused: broken revision chain at "
        f"demo/q017-r1/Q-017/C-017-4 revision 4 (row {after.pk} of cards_verdictrevision)"
    )


def test_the_export_job_of_tampered_data_fails_and_records_no_package_id(
    client, lead, d01, jobs_dir
):
    with around_the_triggers("evidence_passage"):
        execute("UPDATE evidence_passage SET text = 'Anything.' WHERE id = %s", [d01.pk])
    client.force_login(lead)
    job = export_job(client)
    assert job.state == Job.State.FAILED
    assert f"{D01} (row {d01.pk})" in job.errors[0]
    assert job.errors[0].startswith("Export refused: ")
    assert not AuditExport.objects.exists()
    assert list(jobs_dir.iterdir()) == []  # no package, not even half of one
    assert client.get(reverse("job_download", args=["demo", job.code])).status_code == 404


def test_a_refused_export_says_one_line_on_stderr(demo_sqlite, tmp_path):
    database = sqlite_copy(demo_sqlite, tmp_path / "own.sqlite3")
    env = sqlite_env(database)
    manage = [sys.executable, str(ROOT / "manage.py")]
    with sqlite3.connect(database) as db:
        db.execute("DROP TRIGGER evidence_passage_no_update")
        db.execute("UPDATE evidence_passage SET text = 'Anything.' WHERE ref = ?", [D01])
    out = tmp_path / "package.zip"
    done = subprocess.run(
        [*manage, "export_audit", "--project", "demo", "--out", str(out)],
        env=env, cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1
    assert not out.exists()
    first, *rest = done.stderr.splitlines()
    assert first.startswith(
        "CommandError: export refused: passage text no longer matches its stored SHA-256: "
        f"store-kb@2026-07 {D01} (row "
    )
    assert rest == []
