"""The anchors log and its checkpoint (audit.anchor_log): what an export adds, what it reads.

An export adds a line only for what is new (its package id, the heads that changed), and
reads the signed checkpoint and the lines after it, not the history; the attacks of
tests/audit/test_audit_anchors.py are refused all the same, and a log written before the
checkpoint existed (one full anchor per line) still counts.
"""

from __future__ import annotations

import json

import pytest

from audit.anchor_log import checkpoint_path, state_read
from audit.anchors import anchor_file, anchors_check, signing_key
from audit.export import export_stream
from audit.services import audit_package, audit_record
from cards.models import Claim, VerdictRevision
from cards.services.verdicts import verdict_save
from tests.audit.test_audit_anchors import (
    a_judged_claim,
    as_the_owner,
    chain_name,
    edited_and_resealed,
    execute,
    refused,
)
from tests.audit.test_audit_zip import export, members

# A line that anchors a package id and no head: its fields, the id, the key id, the HMAC.
SHORT_LINE = 400


def log_size() -> int:
    return anchor_file("demo").stat().st_size


def lines() -> list[dict]:
    return [json.loads(line) for line in anchor_file("demo").read_bytes().splitlines()]


def heads_of(package) -> dict[str, str]:
    return json.loads(members(package)["manifest.json"])["chain_heads"]


def a_new_verdict(claim: Claim, author) -> VerdictRevision:
    return verdict_save(
        claim=claim, author=author, support="partial", reason="Read again: a condition missing.",
        seen_claim_seq=1, seen_own_seq=None,
    )  # fmt: skip


@pytest.fixture
def exported(demo_runs, tmp_path):
    out = tmp_path / "first.zip"
    export("--run", "q017-r1", out=out)
    return out


# --- what an export adds ----------------------------------------------------------------------


def test_exporting_the_same_data_again_adds_no_byte(exported, tmp_path):
    size, checkpoint = log_size(), checkpoint_path("demo").read_bytes()
    for number in range(3):
        export("--run", "q017-r1", out=tmp_path / f"again-{number}.zip")
    assert log_size() == size
    assert checkpoint_path("demo").read_bytes() == checkpoint


def test_other_packages_of_unchanged_chains_add_a_short_line_each(exported, tmp_path):
    sizes = [log_size()]
    for option in (["--consensus"], ["--annotator", "seed-protocol"], ["--annotator", "nobody"]):
        export("--run", "q017-r1", *option, out=tmp_path / "other.zip")
        sizes.append(log_size())
    added = [after - before for before, after in zip(sizes, sizes[1:], strict=False)]
    assert all(0 < size <= SHORT_LINE for size in added), added
    assert [line["heads"] for line in lines()[1:]] == [{}, {}, {}]


def test_a_changed_chain_adds_only_its_own_head(exported, reviewer, tmp_path):
    claim = a_judged_claim()
    verdict = a_new_verdict(claim, reviewer)
    export("--run", "q017-r1", out=tmp_path / "second.zip")
    assert lines()[-1]["heads"] == {chain_name(claim): verdict.sha256}


def test_the_first_export_anchors_every_head_of_its_runs(exported):
    (line,) = lines()
    assert line["heads"] == heads_of(exported)
    state = state_read("demo", signing_key())
    assert {chain: [h for h, _ in entries] for chain, entries in state.heads.items()} == {
        chain: [head] for chain, head in heads_of(exported).items()
    }


# --- the checkpoint ---------------------------------------------------------------------------


def test_the_checkpoint_records_where_the_log_ends_and_is_signed(exported):
    checkpoint = json.loads(checkpoint_path("demo").read_bytes())
    assert (checkpoint["lines"], checkpoint["bytes"]) == (1, log_size())
    assert checkpoint["packages"] == [json.loads(members(exported)["anchor.json"])["package_id"]]
    assert {"key_id", "hmac_sha256"} <= set(checkpoint)


def test_an_edited_checkpoint_stops_the_export(exported, tmp_path):
    path = checkpoint_path("demo")
    checkpoint = json.loads(path.read_bytes())
    checkpoint["heads"] = {}
    path.write_text(json.dumps(checkpoint))
    assert refused(tmp_path) == (
        f"export refused: anchor checkpoint {path}: its signature does not match (edited)"
    )


def test_an_older_checkpoint_put_back_is_caught_up_from_the_log(exported, reviewer, tmp_path):
    # The log's lines after it are read: the heads anchored since still count.
    older = checkpoint_path("demo").read_bytes()
    claim = a_judged_claim()
    a_new_verdict(claim, reviewer)
    export("--run", "q017-r1", out=tmp_path / "second.zip")
    checkpoint_path("demo").write_bytes(older)
    with as_the_owner():
        execute("DELETE FROM cards_verdictrevision WHERE claim_id = %s", [claim.pk])
    assert refused(tmp_path).startswith(f"export refused: claim {chain_name(claim)}: revision ")


def test_lines_cut_from_the_end_of_the_log_stop_the_export(exported, tmp_path):
    export("--run", "q017-r2", out=tmp_path / "second.zip")
    path = anchor_file("demo")
    size = log_size()
    first = path.read_bytes().splitlines(keepends=True)[0]
    path.write_bytes(first)
    assert refused(tmp_path) == (
        f"export refused: anchor file {path}: {len(first)} bytes, but its checkpoint records "
        f"{size} (lines were removed, or the file replaced)"
    )


def test_a_log_replaced_by_another_of_the_same_length_stops_the_export(exported, tmp_path):
    path = anchor_file("demo")
    data = path.read_bytes()
    path.write_bytes(data[:10] + (b"X" if data[10:11] != b"X" else b"Y") + data[11:])
    assert refused(tmp_path).startswith(f"export refused: anchor file {path}:1: ")


