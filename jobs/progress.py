"""A running job's live counters and heartbeat: a small file beside its upload.

Not a row: on SQLite an import's one transaction holds the database's only write lock
from its first line to its last, so nothing else could update a row of the job until
it is over. The web and the worker already share JOBS_DIR for the upload and the
package, so the counters travel the same way on either database. The file's
modification time is the heartbeat; a job whose heartbeat stopped (its worker was
killed) is swept to failed (`jobs.services.jobs_sweep`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType

from django.conf import settings


def jobs_dir() -> Path:
    folder = Path(settings.JOBS_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def upload_path(code: str) -> Path:
    return jobs_dir() / f"{code}.upload"


def package_path(code: str) -> Path:
    return jobs_dir() / f"{code}.zip"


def progress_path(code: str) -> Path:
    return jobs_dir() / f"{code}.progress"


@dataclass
class Counts:
    bytes_read: int = 0
    lines_read: int = 0
    cases_stored: int = 0


def read_progress(code: str) -> tuple[Counts, float] | None:
    """The counters a worker last wrote and when (seconds since the epoch); None if none."""
    path = progress_path(code)
    try:
        beat = path.stat().st_mtime
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return Counts(**data), beat


class Heartbeat:
    """Writes the counters every JOB_HEARTBEAT_SECONDS from a thread, and at most once a
    second as they change: the page polls once a second, and a long batch (a flush of
    thousands of rows) must not look like a dead worker."""

    def __init__(self, code: str):
        self.path = progress_path(code)
        self.counts = Counts()
        self.written = 0.0
        self.stopped = threading.Event()
        self.lock = threading.Lock()  # the worker's thread and the heartbeat's both write
        self.thread = threading.Thread(target=self.beat, name=f"heartbeat-{code}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self.write()
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stopped.set()
        self.thread.join()
        self.path.unlink(missing_ok=True)

    def import_progress(self, bytes_read: int, lines_read: int, stored: int) -> None:
        """`ingest.services.Progress`: called every 500 lines of the bundle."""
        self.counts = Counts(bytes_read, lines_read, stored)
        if time.monotonic() - self.written >= 1:
            self.write()

    def wrote(self, n: int) -> None:
        """An export's bytes, as they reach the package file."""
        self.counts.bytes_read += n
        if time.monotonic() - self.written >= 1:
            self.write()

    def beat(self) -> None:
        while not self.stopped.wait(settings.JOB_HEARTBEAT_SECONDS):
            self.write()

    def write(self) -> None:
        # Beside and renamed: a reader never sees half a file.
        with self.lock:
            partial = self.path.with_suffix(".progress-partial")
            partial.write_text(json.dumps(asdict(self.counts)))
            os.replace(partial, self.path)
            self.written = time.monotonic()
