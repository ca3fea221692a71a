"""The package's own verify.py, run by the system python3 outside Django, and verify_audit.

One package is exported for the whole module: the demo runs, a comparison, and
a chain of five local revisions (claim, verdict, verdict, claim, verdict) on
q017-r3. Each test changes a copy of it the way a careless hand or a forger
would, and checks that verification names the first file, line and check that
failed, never with a traceback.
"""

from __future__ import annotations

import io
import random
import struct
import subprocess
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import override_settings

from cards.services.claims import claim_create, claim_revise
from cards.services.verdicts import verdict_save
from evidence.canonical import canonical_json
from evidence.models import Role
from evidence.services import membership_set, project_create
from replay.models import Response
from tests.audit.test_audit_zip import (
    PYTHON3,
    export,
    lines,
    manifest,
    members,
    refit_manifest,
    rezip,
    rows,
    run_verify,
    run_verify_each,
    sha256,
)
from tests.conftest import FIXTURES, import_fixture

REVISIONS = "cards/revisions.jsonl"
PASSAGES = "fixture/passages.jsonl"
CARDS = "cards/cards.jsonl"
LOCAL_CHAIN = "demo/q017-r3/Q-017/c1"
CHAIN_KEYS = ("project", "run_id", "case_id", "claim_id")


@dataclass(frozen=True)
class Exported:
    path: Path
    files: dict[str, bytes]
    package_id: str
    verifier: Path  # the package's own verify.py, extracted beside nothing else


# Every test is marked so that pytest-django sets the test database up even when this
# module runs alone: the module-wide fixture below must never meet the real database.
pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def exported(django_db_setup, django_db_blocker, tmp_path_factory) -> Exported:
    folder = tmp_path_factory.mktemp("audit")
    anchors = override_settings(AUDIT_ANCHOR_DIR=str(folder / "anchors"))
    with django_db_blocker.unblock(), transaction.atomic(), anchors:
        name = str(connection.settings_dict["NAME"])
        assert name.startswith("test_") or "memory" in name, f"not a test database: {name}"
        project = project_create(slug="demo", name="Demo")
        for path in sorted(FIXTURES.glob("*.jsonl")):
            import_fixture(path.name)
        alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
        for user in (alice, bob):
            membership_set(project=project, user=user, role=Role.REVIEWER)
        response = Response.objects.get(run__run_id="q017-r3")
        claim = claim_create(
            response=response, author=alice, text="Final sale.", spans=[[94, 123]]
        )
        verdict_save(
            claim=claim, author=alice, support="supported", reason="D-01 excludes final sale.",
            seen_claim_seq=1, seen_own_seq=None,
        )  # fmt: skip
        verdict_save(
            claim=claim, author=bob, support="partial", reason="Only for direct purchases.",
            seen_claim_seq=1, seen_own_seq=None,
        )  # fmt: skip
        claim_revise(
            claim=claim, author=alice, seen_claim_seq=1, reason="Say where it was bought.",
            text="Final-sale items bought directly from the store are excluded.",
        )  # fmt: skip
        verdict_save(
            claim=claim, author=alice, support="supported", reason="D-01, first sentence.",
            seen_claim_seq=4, seen_own_seq=2,
        )  # fmt: skip
        package_id = export("--compare", "q017-r1", "q017-r2", out=folder / "package.zip")
        transaction.set_rollback(True)
    files = members(folder / "package.zip")
    (folder / "verifier").mkdir()
    verifier = folder / "verifier" / "verify.py"
    verifier.write_bytes(files["verify.py"])
    return Exported(folder / "package.zip", files, package_id, verifier)


def tampered(tmp_path: Path, files: dict[str, bytes], name: str = "tampered.zip") -> Path:
    path = tmp_path / name
    path.write_bytes(rezip(files))
    return path


def failure(exported: Exported, package: Path, *args: str) -> str:
    """verify.py's one line of failure; it must exit 1, on stdout, with nothing on stderr."""
    return failure_line(run_verify(exported.verifier, package, *args))


def failures(exported: Exported, packages: list[Path]) -> list[str]:
    """`failure` of each package, verified in one process (see run_verify_each)."""
    return [failure_line(done) for done in run_verify_each(exported.verifier, packages)]


