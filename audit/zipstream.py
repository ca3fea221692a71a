"""The zip of an audit package: deterministic members written as a stream.

Every member gets the same ZipInfo settings (date, system, mode, compression
level, zip64), set here rather than left to zipfile's defaults, so the same
files give the same zip bytes on any OS. The zip is written to an unseekable
sink, so each member carries a data descriptor and the bytes can leave as soon
as they are made: the browser download and the command line produce the same
zip.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import zipfile
from collections.abc import Iterable, Iterator
from typing import IO, Any

from evidence.canonical import canonical_json, canonical_lines

ZIP_TIME = (1980, 1, 1, 0, 0, 0)
# zlib's fastest: at 10,000 cases deflating at level 6 was a third of the export's CPU, for a
# zip 28 % smaller than level 1's (docs/decisions.md, "Compression level").
COMPRESS_LEVEL = 1
UNIX = 3  # the zip format's number for the system that made a member


class Sink(io.RawIOBase):
    """An unseekable sink: the zip is written with data descriptors, as a stream."""

    def __init__(self, out: IO[bytes] | None = None):
        self.out = out
        self.chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        data = bytes(data)
        if self.out is not None:
            self.out.write(data)
        else:
            self.chunks.append(data)
        return len(data)

    def tell(self) -> int:
        raise io.UnsupportedOperation("unseekable")

    def drain(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks.clear()
        return data


def zip_info(path: str) -> zipfile.ZipInfo:
    """The same date, system, mode and compression for every member: part of being
    deterministic."""
    info = zipfile.ZipInfo(path, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    # On the ZipInfo: ZipFile(compresslevel=…) is not applied to a member opened with one.
    info.compress_level = COMPRESS_LEVEL
    # ZipInfo takes it from sys.platform: set, so a package exported on Windows is the same.
    info.create_system = UNIX
    info.external_attr = 0o644 << 16
    return info


class ZipStream:
    """Members written one after another; each member's size and SHA-256 kept for the manifest."""

    def __init__(self, out: IO[bytes] | None = None):
        self.sink = Sink(out)
        self.archive = zipfile.ZipFile(self.sink, "w")
        self.entries: list[dict] = []

    def member(self, path: str, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """Write one member from its chunks; yields the zip bytes made so far, as they come."""
        digest, size = hashlib.sha256(), 0
        # A member's size is known only once it is written: zip64 from the start, or a member
        # over 4 GiB would fail when it is closed. Every streamed member, so the bytes do not
        # depend on the data's size.
        with self.archive.open(zip_info(path), "w", force_zip64=True) as handle:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                handle.write(chunk)
                if data := self.sink.drain():
                    yield data
        self.entries.append({"path": path, "bytes": size, "sha256": digest.hexdigest()})
        if data := self.sink.drain():
            yield data

    def close(self, *last: tuple[str, bytes]) -> bytes:
        """Write the last members (not listed in `entries`) and the central directory."""
        for path, data in last:
            self.archive.writestr(zip_info(path), data)
        self.archive.close()
        return self.sink.drain()

    def abandon(self) -> None:
        """Close a half-written zip now (its bytes are thrown away), so that nothing tries to
        finish it later, from the garbage collector, on a file that is closed by then."""
        with contextlib.suppress(Exception):  # the export is failing already: keep its error
            self.archive.close()


def line(value: Any) -> bytes:
    """One line of a .jsonl member (or a whole .json member): canonical JSON and `\\n`."""
    return canonical_json(value) + b"\n"


def lines(rows: Iterable[Any], batch: int = 500, *, plain: bool = False) -> Iterator[bytes]:
    """The lines of a .jsonl member, in batches: one UTF-8 encoding and one zip write per
    batch, not per row. `plain`: the rows hold only plain types (`canonical_lines`)."""
    buffer = []
    for row in rows:
        buffer.append(row)
        if len(buffer) >= batch:
            yield canonical_lines(buffer, plain=plain)
            buffer.clear()
    if buffer:
        yield canonical_lines(buffer, plain=plain)
