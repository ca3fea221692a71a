"""The verifier trusts nothing it reads: zip bombs, huge manifests, zip-slip names, formulas.

Each attack is a package built the way an attacker would, usually with a resealed
manifest so that nothing but the new bound stands in the way. verify.py runs in the
auditor's system python with its address space capped (RLIMIT_AS), so an attack that
would read gigabytes ends in MemoryError, not a swapping machine, and under a
generous timeout, so one that would take minutes ends the test instead of the suite;
either way the test then fails on the line it expected. No test times anything.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import struct
import subprocess
import sys
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest

import audit.verify
from evidence.canonical import canonical_json
from tests.audit import test_audit_verify
from tests.audit.test_audit_export import layout
from tests.audit.test_audit_verify import PASSAGES, failure_line, tampered
from tests.audit.test_audit_zip import (
    address_space,
    manifest,
    refit_manifest,
    rows,
    run_verify_each,
    sha256,
)
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db
# The package of test_audit_verify, exported once more for this module.
exported = test_audit_verify.exported

GiB = 1024**3
# verify.py needs about 30 MB; what it reads is bounded far below this cap.
MEMORY = 512 * 1024**2
BOMB_MEMBER = PASSAGES
CSV = "cards/cards.csv"


def failures_bounded(exported, packages: list[Path], timeout: float = 120) -> list[str]:
    """Each package's one FAIL line, verified in one python that may map at most MEMORY."""
    done = run_verify_each(exported.verifier, packages, memory=MEMORY, timeout=timeout)
    return [failure_line(each) for each in done]


def sealed(document: dict) -> bytes:
    """manifest.json for this document, `manifest_sha256` recomputed: a forger's manifest."""
    body = {k: v for k, v in document.items() if k != "manifest_sha256"}
    return canonical_json({**body, "manifest_sha256": sha256(canonical_json(body))}) + b"\n"


def with_entry(files: dict[str, bytes], name: str, data: bytes) -> dict[str, bytes]:
    """The package with one more file, listed in a resealed manifest as the exporter would."""
    files = {**files, name: data}
    document = manifest(files)
    document["files"].append({"path": name, "bytes": len(data), "sha256": sha256(data)})
    files["manifest.json"] = sealed(document)
    return files


# --- zip bombs ----------------------------------------------------------------------------------