def test_a_deleted_log_with_its_checkpoint_left_stops_the_export(exported, tmp_path):
    anchor_file("demo").unlink()
    assert refused(tmp_path) == (
        f"export refused: anchor file {anchor_file('demo')} is missing, but its checkpoint "
        f"{checkpoint_path('demo')} is there (the file was deleted)"
    )


def test_without_its_checkpoint_the_log_is_read_whole_and_still_catches(exported, tmp_path):
    checkpoint_path("demo").unlink()
    claim = edited_and_resealed()
    assert refused(tmp_path).startswith(f"export refused: claim {chain_name(claim)}: revision ")


def test_without_its_checkpoint_a_line_edited_in_the_middle_of_the_log_is_found(
    exported, reviewer, tmp_path
):
    a_new_verdict(a_judged_claim(), reviewer)
    export("--run", "q017-r1", out=tmp_path / "second.zip")
    path = anchor_file("demo")
    first, second = path.read_bytes().splitlines(keepends=True)
    edited = json.loads(first)
    edited["package_id"] = "0" * 64
    path.write_bytes(json.dumps(edited).encode() + b"\n" + second)
    checkpoint_path("demo").unlink()
    assert refused(tmp_path) == (
        f"export refused: anchor file {path}:1: its signature does not match (edited)"
    )


def test_without_its_checkpoint_a_line_removed_from_the_log_is_found(exported, reviewer, tmp_path):
    for number in range(2):
        export("--run", f"q017-r{number + 2}", out=tmp_path / f"{number}.zip")
    path = anchor_file("demo")
    first, _, third = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(first + third)
    checkpoint_path("demo").unlink()
    assert refused(tmp_path) == (
        f"export refused: anchor file {path}:2: out of place (a line before it removed or moved)"
    )


def test_a_missing_checkpoint_is_written_again_by_the_next_export(exported, tmp_path):
    checkpoint = checkpoint_path("demo").read_bytes()
    checkpoint_path("demo").unlink()
    export("--run", "q017-r1", out=tmp_path / "again.zip")
    assert checkpoint_path("demo").read_bytes() == checkpoint


# --- a log of full anchors, as exports wrote it before the checkpoint -------------------------


@pytest.fixture
def full_anchors_log(demo_runs, reviewer, tmp_path) -> Claim:
    """Two exports of q017-r1, a claim judged between them, anchored as before: each line the
    package's own anchor.json, every head of the package, and no checkpoint."""
    export("--run", "q017-r1", out=tmp_path / "one.zip")
    claim = a_judged_claim()
    a_new_verdict(claim, reviewer)
    export("--run", "q017-r1", out=tmp_path / "two.zip")
    anchor_file("demo").write_bytes(
        members(tmp_path / "one.zip")["anchor.json"] + members(tmp_path / "two.zip")["anchor.json"]
    )
    checkpoint_path("demo").unlink()
    return claim


def test_a_log_of_full_anchors_keeps_every_head_each_chain_had(full_anchors_log):
    state = state_read("demo", signing_key())
    assert state.lines == 2
    claim = full_anchors_log
    assert len(state.heads[chain_name(claim)]) == 2
    others = [entries for chain, entries in state.heads.items() if chain != chain_name(claim)]
    assert all(len(entries) == 1 for entries in others)


def test_a_log_of_full_anchors_still_catches_its_older_head_deleted_in_a_run_not_exported(
    full_anchors_log, tmp_path
):
    # The exports that wrote those lines never checked that a head they replaced was in
    # the chain they read: each head stays checked on its own until the chain's next export.
    older = heads_of(tmp_path / "one.zip")[chain_name(full_anchors_log)]
    with as_the_owner():
        for table in ("cards_claimrevision", "cards_verdictrevision"):
            execute(f"DELETE FROM {table} WHERE sha256 = %s", [older])
    assert refused(tmp_path, "--run", "q017-r2").startswith(
        f"export refused: claim {chain_name(full_anchors_log)}: revision {older[:12]}"
    )


def test_the_next_export_of_a_full_anchors_log_adds_a_line_and_a_checkpoint(
    full_anchors_log, tmp_path
):
    export("--run", "q017-r1", out=tmp_path / "three.zip")
    assert lines()[-1]["line"] == 3
    state = state_read("demo", signing_key())
    assert state.from_checkpoint
    # The chain met both its heads as it was read again: the newest is kept alone.
    assert [head for head, _ in state.heads[chain_name(full_anchors_log)]] == [
        heads_of(tmp_path / "three.zip")[chain_name(full_anchors_log)]
    ]


# --- two exports that cross -------------------------------------------------------------------


def test_two_exports_that_cross_keep_both_heads_until_the_chain_is_read_again(
    exported, reviewer, tmp_path
):
    # The first checks and reads its chains, a verdict arrives, the second exports the new
    # head and anchors it, then the first anchors its own, older head: it never met the
    # second's, so both stay until an export meets both in the chain.
    claim = a_judged_claim()
    first = audit_package(slug="demo", run_ids=["q017-r1"], source="consensus")
    anchors_check(package=first)
    first.anchors_checked = True
    for _ in export_stream(first):
        pass
    verdict = a_new_verdict(claim, reviewer)
    export("--run", "q017-r1", out=tmp_path / "second.zip")
    audit_record(package=first, user=None)
    state = state_read("demo", signing_key())
    older = first.chain_heads[chain_name(claim)]
    assert sorted(head for head, _ in state.heads[chain_name(claim)]) == sorted(
        [older, verdict.sha256]
    )
    export("--run", "q017-r1", "--annotator", "seed-protocol", out=tmp_path / "third.zip")
    state = state_read("demo", signing_key())
    assert [head for head, _ in state.heads[chain_name(claim)]] == [verdict.sha256]