def failure_line(done: subprocess.CompletedProcess) -> str:
    assert (done.returncode, done.stderr) == (1, ""), done
    (line,) = done.stdout.splitlines()
    assert line.startswith("FAIL ")
    return line


def chain_of(revisions: list[dict], chain: str) -> list[int]:
    """Indexes of the chain's rows in the file."""
    return [i for i, r in enumerate(revisions) if "/".join(r[k] for k in CHAIN_KEYS) == chain]


def reseal_chain(revisions: list[dict], start: int) -> str:
    """A forger's repair: re-hash row `start` and relink the rest of its chain; the new head."""
    chain = chain_of(revisions, "/".join(revisions[start][k] for k in CHAIN_KEYS))
    previous = revisions[start]["prev_sha256"]
    for i in [i for i in chain if i >= start]:
        revisions[i]["prev_sha256"] = previous
        document = {k: v for k, v in revisions[i].items() if k != "sha256"}
        revisions[i]["sha256"] = previous = sha256(canonical_json(document))
    return previous


# --- a package as exported ----------------------------------------------------------------------


def test_verify_py_says_ok_with_the_counts_and_exits_0(exported):
    done = run_verify(exported.verifier, exported.path)
    assert (done.returncode, done.stderr) == (0, ""), done
    files = exported.files
    revisions = rows(files[REVISIONS])
    chains = {"/".join(r[k] for k in CHAIN_KEYS) for r in revisions}
    assert done.stdout == (
        f"OK {len(files) - 1} files, {len(rows(files[PASSAGES]))} passages, "
        f"{len(revisions)} revisions in {len(chains)} chains, "
        f"{len(rows(files[CARDS]))} cards checked\n"
    )
    assert len(chain_of(revisions, LOCAL_CHAIN)) == 5


def test_verify_py_says_ok_with_the_package_id_recorded_at_export(exported):
    done = run_verify(exported.verifier, exported.path, "--id", exported.package_id)
    assert done.returncode == 0, done
    assert done.stdout.startswith("OK ")


def test_verify_py_needs_nothing_but_the_standard_library(exported):
    # -I: no environment, no user site; -S: no site-packages at all.
    done = subprocess.run(
        [PYTHON3, "-I", "-S", str(exported.verifier), str(exported.path)],
        capture_output=True, text=True, timeout=60, env={},
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, ""), done


def test_verify_audit_says_ok_like_verify_py(exported, capsys):
    call_command("verify_audit", str(exported.path), "--id", exported.package_id)
    assert capsys.readouterr().out == run_verify(exported.verifier, exported.path).stdout


def test_the_package_id_is_the_sha256_of_the_manifest(exported):
    assert exported.package_id == sha256(exported.files["manifest.json"])


def test_canonical_lines_rewritten_unchanged_are_the_same_bytes(exported):
    # So the forgeries below change only what they mean to change.
    for name in (REVISIONS, PASSAGES, CARDS):
        assert lines(rows(exported.files[name])) == exported.files[name]


# --- any changed byte ---------------------------------------------------------------------------


def test_a_byte_changed_anywhere_in_any_file_fails_naming_that_file(exported, tmp_path):
    generator = random.Random(20261130)
    packages: list[tuple[str, Path]] = []
    for name, data in exported.files.items():
        for copy in range(2):
            files = dict(exported.files)
            changed = bytearray(data)
            changed[generator.randrange(len(changed))] ^= generator.randrange(1, 256)
            files[name] = bytes(changed)
            packages.append((name, tampered(tmp_path, files, f"{len(packages)}-{copy}.zip")))
    named: dict[str, list[str]] = {}
    lines = failures(exported, [package for _, package in packages])
    for (name, _), line in zip(packages, lines, strict=True):
        named.setdefault(name, []).append(line)
    assert len(named) == len(exported.files) > 40
    for name, found in named.items():
        for line in found:
            assert line.startswith(f"FAIL {name}:"), (name, line)
    assert named["cards/cards.csv"][0] == (
        "FAIL cards/cards.csv: SHA-256 does not match the manifest"
    )


