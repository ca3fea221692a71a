"""Hostile bundles against `manage.py import_bundle`: wall time, peak RSS and the answer of each.

    .venv/bin/python bench/bombs.py                 # every bomb, 300 s each at most
    .venv/bin/python bench/bombs.py --only trace --timeout 60

A benchmark, not a test: tests/ingest/test_bundle_limits.py checks that each bomb is
refused; this script measures what refusing it costs. Each import runs in its own
process under `/usr/bin/time -v` (its "Maximum resident set size" is the peak RSS of
that process alone: it is exec'd fresh, so no parent's memory is counted) and is
killed after `--timeout` seconds, in a scratch SQLite database migrated once.

The bombs (each small on disk):

- `blank`: a run line, then 2.5 GB of blank lines, gzip (2.4 MB): nothing to store.
- `trace`: 50 responses whose `trace` holds 15 MB of text, gzip (~750 KB); `trace2`
  300 responses with traces of 2 MB, just under the limit, that are stored.
- `passages`: 4,000 passages of 200,000 characters, gzip (~800 KB): 800 MB of text.
- `containers`: one response whose trace is 5 million empty objects, a 15 MB line:
  the most Python memory a line of that size can unpack into; `containers8` the same
  just under the 8 MiB line limit, `system8` as the run line's free-form `system`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from harness import PYTHON, ROOT, log

RUN = {
    "kind": "run",
    "schema": "evidence-bundle/1",
    "run_id": "bomb",
    "created_at": "2026-11-30T00:00:00Z",
    "collection_snapshot": "bomb-kb",
    "system": {},
}
PASSAGE_TEXT = "The limit applies to every line. " * 6060  # ~200,000 characters


def line(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def blank() -> Iterator[bytes]:
    yield line(RUN)
    block = b"\n" * (1 << 20)
    for _ in range(2400):
        yield block


def passage(i: int) -> dict:
    return {
        "kind": "passage",
        "ref": f"D-{i}@v1#p1",
        "doc_id": f"D-{i}",
        "version": "v1",
        "chunk_id": "p1",
        "text": PASSAGE_TEXT[: 200_000 - 10] + f" {i:09d}",
    }


def trace(size: int = 15_000_000, count: int = 50) -> Iterator[bytes]:
    yield line(RUN)
    yield line(passage(0) | {"text": "a passage"})
    log_text = "x" * size
    for i in range(count):
        yield line({"kind": "case", "case_id": f"C-{i}", "query": "q"})
        yield line(
            {
                "kind": "response",
                "case_id": f"C-{i}",
                "text": "an answer",
                "retrieved": [{"ref": "D-0@v1#p1", "rank": 1}],
                "trace": {"log": log_text},
            }
        )


def passages() -> Iterator[bytes]:
    yield line(RUN)
    for i in range(4000):
        yield line(passage(i))


def containers(count: int = 5_000_000) -> Iterator[bytes]:
    yield line(RUN)
    yield line(passage(0) | {"text": "a passage"})
    yield line({"kind": "case", "case_id": "C-0", "query": "q"})
    head = b'{"kind":"response","case_id":"C-0","text":"an answer",'
    head += b'"retrieved":[{"ref":"D-0@v1#p1","rank":1}],"trace":{"t":['
    yield head + b"{}," * count + b"{}]}}\n"


def system() -> Iterator[bytes]:
    # Under the 8 MiB line limit: the run's `system` object is stored verbatim, unlimited.
    run = json.dumps(RUN | {"system": {"t": "T"}}, separators=(",", ":")).encode()
    yield run.replace(b'"T"', b"[" + b"{}," * 2_700_000 + b"{}]") + b"\n"


BOMBS: dict[str, Callable[[], Iterator[bytes]]] = {
    "blank": blank,
    "trace": trace,
    # Traces just under the 2 MiB trace limit: stored, so only the flush by bytes bounds them.
    "trace2": lambda: trace(2_000_000, 300),
    "passages": passages,
    "containers": containers,
    # The same at just under the 8 MiB line limit: the most a line may unpack into.
    "containers8": lambda: containers(2_700_000),
    "system8": system,
}


def write(path: Path, chunks: Iterator[bytes]) -> int:
    # Level 9 on long runs of one byte: the gzip is about 1,000 times smaller.
    with gzip.open(path, "wb", compresslevel=9) as out:
        for chunk in chunks:
            out.write(chunk)
    return path.stat().st_size


def measure(path: Path, database: Path, timeout: int, checkout: Path) -> dict:
    env = os.environ | {"DATABASE_URL": f"sqlite:///{database}", "DEBUG": "1"}
    env.pop("PYTHONPATH", None)
    command = [
        # TERM, so that `timeout` outlives the import and reports its peak to `time`.
        "/usr/bin/time", "-v", "timeout", "-k", "10", str(timeout),
        PYTHON, "manage.py", "import_bundle", str(path), "--project", "bombs",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)  # noqa: S603
    wall = time.monotonic() - started
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    answer = [
        text
        for text in done.stderr.splitlines()
        if text and not text.startswith(("\t", "Command exited"))
    ]
    return {
        "seconds": round(wall, 1),
        "peak_rss_mb": round(int(peak.group(1)) / 1024) if peak else None,
        "killed": done.returncode in (124, 137) or wall >= timeout,
        "exit": done.returncode,
        "answer": (answer[0] if answer else done.stdout.strip())[:200],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(BOMBS), action="append")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument(
        "--checkout", type=Path, default=ROOT, help="the code to measure (another clone: before)"
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bombs-"))
    try:
        template = scratch / "template.sqlite3"
        env = os.environ | {"DATABASE_URL": f"sqlite:///{template}", "DEBUG": "1"}
        subprocess.run(  # noqa: S603
            [PYTHON, "manage.py", "migrate", "-v", "0"], cwd=args.checkout, env=env, check=True
        )
        for name in args.only or BOMBS:
            path = scratch / f"{name}.jsonl.gz"
            size = write(path, BOMBS[name]())
            database = scratch / f"{name}.sqlite3"
            shutil.copy(template, database)
            log(f"{name}: {size / 1e6:.2f} MB gzip, importing…")
            result = {"bomb": name, "gzip_mb": round(size / 1e6, 2)}
            result |= measure(path, database, args.timeout, args.checkout)
            print(json.dumps(result), flush=True)
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
