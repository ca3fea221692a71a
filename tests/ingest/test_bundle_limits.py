"""An import costs at most a small multiple of what it stores: each size limit is refused
as `line N: … (SETTING)`, nothing is stored, and memory stays bounded.

The bombs are built here, small on disk; bench/bombs.py measures their time and peak RSS.
"""

from __future__ import annotations

import gzip
import json
import tracemalloc

from evidence.canonical import text_sha256
from ingest import bundle
from ingest.services import _Importer
from tests.conftest import FIXTURES, bundle_bytes, import_bytes
from tests.ingest.test_bundle_import_errors import FIXTURE, good, refused, with_line_5

BLANK_MEMBER = gzip.compress(b"\n" * (1 << 20), compresslevel=9, mtime=0)


def blank_bomb(mebibytes: int) -> bytes:
    """The fixture, then `mebibytes` MiB of blank lines: gzip members, each 1 MiB inflated.

    A gzip file may hold members one after another; repeating one compressed member
    builds a 2.5 GB bomb in no time.
    """
    head = gzip.compress((FIXTURES / FIXTURE).read_bytes(), mtime=0)
    return head + BLANK_MEMBER * mebibytes


def test_a_real_size_gzip_bomb_of_blank_lines_stops_at_the_line_limit(project, settings):
    # Without a limit this bomb held a worker for some 25 minutes. The default limit
    # (5,000,000 lines) stops it after 5 MB inflated; a lower one keeps the test short.
    settings.BUNDLE_MAX_LINES = 100_000
    bomb = blank_bomb(2400)  # 2.5 GB of blank lines in 2.5 MB
    assert len(bomb) < 3_000_000
    assert refused(bomb).lines() == [
        "line 100001: the bundle has more than 100,000 lines, blank lines included "
        "(BUNDLE_MAX_LINES)"
    ]


def test_blank_lines_count_towards_the_line_limit(project, settings):
    settings.BUNDLE_MAX_LINES = 10
    data = bundle_bytes(*good()) + b"\n" * 6  # five lines, six blank ones after them
    assert [str(p) for p in refused(data).problems] == [
        "line 11: the bundle has more than 10 lines, blank lines included (BUNDLE_MAX_LINES)"
    ]


def test_a_bundle_at_the_line_limit_is_imported(project, settings):
    settings.BUNDLE_MAX_LINES = 5
    assert import_bytes(bundle_bytes(*good())).responses == 1


def test_a_bundle_larger_than_the_inflated_limit_is_refused_on_the_line_that_passes_it(
    project, settings
):
    data = (FIXTURES / FIXTURE).read_bytes()
    settings.BUNDLE_MAX_INFLATED_BYTES = len(data) - 1
    error = refused(gzip.compress(data, mtime=0))
    assert error.lines() == [
        f"line 5: the bundle is larger than {len(data) - 1:,} bytes uncompressed "
        "(BUNDLE_MAX_INFLATED_BYTES)"
    ]


def test_an_over_long_line_without_end_counts_towards_the_inflated_limit(project, settings):
    settings.BUNDLE_MAX_LINE_BYTES = 1000
    settings.BUNDLE_MAX_INFLATED_BYTES = 100_000
    data = bundle_bytes(*good()[:4]) + b" " * 1_000_000
    assert [str(p) for p in refused(data).problems] == [
        "line 5: the bundle is larger than 100,000 bytes uncompressed (BUNDLE_MAX_INFLATED_BYTES)"
    ]


def test_a_bundle_exactly_at_the_inflated_limit_is_imported(project, settings):
    data = (FIXTURES / FIXTURE).read_bytes()
    settings.BUNDLE_MAX_INFLATED_BYTES = len(data)
    assert import_bytes(data).responses == 1


def test_a_trace_over_the_limit_is_refused_with_its_stored_size(project, settings):
    settings.BUNDLE_MAX_VERBATIM_BYTES = 100
    trace = {"log": "é" * 60}  # 120 bytes of UTF-8, 360 as \\u escapes in the line
    response = good()[4] | {"trace": trace}
    error = refused(with_line_5(json.dumps(response)))
    stored = len(json.dumps(trace, ensure_ascii=False, separators=(",", ":")).encode())
    assert error.lines() == [
        f"line 5: /trace: is {stored} bytes as stored; an object kept verbatim may hold at "
        "most 100 (BUNDLE_MAX_VERBATIM_BYTES)"
    ]