def test_verify_audit_names_the_same_failure_and_exits_1(exported, tmp_path):
    files = dict(exported.files)
    files["cards/cards.csv"] = files["cards/cards.csv"].replace(b"supported", b"supported ", 1)
    package = tampered(tmp_path, files)
    with pytest.raises(CommandError) as caught:
        call_command("verify_audit", str(package))
    assert caught.value.returncode == 1
    assert str(caught.value) == failure(exported, package)
    assert str(caught.value) == (
        f"FAIL cards/cards.csv: size: {len(files['cards/cards.csv'])} bytes, "
        f"the manifest says {len(exported.files['cards/cards.csv'])}"
    )


# --- removed and added files --------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["metrics/q017-r1.json", REVISIONS, PASSAGES, "verify.py", "replay/q017-r1__q017-r2.json"],
)
def test_a_removed_file_fails_naming_it(exported, tmp_path, name):
    files = dict(exported.files)
    del files[name]
    assert failure(exported, tampered(tmp_path, files)) == (
        f"FAIL {name}: file listed in the manifest is missing"
    )


def test_a_removed_manifest_fails_naming_it(exported, tmp_path):
    files = dict(exported.files)
    del files["manifest.json"]
    assert failure(exported, tampered(tmp_path, files)) == (
        "FAIL manifest.json: missing from the package"
    )


def test_an_added_file_fails_naming_it(exported, tmp_path):
    files = {"notes.txt": b"nothing to see\n", **exported.files}
    assert failure(exported, tampered(tmp_path, files)) == (
        "FAIL notes.txt: file not listed in the manifest (added?)"
    )


def test_an_added_file_with_the_name_of_another_fails(exported, tmp_path):
    forged = exported.files[CARDS].replace(b'"support":"supported"', b'"support":"unsupported"')
    assert forged != exported.files[CARDS]
    package = tmp_path / "duplicate.zip"
    with (
        zipfile.ZipFile(exported.path) as original,
        zipfile.ZipFile(package, "w") as out,
        warnings.catch_warnings(action="ignore", category=UserWarning),  # "Duplicate name"
    ):
        for info in original.infolist():
            if info.filename == CARDS:
                out.writestr(zipfile.ZipInfo(CARDS, date_time=info.date_time), forged)
            out.writestr(info, original.read(info))
    assert failure(exported, package).startswith(f"FAIL {CARDS}")


def test_a_file_dropped_with_its_manifest_entry_is_caught_only_by_the_package_id(
    exported, tmp_path
):
    files = dict(exported.files)
    del files["metrics/q017-r1.json"]
    refit_manifest(files)
    package = tampered(tmp_path, files)
    assert run_verify(exported.verifier, package).returncode == 0
    assert failure(exported, package, "--id", exported.package_id) == (
        "FAIL manifest.json: package id: its SHA-256 is not the id recorded at export"
    )


def test_a_checked_file_dropped_with_its_manifest_entry_still_fails_naming_it(exported, tmp_path):
    files = dict(exported.files)
    del files[PASSAGES]
    refit_manifest(files)
    line = failure(exported, tampered(tmp_path, files))
    assert PASSAGES in line


# --- revision chains ----------------------------------------------------------------------------


@pytest.mark.parametrize("refit", [False, True], ids=["manifest-as-exported", "manifest-refit"])
def test_a_removed_revision_line_breaks_the_chain(exported, tmp_path, refit):
    revisions = rows(exported.files[REVISIONS])
    _, second, *_ = chain_of(revisions, LOCAL_CHAIN)
    del revisions[second]
    files = {**exported.files, REVISIONS: lines(revisions)}
    if refit:
        refit_manifest(files)
    if refit:
        # Lines count from 1: the old third row is now at index `second`.
        expected = f"FAIL {REVISIONS}:{second + 1}: revision chain: {LOCAL_CHAIN}: seq 3 after 1"
    else:
        expected = (
            f"FAIL {REVISIONS}: size: {len(files[REVISIONS])} bytes, "
            f"the manifest says {len(exported.files[REVISIONS])}"
        )
    assert failure(exported, tampered(tmp_path, files)) == expected


