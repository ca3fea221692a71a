"""The trail survives whoever owns the tables: anchors outside the database (audit.anchors).

Each attack is made the way only the tables' owner or a superuser can: on PostgreSQL
`SET LOCAL session_replication_role = replica` (every trigger off) and then UPDATE, DELETE
or TRUNCATE, as a superuser; on SQLite the file's owner drops the triggers. The chains are
re-sealed where that is the point, so the database agrees with itself: only the anchors
of an earlier export, signed with a key the database does not hold, catch it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings
from django.urls import reverse

from audit.anchor_log import checkpoint_path
from audit.anchors import anchor_file, anchors_check
from audit.export import AuditExportError, export_stream
from audit.models import AuditExport
from audit.revision_rows import CLAIM_FIELDS, IDENTITY, VERDICT_FIELDS, _document, _identity
from audit.services import audit_package
from cards.chain import seal
from cards.models import Claim, ClaimRevision, VerdictRevision
from evidence.dbguards import append_only_sql
from tests.audit.test_audit_export import downloaded, export_job
from tests.audit.test_audit_zip import (
    PYTHON3,
    export,
    members,
    refit_manifest,
    rezip,
    run_verify,
)
from tests.conftest import AUDIT_KEY, ROOT

TABLES = ("cards_claimrevision", "cards_verdictrevision", "replay_auditexport")


def execute(sql: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


@contextmanager
def as_the_owner() -> Iterator[None]:
    """Every append-only trigger off for the block, as a superuser or the file's owner can."""
    if connection.vendor == "postgresql":
        # Pending deferred foreign-key checks of the test's inserts would stop TRUNCATE.
        execute("SET CONSTRAINTS ALL IMMEDIATE")
        execute("SET LOCAL session_replication_role = replica")
    else:
        for table in TABLES:
            for operation in ("update", "delete"):
                execute(f"DROP TRIGGER {table}_{'no'}_{operation}")
    try:
        yield
    finally:
        if connection.vendor == "postgresql":
            execute("SET LOCAL session_replication_role = origin")
            execute("SET CONSTRAINTS ALL DEFERRED")
        else:
            for table in TABLES:
                for sql in append_only_sql("sqlite", table)[0]:
                    execute(sql)


def refused(tmp_path, *args: str) -> str:
    """The export's one-line refusal; nothing written, nothing recorded."""
    out = tmp_path / "refused.zip"
    before = AuditExport.objects.count()
    with pytest.raises(CommandError) as caught:
        export(*args, out=out)
    assert not out.exists()
    assert AuditExport.objects.count() == before
    message = str(caught.value)
    assert "\n" not in message
    return message


def chain_name(claim: Claim) -> str:
    response = claim.response
    return f"demo/{response.run.run_id}/{response.case.case_id}/{claim.key}"


def a_judged_claim(run_id: str = "q017-r1") -> Claim:
    """A claim of the run whose chain has a claim revision and at least one verdict."""
    return (
        Claim.objects.filter(response__run__run_id=run_id, verdicts__isnull=False)
        .select_related("response__run", "response__case")
        .order_by("pk")
        .distinct()
        .first()
    )


def reseal(claim: Claim) -> None:
    """Recompute every hash of the claim's chain from its rows, as a forger with the code can."""
    package = SimpleNamespace(project=SimpleNamespace(slug="demo"))
    rows = [
        ("claim", row)
        for row in ClaimRevision.objects.filter(claim=claim).values(*IDENTITY, *CLAIM_FIELDS)
    ] + [
        ("verdict", row)
        for row in VerdictRevision.objects.filter(claim=claim).values(*IDENTITY, *VERDICT_FIELDS)
    ]
    previous = None
    for kind, row in sorted(rows, key=lambda item: item[1]["seq"]):
        row["prev_sha256"] = previous
        previous = seal(_document(kind, row, _identity(package, row)))
        table = f"cards_{kind}revision"
        execute(
            f"UPDATE {table} SET prev_sha256 = %s, sha256 = %s WHERE id = %s",
            [row["prev_sha256"], previous, row["pk"]],
        )


def edited_and_resealed() -> Claim:
    """A judged claim whose first revision says something else, its chain re-sealed."""
    claim = a_judged_claim()
    with as_the_owner():
        execute(
            "UPDATE cards_claimrevision SET text = 'Forged.' WHERE claim_id = %s AND seq = 1",
            [claim.pk],
        )
        reseal(claim)
    return claim


# --- the signed anchor in the package ---------------------------------------------------------


@pytest.fixture
def key_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("key") / "audit.key"
    path.write_text(AUDIT_KEY + "\n")
    return path