def zeros_deflated(size: int) -> bytes:
    """Raw deflate of `size` zero bytes (a multiple of 1 MiB), about 1,000 times smaller.

    After a full flush deflate starts afresh, so each MiB compresses to the same bytes:
    10 MB of bomb is made by repetition in a fraction of a second, not by deflating 10 GiB.
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = compressor.compress(bytes(1 << 20)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return block * (size >> 20) + compressor.flush()


def bombed(files: dict[str, bytes], name: str, declared: int, crc: int) -> bytes:
    """A zip of `files` whose member `name` holds deflated zeros claiming `declared` bytes.

    The member is written stored, then its central directory record (the one readers
    believe) is made to say deflate, `declared` bytes and `crc` before the zip is closed.
    """
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in files.items():
            if member != name:
                archive.writestr(member, data)
                continue
            info = zipfile.ZipInfo(member, date_time=(1980, 1, 1, 0, 0, 0))
            archive.writestr(info, zeros_deflated(10 * GiB), zipfile.ZIP_STORED)
            info.compress_type, info.file_size, info.CRC = zipfile.ZIP_DEFLATED, declared, crc
    return out.getvalue()


@pytest.fixture(scope="module")
def bombs(exported, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bombs")
    honest = {**exported.files}
    document = manifest(honest)
    for entry in document["files"]:
        if entry["path"] == BOMB_MEMBER:
            entry["bytes"], entry["sha256"] = 10 * GiB, "0" * 64
    consistent = {**honest, "manifest.json": sealed(document)}
    real = exported.files[BOMB_MEMBER]
    packages = {
        # The manifest says 10 GiB too: only the compression ratio gives it away.
        "consistent": bombed(consistent, BOMB_MEMBER, 10 * GiB, 0),
        # The zip's header says 10 GiB, the manifest the real size.
        "header lies": bombed(honest, BOMB_MEMBER, 10 * GiB, 0),
        # The header and the manifest say the real size; the data inflates to 10 GiB.
        "data lies": bombed(honest, BOMB_MEMBER, len(real), zlib.crc32(real)),
    }
    paths = {}
    for label, data in packages.items():
        paths[label] = folder / f"{label.replace(' ', '-')}.zip"
        paths[label].write_bytes(data)
    return paths


def test_a_10_mb_zip_declaring_10_gib_is_refused_before_a_byte_is_inflated(exported, bombs):
    package = bombs["consistent"]
    assert package.stat().st_size < 11 * 1024**2
    with zipfile.ZipFile(package) as archive:
        compressed = archive.getinfo(BOMB_MEMBER).compress_size
    assert failures_bounded(exported, [package]) == [
        f"FAIL {BOMB_MEMBER}: size: {10 * GiB} bytes from {compressed} compressed: "
        "over 400 times, a zip bomb"
    ]


def test_a_zip_header_declaring_another_size_than_the_manifest_fails_before_reading(
    exported, bombs
):
    assert failures_bounded(exported, [bombs["header lies"]]) == [
        f"FAIL {BOMB_MEMBER}: size: {10 * GiB} bytes, "
        f"the manifest says {len(exported.files[BOMB_MEMBER])}"
    ]


def test_data_inflating_past_its_declared_size_is_cut_there_and_fails(exported, bombs):
    (line,) = failures_bounded(exported, [bombs["data lies"]])
    assert line.startswith(f"FAIL {BOMB_MEMBER}: cannot be read (damaged): BadZipFile: Bad CRC")


def test_verify_audit_refuses_the_zip_bomb_too(bombs):
    done = subprocess.run(
        [sys.executable, "manage.py", "verify_audit", str(bombs["consistent"])],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: address_space(2 * GiB),  # Django and its imports need more room
    )  # fmt: skip
    assert done.returncode == 1, done
    assert done.stderr.startswith(f"CommandError: FAIL {BOMB_MEMBER}: size: {10 * GiB} bytes")


# --- huge manifests and zips of many entries ----------------------------------------------------


def million_entry_manifest(files: dict[str, bytes]) -> bytes:
    """A canonical, sealed manifest listing a million files: 110 MB, written without a dict."""
    document = manifest(files)
    empty = sha256(b"")
    entries = (
        f'{{"bytes":0,"path":"runs/{i:07}/run.json","sha256":"{empty}"}}' for i in range(10**6)
    )
    listing = ",".join(entries).encode()
    body = {k: v for k, v in document.items() if k not in ("files", "manifest_sha256")}
    head, tail = canonical_json({**body, "files": ["@"]}).split(b'"@"')
    digest = hashlib.sha256(head + listing + tail).hexdigest()
    head, tail = canonical_json({**body, "files": ["@"], "manifest_sha256": digest}).split(b'"@"')
    return head + listing + tail + b"\n"


def test_a_manifest_of_a_million_entries_is_refused_on_its_size_before_it_is_read(
    exported, tmp_path
):
    files = {**exported.files, "manifest.json": million_entry_manifest(exported.files)}
    size = len(files["manifest.json"])
    assert size > 100 * 1024**2
    package = tmp_path / "million.zip"
    with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    del files
    assert failures_bounded(exported, [package]) == [
        f"FAIL manifest.json: too large: {size} bytes, the verifier reads at most 67108864"
    ]


def test_a_manifest_listing_more_files_than_a_package_holds_is_refused(exported, tmp_path):
    document = manifest(exported.files)
    empty = sha256(b"")
    document["files"] += [
        {"path": f"runs/{i:05}/run.json", "bytes": 0, "sha256": empty} for i in range(10_001)
    ]
    files = {**exported.files, "manifest.json": sealed(document)}
    assert failures_bounded(exported, [tampered(tmp_path, files)]) == [
        "FAIL manifest.json: files: not a list of at most 10000 entries"
    ]


@pytest.fixture(scope="module")
def crowded(exported, tmp_path_factory) -> Path:
    """The package with 100,000 empty files added: 11 MB, a central directory of 6.5 MB."""
    package = tmp_path_factory.mktemp("crowded") / "crowded.zip"
    with zipfile.ZipFile(package, "w") as archive:
        for number in range(100_000):
            archive.writestr(f"runs/r/{number}.json", b"")
        for name, data in exported.files.items():
            archive.writestr(name, data)
    return package


def test_a_zip_of_100_000_entries_is_refused_before_its_directory_is_read(exported, crowded):
    # The check for repeated names was a list.count per name: 20,000 names took seconds,
    # 100,000 never finished. The timeout is generous; it ends the test, not the suite.
    entries = 100_000 + len(exported.files)
    assert failures_bounded(exported, [crowded], timeout=60) == [
        f"FAIL {crowded}: too many entries: {entries}, a package holds 10000"
    ]


def test_a_zip_whose_end_record_understates_its_entries_is_refused_on_the_directory_size(
    exported, crowded, tmp_path
):
    # zipfile reads the central directory by its size, not by the count the end record
    # gives: a count of 5 does not make 100,000 records fewer.
    data = bytearray(crowded.read_bytes())
    end = data.rindex(b"PK\x05\x06")
    data[end + 8 : end + 12] = struct.pack("<HH", 5, 5)
    end64 = data.rindex(b"PK\x06\x06")
    data[end64 + 24 : end64 + 40] = struct.pack("<QQ", 5, 5)  # over 65,535: zip64 counts too
    package = tmp_path / "understated.zip"
    package.write_bytes(data)
    size = struct.unpack("<Q", data[end64 + 40 : end64 + 48])[0]
    assert size > 4 * 1024**2
    assert failures_bounded(exported, [package]) == [
        f"FAIL {package}: central directory too large: {size} bytes, "
        f"a package's is at most {4 * 1024**2}"
    ]


# --- names --------------------------------------------------------------------------------------

REFUSED = "unsafe name (absolute, `.`, `..` or empty part, backslash or control character)"
UNSAFE = [
    "../evil.txt",
    "runs/q017-r1/../../../evil.txt",
    "/etc/cron.d/evil",
    "runs\\..\\..\\evil.txt",
    "C:/evil.txt",
    "runs//run.json",
    "cards/./cards.jsonl",
    "cards/new\nline.jsonl",
]
OUTSIDE = [
    "notes/extra.txt",
    "runs/q017-r1/evil.sh",
    "runs/unknown-run/run.json",
    "metrics/unknown-run.json",
    "replay/q017-r2__q017-r1.json",
    "cards/",  # a folder entry: the exporter writes none
]


def test_names_that_escape_the_folder_are_refused_even_when_the_manifest_lists_them(
    exported, tmp_path
):
    packages = [
        tampered(tmp_path, with_entry(exported.files, name, b"x\n"), f"slip-{number}.zip")
        for number, name in enumerate(UNSAFE)
    ]
    shown = [name.replace("\n", "\\n") for name in UNSAFE]
    assert failures_bounded(exported, packages) == [f"FAIL {name}: {REFUSED}" for name in shown]


def test_names_outside_the_package_layout_are_refused_even_when_the_manifest_lists_them(
    exported, tmp_path
):
    packages = [
        tampered(tmp_path, with_entry(exported.files, name, b"x\n"), f"outside-{number}.zip")
        for number, name in enumerate(OUTSIDE)
    ]
    assert failures_bounded(exported, packages) == [
        f"FAIL {name}: not a file of the package layout" for name in OUTSIDE
    ]


def test_an_unsafe_name_the_manifest_lists_but_the_zip_lacks_is_named_as_unsafe(
    exported, tmp_path
):
    files = {**exported.files}
    document = manifest(files)
    document["files"].append({"path": "../evil.txt", "bytes": 2, "sha256": sha256(b"x\n")})
    files["manifest.json"] = sealed(document)
    assert failures_bounded(exported, [tampered(tmp_path, files)]) == [
        f"FAIL ../evil.txt: {REFUSED}"
    ]


def test_a_run_id_that_climbs_out_of_runs_is_refused(exported, tmp_path):
    files = {**exported.files}
    document = manifest(files)
    document["runs"] = [*document["runs"], ".."]
    files["manifest.json"] = sealed(document)
    assert failures_bounded(exported, [tampered(tmp_path, files)]) == [
        "FAIL manifest.json: run id: '..' cannot name a folder of the package"
    ]


# --- long lines ---------------------------------------------------------------------------------


def test_a_jsonl_line_over_the_bound_fails_without_being_read_whole(
    exported, tmp_path, monkeypatch
):
    # The bound is 16 MiB; here the same code with a 4 KiB bound meets an 8 MiB line, in
    # process. Hashing reads 256 KiB at a time, so the peak stays far below the line.
    monkeypatch.setattr(audit.verify, "MAX_LINE_BYTES", 4096)
    passages = rows(exported.files[PASSAGES])
    passages[1]["text"] = os.urandom(4 * 1024**2).hex()  # random: no zip bomb
    passages[1]["sha256"] = sha256(passages[1]["text"].encode())
    files = {**exported.files, PASSAGES: b"".join(canonical_json(p) + b"\n" for p in passages)}
    refit_manifest(files)
    package = tampered(tmp_path, files)
    del files, passages
    tracemalloc.start()
    try:
        with pytest.raises(audit.verify.Failure) as caught:
            audit.verify.verify(str(package))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(caught.value) == f"{PASSAGES}:2: line too long: over 4096 bytes"
    assert peak < 4 * 1024**2


# --- spreadsheet formulas -----------------------------------------------------------------------


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_a_csv_cell_a_spreadsheet_would_run_fails_verification(exported, tmp_path, start):
    table = list(csv.reader(io.StringIO(exported.files[CSV].decode("utf-8"), newline="")))
    number = next(i for i, row in enumerate(table) if i and not any("\n" in c for c in row))
    table[number][table[0].index("reason")] = f'{start}HYPERLINK("https://evil.example/")'
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\n").writerows(table)
    files = {**exported.files, CSV: out.getvalue().encode("utf-8")}
    refit_manifest(files)
    line = 1 + number + sum(c.count("\n") for row in table[:number] for c in row)
    assert failures_bounded(exported, [tampered(tmp_path, files)]) == [
        f"FAIL {CSV}:{line}: cell a spreadsheet would run as a formula: column reason"
    ]


def test_the_package_verifies_within_the_memory_cap(exported):
    done = run_verify_each(exported.verifier, [exported.path], memory=MEMORY)
    assert done[0].stdout.startswith("OK "), done[0]


def test_the_verifiers_layout_is_the_one_the_exporter_promises():
    # verify.py cannot import the application: its copy of the layout is held to the spec's.
    runs, compare = ["q017-r1", "q017-r2", "a:b.c_d-1"], ["q017-r1", "q017-r2"]
    document = {"runs": runs, "compare": compare}
    unlisted = set(audit.verify.UNLISTED)  # manifest.json, anchor.json
    assert audit.verify.layout(document) | unlisted == layout(runs, tuple(compare))
    assert audit.verify.layout({"runs": runs, "compare": None}) | unlisted == layout(runs)