def test_reordered_revision_lines_break_the_chain(exported, tmp_path):
    revisions = rows(exported.files[REVISIONS])
    _, second, third, *_ = chain_of(revisions, LOCAL_CHAIN)
    revisions[second], revisions[third] = revisions[third], revisions[second]
    files = {**exported.files, REVISIONS: lines(revisions)}
    refit_manifest(files)
    assert failure(exported, tampered(tmp_path, files)) == (
        f"FAIL {REVISIONS}:{second + 1}: revision chain: {LOCAL_CHAIN}: seq 3 after 1"
    )


def test_a_removed_last_revision_is_caught_by_the_manifests_chain_head(exported, tmp_path):
    revisions = rows(exported.files[REVISIONS])
    del revisions[chain_of(revisions, LOCAL_CHAIN)[-1]]
    files = {**exported.files, REVISIONS: lines(revisions)}
    refit_manifest(files)
    assert failure(exported, tampered(tmp_path, files)) == (
        f"FAIL {REVISIONS}: chain head: {LOCAL_CHAIN} does not end at the manifest's head"
    )


def test_a_whole_chain_removed_is_caught_by_the_manifests_chain_head(exported, tmp_path):
    revisions = rows(exported.files[REVISIONS])
    gone = set(chain_of(revisions, LOCAL_CHAIN))
    files = {
        **exported.files,
        REVISIONS: lines([r for i, r in enumerate(revisions) if i not in gone]),
    }
    refit_manifest(files)
    assert failure(exported, tampered(tmp_path, files)) == (
        f"FAIL {REVISIONS}: chain head: {LOCAL_CHAIN} does not end at the manifest's head"
    )


# --- a forger who edits a revision and fixes what they can ---------------------------------------


def edited_reason(exported: Exported) -> tuple[dict[str, bytes], list[dict], list[int]]:
    revisions = rows(exported.files[REVISIONS])
    chain = chain_of(revisions, LOCAL_CHAIN)
    assert revisions[chain[1]]["reason"] == "D-01 excludes final sale."
    revisions[chain[1]]["reason"] = "D-01 clearly excludes final sale."
    return dict(exported.files), revisions, chain


def test_an_edited_revision_with_its_manifest_entry_fixed_breaks_the_manifest_seal(
    exported, tmp_path
):
    files, revisions, _ = edited_reason(exported)
    files[REVISIONS] = lines(revisions)
    refit_manifest(files, reseal=False)
    assert failure(exported, tampered(tmp_path, files)) == (
        "FAIL manifest.json: manifest_sha256 does not match the manifest"
    )


def test_an_edited_revision_with_the_manifest_resealed_fails_on_its_own_hash(exported, tmp_path):
    files, revisions, chain = edited_reason(exported)
    files[REVISIONS] = lines(revisions)
    refit_manifest(files)
    assert failure(exported, tampered(tmp_path, files)) == (
        f"FAIL {REVISIONS}:{chain[1] + 1}: revision SHA-256 does not match its content"
    )


def test_an_edited_revision_rehashed_fails_on_the_next_rows_link(exported, tmp_path):
    files, revisions, chain = edited_reason(exported)
    revisions[chain[1]]["sha256"] = sha256(
        canonical_json({k: v for k, v in revisions[chain[1]].items() if k != "sha256"})
    )
    files[REVISIONS] = lines(revisions)
    refit_manifest(files)
    assert failure(exported, tampered(tmp_path, files)) == (
        f"FAIL {REVISIONS}:{chain[2] + 1}: revision chain: "
        f"{LOCAL_CHAIN}: prev_sha256 does not link to revision 2"
    )


def test_an_edited_last_revision_rehashed_fails_on_the_manifests_chain_head(exported, tmp_path):
    revisions = rows(exported.files[REVISIONS])
    last = chain_of(revisions, LOCAL_CHAIN)[-1]
    revisions[last]["reason"] = "Rewritten afterwards."
    revisions[last]["sha256"] = sha256(
        canonical_json({k: v for k, v in revisions[last].items() if k != "sha256"})
    )
    files = {**exported.files, REVISIONS: lines(revisions)}
    refit_manifest(files)
    assert failure(exported, tampered(tmp_path, files)) == (
        f"FAIL {REVISIONS}: chain head: {LOCAL_CHAIN} does not end at the manifest's head"
    )