@pytest.fixture
def package(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export("--run", "q017-r1", out=out)
    (tmp_path / "verify.py").write_bytes(members(out)["verify.py"])
    return out


def test_the_anchor_names_the_package_id_and_chain_heads_signed_with_the_key(package):
    files = members(package)
    anchor = json.loads(files["anchor.json"])
    manifest = json.loads(files["manifest.json"])
    assert anchor["package_id"] == AuditExport.objects.get().package_id
    assert anchor["chain_heads"] == manifest["chain_heads"]
    assert set(anchor) == {
        "format", "project", "package_id", "chain_heads", "key_id", "hmac_sha256", "anchor_sha256"
    }  # fmt: skip
    assert AUDIT_KEY not in files["anchor.json"].decode()


def test_verify_py_with_the_key_says_the_signature_is_valid(package, key_file):
    done = run_verify(package.parent / "verify.py", package, "--key", str(key_file))
    assert done.returncode == 0, done
    assert done.stdout.endswith("cards checked, anchor signature valid\n")


def test_verify_audit_checks_the_signature_too(package, key_file):
    from io import StringIO

    out = StringIO()
    call_command("verify_audit", str(package), "--key", str(key_file), stdout=out)
    assert out.getvalue().endswith("anchor signature valid\n")


def test_verify_py_with_another_key_fails(package, tmp_path):
    other = tmp_path / "other.key"
    other.write_text("another-key-of-at-least-32-bytes-long\n")
    done = run_verify(package.parent / "verify.py", package, "--key", str(other))
    assert (done.returncode, done.stdout) == (
        1,
        "FAIL anchor.json: signature: signed with another key than KEYFILE\n",
    )


def test_a_package_forged_whole_passes_without_the_key_and_fails_with_it(package, key_file):
    # The forger edits a file and refits the manifest and the anchor: every hash agrees.
    # Only the HMAC, which needs the key, does not.
    files = members(package)
    files["README.txt"] += b"Nothing was changed.\n"
    refit_manifest(files)
    forged = package.parent / "forged.zip"
    forged.write_bytes(rezip(files))
    verifier = package.parent / "verify.py"
    assert run_verify(verifier, forged).stdout.startswith("OK ")
    assert run_verify(verifier, forged, "--key", str(key_file)).stdout == (
        "FAIL anchor.json: signature: HMAC-SHA256 does not match under KEYFILE\n"
    )


def test_the_browser_download_carries_the_same_anchor_as_the_command(client, lead, package):
    client.force_login(lead)
    assert downloaded(client, "&run=q017-r1") == package.read_bytes()


# --- the anchors file -------------------------------------------------------------------------


def test_each_export_appends_a_signed_line_of_its_package_id_and_the_heads_that_changed(
    package, tmp_path
):
    export("--run", "q017-r2", out=tmp_path / "second.zip")
    raw = anchor_file("demo").read_bytes().splitlines(keepends=True)
    first, second = (json.loads(line) for line in raw)
    assert first["package_id"] == json.loads(members(package)["anchor.json"])["package_id"]
    assert first["heads"] == json.loads(members(package)["manifest.json"])["chain_heads"]
    assert (first["line"], first["after"], first["prev_sha256"]) == (1, 0, None)
    assert (
        second["heads"]
        == json.loads(members(tmp_path / "second.zip")["manifest.json"])["chain_heads"]
    )
    assert (second["line"], second["after"]) == (2, 1)
    assert second["prev_sha256"] == hashlib.sha256(raw[0]).hexdigest()
    assert {"key_id", "hmac_sha256"} <= set(second)


def test_an_edited_anchors_file_stops_the_export(package, tmp_path):
    path = anchor_file("demo")
    anchor = json.loads(path.read_bytes())
    chain = min(anchor["heads"])
    anchor["heads"][chain] = "0" * 64
    path.write_text(json.dumps(anchor) + "\n")
    assert refused(tmp_path) == (
        f"export refused: anchor file {path}:1: its signature does not match (edited)"
    )


def test_anchors_signed_with_another_key_stop_the_export(package, tmp_path):
    with override_settings(AUDIT_SIGNING_KEY="another-key-of-at-least-32-bytes-long"):
        message = refused(tmp_path)
    assert message == (
        f"export refused: anchor checkpoint {checkpoint_path('demo')}: signed with another key"
    )


def test_an_unreadable_key_file_is_a_configuration_error(demo_runs, tmp_path):
    with (
        override_settings(AUDIT_SIGNING_KEY="", AUDIT_SIGNING_KEY_FILE=str(tmp_path / "none")),
        pytest.raises(ImproperlyConfigured, match="AUDIT_SIGNING_KEY_FILE"),
    ):
        export(out=tmp_path / "package.zip")


def test_a_short_key_is_refused(demo_runs, tmp_path):
    with (
        override_settings(AUDIT_SIGNING_KEY="short"),
        pytest.raises(ImproperlyConfigured, match="shorter than 32 bytes"),
    ):
        export(out=tmp_path / "package.zip")


# --- the attacks of a table owner or superuser ------------------------------------------------


def test_a_revision_edited_and_its_chain_resealed_is_refused_naming_the_claim(package, tmp_path):
    claim = edited_and_resealed()
    message = refused(tmp_path)
    assert message.startswith(f"export refused: claim {chain_name(claim)}: revision ")
    assert message.endswith("is no longer in its chain (truncated, shortened or edited since)")


def test_the_same_edit_with_no_earlier_export_goes_unseen(demo_runs, tmp_path):
    # Why the anchors exist: the database re-sealed agrees with itself.
    edited_and_resealed()
    assert len(export(out=tmp_path / "package.zip")) == 64


def test_a_chains_newest_revision_deleted_is_refused_naming_the_claim(package, tmp_path):
    claim = a_judged_claim()
    newest = VerdictRevision.objects.filter(claim=claim).order_by("-seq").first()
    assert newest.seq == max(ClaimRevision.objects.filter(claim=claim).count() + 1, newest.seq)
    with as_the_owner():
        execute("DELETE FROM cards_verdictrevision WHERE id = %s", [newest.pk])
    assert refused(tmp_path).startswith(f"export refused: claim {chain_name(claim)}: revision ")


def test_the_revision_tables_truncated_are_refused(package, tmp_path):
    first = min(json.loads(members(package)["manifest.json"])["chain_heads"])
    with as_the_owner():
        if connection.vendor == "postgresql":
            execute("TRUNCATE cards_verdictrevision, cards_claimrevision CASCADE")
        else:  # SQLite has no TRUNCATE: DELETE without WHERE is its own
            execute("DELETE FROM cards_verdictrevision")
            execute("DELETE FROM cards_claimrevision")
    assert refused(tmp_path).startswith(f"export refused: claim {first}: revision ")


def test_a_chain_rewritten_while_the_export_runs_is_refused_naming_the_claim(package, tmp_path):
    # After the check, before the chain is read: only meeting the anchored head in the chain
    # as it is re-read catches it, and nothing is anchored in its place.
    candidate = audit_package(slug="demo", run_ids=["q017-r1"])
    anchors_check(package=candidate)
    candidate.anchors_checked = True  # as the browser's download does before it streams
    claim = edited_and_resealed()
    lines = anchor_file("demo").read_bytes()
    with pytest.raises(AuditExportError) as caught:
        for _ in export_stream(candidate):
            pass
    assert str(caught.value).startswith(f"claim {chain_name(claim)}: revision ")
    assert str(caught.value).endswith(
        "is no longer in its chain (truncated, shortened or edited since)"
    )
    assert anchor_file("demo").read_bytes() == lines
    assert refused(tmp_path).startswith(f"export refused: claim {chain_name(claim)}: ")


def test_a_chain_edited_in_a_run_not_exported_now_is_refused_all_the_same(package, tmp_path):
    claim = a_judged_claim("q017-r1")
    with as_the_owner():
        execute(
            "UPDATE cards_verdictrevision SET reason = 'Forged.' WHERE claim_id = %s", [claim.pk]
        )
        reseal(claim)
    assert refused(tmp_path, "--run", "q017-r2").startswith(
        f"export refused: claim {chain_name(claim)}: "
    )


def test_a_deleted_export_record_is_refused_naming_the_package(package, tmp_path):
    package_id = AuditExport.objects.get().package_id
    with as_the_owner():
        if connection.vendor == "postgresql":
            execute("TRUNCATE replay_auditexport")
        else:
            execute("DELETE FROM replay_auditexport")
    assert refused(tmp_path) == (
        f"export refused: package {package_id} was exported but is no longer recorded in "
        "the database (its AuditExport row was deleted)"
    )


def test_the_browser_export_is_refused_with_a_message_and_records_nothing(client, lead, package):
    claim = a_judged_claim()
    with as_the_owner():
        execute("DELETE FROM cards_verdictrevision WHERE claim_id = %s", [claim.pk])
    client.force_login(lead)
    job = export_job(client)
    page = client.get(reverse("job_detail", args=["demo", job.code])).content.decode()
    assert f"Export refused: claim {chain_name(claim)}: revision" in page
    assert AuditExport.objects.count() == 1


def test_the_verifier_reads_the_key_with_the_standard_library_only(package, key_file):
    done = subprocess.run(
        [PYTHON3, "-I", "-S", "verify.py", str(package), "--key", str(key_file)],
        cwd=package.parent, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done
    assert ROOT.name not in done.stderr


def test_with_no_key_configured_development_gets_one_generated_once(
    demo_runs, tmp_path, monkeypatch
):
    key_path = tmp_path / "var" / "audit-signing.key"
    monkeypatch.setattr("audit.anchors.DEFAULT_KEY_FILE", key_path)
    with override_settings(AUDIT_SIGNING_KEY="", AUDIT_SIGNING_KEY_FILE=""):
        export("--run", "q017-r1", out=tmp_path / "one.zip")
        key = key_path.read_bytes()
        export("--run", "q017-r1", out=tmp_path / "two.zip")
    assert key_path.read_bytes() == key
    assert len(key.strip()) == 64
    assert key_path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "one.zip").read_bytes() == (tmp_path / "two.zip").read_bytes()
    done = run_verify_key(tmp_path / "one.zip", key_path)
    assert done.stdout.endswith("anchor signature valid\n"), done


def run_verify_key(package, key_path):
    (package.parent / "verify.py").write_bytes(members(package)["verify.py"])
    return run_verify(package.parent / "verify.py", package, "--key", str(key_path))