def test_the_runs_system_and_retrieval_filters_are_kept_verbatim_within_the_limit(
    project, settings
):
    settings.BUNDLE_MAX_VERBATIM_BYTES = 30
    lines = good()
    lines[0]["system"]["notes"] = "x" * 30
    lines[4]["retrieved"][1]["filters"] = {"section": "y" * 30}
    error = refused(bundle_bytes(*lines))
    assert [(p.line, p.path) for p in error.problems] == [
        (1, "/system"),
        (5, "/retrieved/1/filters"),
    ]
    assert error.problems[1].message == (
        "is 44 bytes as stored; an object kept verbatim may hold at most 30 "
        "(BUNDLE_MAX_VERBATIM_BYTES)"
    )


def test_a_trace_at_the_limit_is_imported(project, settings):
    trace = {"log": "x" * 50}
    settings.BUNDLE_MAX_VERBATIM_BYTES = len(json.dumps(trace, separators=(",", ":")))
    response = good()[4] | {"trace": trace}
    assert import_bytes(with_line_5(json.dumps(response))).responses == 1


def test_a_passage_over_the_limit_is_refused(project, settings):
    settings.BUNDLE_MAX_PASSAGE_CHARS = 50
    error = refused(bundle_bytes(*good()))
    # The later lines also name the refs of these passages as undeclared.
    assert error.lines()[:2] == [
        "line 2: /text: is 128 characters; a passage may hold at most 50 "
        "(BUNDLE_MAX_PASSAGE_CHARS)",
        "line 3: /text: is 70 characters; a passage may hold at most 50 "
        "(BUNDLE_MAX_PASSAGE_CHARS)",
    ]


def big_passages(count: int, size: int) -> bytes:
    lines: list[dict] = [good()[0]]
    for i in range(count):
        text = f"{i:04d} " + "x" * (size - 5)
        lines.append(
            {
                "kind": "passage", "ref": f"D-{i}@v1#p1", "doc_id": f"D-{i}", "version": "v1",
                "chunk_id": "p1", "text": text, "sha256": text_sha256(text),
            }
        )  # fmt: skip
    return bundle_bytes(*lines)


def test_batches_are_flushed_by_their_bytes_not_only_by_their_rows(project, monkeypatch):
    # 20 passages of 10 KB: far below 10,000 rows, but 200 KB waiting at once.
    monkeypatch.setattr("ingest.services.FLUSH_EVERY_BYTES", 50_000)
    flushed: list[int] = []
    flush = _Importer.flush

    def counting_flush(self: _Importer, *, last: bool = False) -> None:
        flushed.append(self.pending_bytes)
        flush(self, last=last)

    monkeypatch.setattr(_Importer, "flush", counting_flush)
    summary = import_bytes(big_passages(20, 10_000))
    assert summary.passages_new == 20
    # Four batches of five passages (~51 KB each), then the final flush finds none left.
    assert len(flushed) == 5
    assert max(flushed) < 60_000


def test_the_default_limits_take_a_response_with_a_200000_character_answer(project):
    # The limits are for bombs: an honest large response, its trace holding a long
    # prompt, is imported with the defaults.
    response = good()[4]
    shift = 200_000 - len(response["text"])  # the schema's longest answer
    response["text"] = "€" * shift + response["text"]
    for citation in response.get("citations", ()):
        if "start" in citation:
            citation["start"] += shift
            citation["end"] += shift
    for claim in response["claims"]:
        claim["spans"] = [[a + shift, b + shift] for a, b in claim.get("spans", ())]
    response["trace"] = {"prompt": "€" * 500_000}
    assert import_bytes(with_line_5(json.dumps(response, ensure_ascii=False))).responses == 1


def test_the_checks_of_a_parsed_line_hold_memory_per_level_not_per_value():
    # 8 MiB of `{},{},…` unpacks into ~190 MB of objects; a walk that stacked every child
    # (depth, NUL and surrogate checks) held as much again: 445 MB at peak for one line.
    value = {"trace": {"t": [{} for _ in range(200_000)] + ["\x00"]}}
    tracemalloc.start()
    try:
        assert bundle._depth(value) == 4
        assert bundle._unstorable_string(value, "") == (
            "/trace/t/200000",
            "contains a NUL character (\\u0000), which cannot be stored",
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000  # one stacked entry per child would be several MB