def test_a_package_forged_whole_passes_verify_py_but_not_against_the_package_id(
    exported, tmp_path
):
    files, revisions, chain = edited_reason(exported)
    head = reseal_chain(revisions, chain[1])
    files[REVISIONS] = lines(revisions)
    refit_manifest(files, chain_heads={**manifest(files)["chain_heads"], LOCAL_CHAIN: head})
    package = tampered(tmp_path, files)
    done = run_verify(exported.verifier, package)
    assert (done.returncode, done.stdout[:3]) == (0, "OK "), done
    call_command("verify_audit", str(package))  # the application agrees: whole, it is consistent
    assert failure(exported, package, "--id", exported.package_id) == (
        "FAIL manifest.json: package id: its SHA-256 is not the id recorded at export"
    )
    with pytest.raises(CommandError, match="FAIL manifest.json: package id"):
        call_command("verify_audit", str(package), "--id", exported.package_id)


# --- passages and cards -------------------------------------------------------------------------


def cited_passage(files: dict[str, bytes]) -> tuple[int, dict]:
    """A passage that some card attaches, and its index in the passage file."""
    cited = {
        (card["snapshot"], c["ref"]) for card in rows(files[CARDS]) for c in card["citations"]
    }
    return next(
        (i, p) for i, p in enumerate(rows(files[PASSAGES])) if (p["snapshot"], p["ref"]) in cited
    )


@pytest.mark.parametrize("refit", [False, True], ids=["manifest-as-exported", "manifest-refit"])
def test_a_passage_whose_text_no_longer_matches_its_hash_fails(exported, tmp_path, refit):
    passages = rows(exported.files[PASSAGES])
    passages[3]["text"] = passages[3]["text"].replace(" ", "  ", 1)
    files = {**exported.files, PASSAGES: lines(passages)}
    if refit:
        refit_manifest(files)
        expected = (
            f"FAIL {PASSAGES}:4: passage text does not match its SHA-256: {passages[3]['ref']}"
        )
    else:
        expected = f"FAIL {PASSAGES}: size" + f": {len(files[PASSAGES])} bytes, the manifest says "
        expected += str(len(exported.files[PASSAGES]))
    assert failure(exported, tampered(tmp_path, files)) == expected


def test_a_passage_rewritten_with_a_new_hash_no_longer_matches_the_cards(exported, tmp_path):
    index, passage = cited_passage(exported.files)
    passages = rows(exported.files[PASSAGES])
    passages[index]["text"] = passage["text"] + " (Amended.)"
    passages[index]["sha256"] = sha256(passages[index]["text"].encode("utf-8"))
    files = {**exported.files, PASSAGES: lines(passages)}
    refit_manifest(files)
    line = failure(exported, tampered(tmp_path, files))
    assert line.startswith(f"FAIL {CARDS}:")
    assert line.endswith(
        f": attached passage text does not match the passage file: {passage['ref']}"
    )


def test_a_cards_passage_text_edited_no_longer_matches_the_passage_file(exported, tmp_path):
    cards = rows(exported.files[CARDS])
    number, card = next((i, c) for i, c in enumerate(cards, 1) if c["citations"])
    card["citations"][0]["text"] += " (Amended.)"
    files = {**exported.files, CARDS: lines(cards)}
    refit_manifest(files)
    assert failure(exported, tampered(tmp_path, files)) == (
        f"FAIL {CARDS}:{number}: attached passage text does not match the passage file: "
        f"{card['citations'][0]['ref']}"
    )


def test_a_cards_verdict_edited_with_the_manifest_resealed_is_caught_only_by_the_package_id(
    exported, tmp_path
):
    # cards.jsonl is the current state, derived from the revisions; only its passage
    # texts are cross-checked. Its verdict fields are protected by the manifest alone.
    cards = rows(exported.files[CARDS])
    card = next(c for c in cards if c["support"] == "supported")
    card["support"] = "unsupported"
    files = {**exported.files, CARDS: lines(cards)}
    refit_manifest(files)
    package = tampered(tmp_path, files)
    assert run_verify(exported.verifier, package).returncode == 0
    assert failure(exported, package, "--id", exported.package_id).startswith(
        "FAIL manifest.json: package id"
    )


# --- the zip container --------------------------------------------------------------------------


