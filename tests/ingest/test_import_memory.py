"""The import's memory does not grow with the bundle.

What later lines may refer to (refs, cases, answered cases) lives in temporary
tables of the import's connection (`ingest.seen`), and each batch is let go
once stored: while a bundle of four times the cases is read, no more memory is
live than for the small one.
"""

from __future__ import annotations

import gc
import tracemalloc

from ingest.bulk import RowWriter
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def live_while_reading(cases: int) -> int:
    """The most memory Python held live during an import of `cases` cases, in bytes.

    Sampled at each progress report (every 500 lines), after a full collection, so
    garbage waiting for the collector does not count.
    """
    # 10 lines a case (8 passages), a batch of 25 cases: 250 lines, so each report
    # (every 500 lines) finds a batch one line short of full, whatever the size.
    data = bundle_bytes(*synthetic_bundle(run_id=f"r{cases}", cases=cases, passages=8))
    samples: list[int] = []

    def progress(bytes_read: int, lines: int, stored: int) -> None:
        gc.collect()
        samples.append(tracemalloc.get_traced_memory()[0])

    tracemalloc.start()
    try:
        summary = import_bytes(data, project=f"p{cases}", create_project=True, progress=progress)
    finally:
        tracemalloc.stop()
    assert summary.responses == cases
    return max(samples)


def test_a_bundle_of_four_times_the_cases_holds_no_more_memory_while_read(db, monkeypatch):
    monkeypatch.setattr("ingest.services.FLUSH_EVERY_RESPONSES", 25)
    # On PostgreSQL a batch is stored while the next is read (RowWriter.send), and one in
    # flight at a sample counts beside it (some 400 KB here): the larger import, with four
    # times the samples, caught it more often, and the test failed in full runs. It is one
    # batch by construction (`send` holds only what it sends); here each is stored before
    # reading goes on, so that growth with the bundle shows alone.
    send = RowWriter.send

    def send_and_wait(self: RowWriter) -> None:
        send(self)
        self.wait()

    monkeypatch.setattr(RowWriter, "send", send_and_wait)
    small, large = live_while_reading(100), live_while_reading(400)
    # In Python dicts, the refs and cases of the 300 more cases held about 1 MB more.
    assert large - small < 250_000, (small, large)
