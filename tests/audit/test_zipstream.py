"""audit.zipstream: every member's ZipInfo is fixed here, whatever the OS or the member's size."""

from __future__ import annotations

import sys
import zipfile

import audit.zipstream
from audit.verify import verify
from tests.audit.test_audit_zip import export

UNIX = 3


def test_every_member_says_it_was_made_on_unix_even_when_exported_on_windows(
    demo_runs, tmp_path, monkeypatch
):
    # zipfile.ZipInfo picks create_system from sys.platform: the same data exported on
    # Windows would otherwise give other bytes and another package id.
    monkeypatch.setattr(sys, "platform", "win32")
    out = tmp_path / "package.zip"
    export(out=out)
    monkeypatch.undo()
    with zipfile.ZipFile(out) as archive:
        infos = archive.infolist()
    assert infos
    assert {(info.filename, info.create_system) for info in infos} == {
        (info.filename, UNIX) for info in infos
    }


def test_the_compression_level_is_applied_to_the_members(demo_runs, tmp_path, monkeypatch):
    sizes = {}
    for level in (1, 9):
        monkeypatch.setattr(audit.zipstream, "COMPRESS_LEVEL", level)
        out = tmp_path / f"level-{level}.zip"
        export(out=out)
        with zipfile.ZipFile(out) as archive:
            sizes[level] = sum(info.compress_size for info in archive.infolist())
    assert sizes[1] > sizes[9]


def test_a_member_over_the_zip32_limit_is_written_as_zip64_and_verifies(
    demo_runs, tmp_path, monkeypatch
):
    # The 4 GiB limit lowered to 1 KiB stands for a member over 4 GiB: without zip64 from
    # the start, a member whose size is unknown when it is opened fails when it is closed.
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 1024)
    out = tmp_path / "package.zip"
    export(out=out)
    monkeypatch.undo()
    with zipfile.ZipFile(out) as archive:
        sizes = {info.filename: info.file_size for info in archive.infolist()}
    assert sizes["cards/revisions.jsonl"] > 1024
    assert verify(str(out))["files"] == len(sizes) - 1