def central_directory(data: bytes) -> dict[str, int]:
    """Offset of each entry's central directory record, by name."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        start = archive.start_dir
    offsets, at = {}, start
    while data[at : at + 4] == b"PK\x01\x02":
        name_length, extra_length, comment_length = struct.unpack("<HHH", data[at + 28 : at + 34])
        offsets[data[at + 46 : at + 46 + name_length].decode()] = at
        at += 46 + name_length + extra_length + comment_length
    return offsets


def flipped(exported: Exported, tmp_path: Path, position: int, mask: int = 0x80) -> Path:
    data = bytearray(exported.path.read_bytes())
    data[position] ^= mask
    path = tmp_path / f"flip-{position}.zip"
    path.write_bytes(data)
    return path


def test_a_flipped_byte_in_the_end_of_central_directory_is_reported(exported, tmp_path):
    data = exported.path.read_bytes()
    package = flipped(exported, tmp_path, data.rindex(b"PK\x05\x06"))
    assert failure(exported, package).startswith(f"FAIL {package}: not a readable zip file")


def test_a_truncated_package_is_reported(exported, tmp_path):
    package = tmp_path / "truncated.zip"
    package.write_bytes(exported.path.read_bytes()[:-200])
    assert failure(exported, package).startswith(f"FAIL {package}: not a readable zip file")


def test_something_that_is_not_a_zip_is_reported(exported, tmp_path):
    package = tmp_path / "notes.zip"
    package.write_text("not a zip\n")
    assert failure(exported, package).startswith(f"FAIL {package}: not a readable zip file")


def test_a_flipped_byte_in_a_central_directory_name_is_reported(exported, tmp_path):
    at = central_directory(exported.path.read_bytes())[CARDS]
    package = flipped(exported, tmp_path, at + 46 + len(CARDS) - 1, 0x01)  # ….jsonl → ….jsonm
    assert failure(exported, package) == (
        "FAIL cards/cards.jsonm: file not listed in the manifest (added?)"
    )


def test_a_flipped_crc_in_the_central_directory_is_reported(exported, tmp_path):
    at = central_directory(exported.path.read_bytes())[CARDS]
    package = flipped(exported, tmp_path, at + 16)
    message = failure(exported, package)
    assert message.startswith(f"FAIL {CARDS}: cannot be read")
    assert "Bad CRC-32" in message


def test_a_flipped_byte_in_compressed_data_is_reported_not_a_traceback(exported, tmp_path):
    with zipfile.ZipFile(exported.path) as archive:
        info = archive.getinfo(REVISIONS)
    data = exported.path.read_bytes()
    name_length, extra_length = struct.unpack(
        "<HH", data[info.header_offset + 26 : info.header_offset + 30]
    )
    start = info.header_offset + 30 + name_length + extra_length
    generator = random.Random(6)
    positions = sorted(generator.sample(range(start, start + info.compress_size), 20))
    packages = [flipped(exported, tmp_path, at, generator.randrange(1, 256)) for at in positions]
    for position, line in zip(positions, failures(exported, packages), strict=True):
        assert line.startswith(f"FAIL {REVISIONS}:"), (position, line)


@pytest.mark.parametrize(
    ("field", "offset"),
    [("version needed to extract", 6), ("flags (encrypted)", 8), ("compression method", 10)],
)
def test_a_flipped_byte_in_a_central_directory_header_is_reported_not_a_traceback(
    exported, tmp_path, field, offset
):
    at = central_directory(exported.path.read_bytes())[CARDS]
    mask = 0x01 if field.startswith("flags") else 0x80
    failure(exported, flipped(exported, tmp_path, at + offset, mask))


def test_verify_audit_reports_a_corrupt_member_as_a_failure(exported, tmp_path):
    at = central_directory(exported.path.read_bytes())[CARDS]
    package = flipped(exported, tmp_path, at + 10)  # compression method
    with pytest.raises(CommandError, match=f"FAIL {CARDS}"):
        call_command("verify_audit", str(package))


def test_verify_audit_reports_a_path_that_is_not_there(tmp_path):
    with pytest.raises(CommandError, match="not a readable zip file") as caught:
        call_command("verify_audit", str(tmp_path / "nothing.zip"))
    assert caught.value.returncode == 1
