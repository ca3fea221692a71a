#!/usr/bin/env python3
"""Verify an Evidence Review audit package (evidence-audit/1) with the standard library only.

    python verify.py PACKAGE.zip [--id PACKAGE_ID] [--key KEYFILE]

Exit status 0 and `OK …` when every check passes; 1 and the first failure as
`FAIL file[:line]: check: detail` otherwise; 2 for wrong usage. Checks, in order:
the zip's end record declares at most MAX_FILES entries in a central directory of
at most MAX_DIRECTORY_BYTES; the zip opens, no name twice and no unsafe name;
manifest.json is at most MAX_MANIFEST_BYTES, canonical JSON, and its
`manifest_sha256` matches its content; every path it lists belongs to the package
layout; the files in the zip are exactly those the manifest lists; every file's
size in the zip's header against the manifest, then its streamed size and SHA-256;
every passage's text against its SHA-256; every claim and verdict revision's
SHA-256 against its content and the chain of `prev_sha256` links of each claim
(seq 1, 2, 3, … with no gap); every card's attached passage text against the
passage file; every chain head against the manifest; no cell of cards.csv that a
spreadsheet would run as a formula. With `--id`, the SHA-256 of manifest.json must
equal the package id recorded at export: only that detects a package forged whole,
hashes included. anchor.json, when present, must name this manifest's SHA-256 and its
chain heads; with `--key`, its HMAC-SHA256 must match under the key in KEYFILE (the
file's bytes, surrounding whitespace stripped): a package whose chains were re-sealed
in the database cannot carry a valid anchor without the key.

The package is hostile input: nothing is read whole, nothing is extracted, and
every size the zip or the manifest declares is bounded before it is believed.
"""

from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import hmac
import json
import re
import struct
import sys
import zipfile

FORMAT = "evidence-audit/1"
ANCHOR_FORMAT = "evidence-audit-anchor/1"
UNLISTED = ("manifest.json", "anchor.json")  # written after the manifest, so not in it
# Bounds far above any package the application exports (docs/audit.md, "Limits"):
# a package over them is refused in seconds rather than read for minutes.
MAX_FILES = 10_000  # members of the zip, entries of the manifest's `files`
MAX_DIRECTORY_BYTES = 4 * 1024 * 1024  # the zip's index: under 300 bytes an entry
MAX_MANIFEST_BYTES = 64 * 1024 * 1024  # about 600,000 chain heads
MAX_LINE_BYTES = 16 * 1024 * 1024  # one JSONL row, one CSV cell
# Deflate at level 6 shrinks a package's members up to 10 times, rows made identical on
# purpose 113 times; more than 400 times (past 1 MiB) is a zip bomb (docs/decisions.md).
MAX_RATIO = 400
RATIO_FLOOR = 1024 * 1024
CHUNK = 256 * 1024
RUN_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")  # replay.Run's own constraint
FIXED = {
    "README.txt",
    "verify.py",
    "schema/bundle.schema.json",
    "schema/cards.schema.json",
    "fixture/cases.jsonl",
    "fixture/passages.jsonl",
    "cards/cards.jsonl",
    "cards/cards.csv",
    "cards/revisions.jsonl",
}
RUN_FILES = ("run.json", "responses.jsonl", "retrieval.jsonl")
# What Excel, LibreOffice and Google Sheets run as a formula when a cell starts with it (OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
UNSAFE = "unsafe name (absolute, `.`, `..` or empty part, backslash or control character)"


class Failure(Exception):
    def __init__(self, where: str, check: str, detail: str = ""):
        message = f"{where}: {check}" + (f": {detail}" if detail else "")
        # A name or a detail out of the package must not end the one line, nor fill a screen.
        message = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        super().__init__(message if len(message) <= 1000 else message[:999] + "…")


def canonical(value) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def unsafe(name: str) -> bool:
    """Would this name write outside the folder it is unzipped in, or hide in a listing?"""
    return (
        name.startswith("/")
        or "\\" in name
        or re.match(r"[A-Za-z]:", name) is not None
        # A folder's entry ends in "/"; an empty part elsewhere ("a//b") is unzipped as "a/b".
        or any(part in ("", ".", "..") for part in name.removesuffix("/").split("/"))
        or not name.isprintable()
    )


def is_run_id(value) -> bool:
    return isinstance(value, str) and bool(RUN_ID.fullmatch(value)) and set(value) != {"."}


def layout(manifest: dict) -> set[str]:
    """Every path a package of these runs may hold: the exporter writes no other."""
    runs, compare = manifest["runs"], manifest.get("compare")
    if not isinstance(runs, list) or len(runs) > MAX_FILES:
        raise Failure("manifest.json", "runs", f"not a list of at most {MAX_FILES} run ids")
    if compare is not None and not (isinstance(compare, list) and len(compare) == 2):
        raise Failure("manifest.json", "compare", "not two run ids")
    for run in runs + (compare or []):
        if not is_run_id(run):
            raise Failure(
                "manifest.json", "run id", f"{run!r} cannot name a folder of the package"
            )
    paths = set(FIXED)
    for run in runs:
        paths.update(f"runs/{run}/{name}" for name in RUN_FILES)
        paths.add(f"metrics/{run}.json")
    if compare:
        paths.add(f"replay/{compare[0]}__{compare[1]}.json")
    return paths


def listed_files(manifest: dict) -> dict[str, dict]:
    """The manifest's `files`, by path, each entry checked for shape and place."""
    files = manifest["files"]
    if not isinstance(files, list) or len(files) > MAX_FILES:
        raise Failure("manifest.json", "files", f"not a list of at most {MAX_FILES} entries")
    allowed = layout(manifest)
    listed: dict[str, dict] = {}
    for entry in files:
        path = entry["path"]
        if not isinstance(path, str) or unsafe(path):
            raise Failure(str(path), UNSAFE)
        if path not in allowed:
            raise Failure(path, "not a file of the package layout")
        if path in listed:
            raise Failure(path, "listed twice in the manifest")
        size = entry["bytes"]
        if type(size) is not int or size < 0:
            raise Failure(path, "size", f"the manifest's {size!r} is not a number of bytes")
        if not isinstance(entry["sha256"], str):
            raise Failure(path, "SHA-256", "the manifest's is not a string")
        listed[path] = entry
    return listed


def open_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo):
    # A damaged member can fail in zlib, in the zip headers or in the CRC check: whatever
    # the error, it is a failed check of this file, not a crash.
    try:
        return archive.open(info)
    except Exception as exc:  # noqa: BLE001
        raise damaged(info.filename, exc) from None


def damaged(name: str, exc: Exception) -> Failure:
    return Failure(name, "cannot be read (damaged)", f"{type(exc).__name__}: {exc}")


def streamed_sha256(archive: zipfile.ZipFile, info: zipfile.ZipInfo, size: int) -> str:
    """The member's SHA-256, read in chunks, never more than the `size` bytes it declared."""
    digest, seen = hashlib.sha256(), 0
    with open_member(archive, info) as member:
        try:
            while chunk := member.read(CHUNK):
                seen += len(chunk)
                if seen > size:
                    raise Failure(info.filename, "size", f"more than the {size} bytes declared")
                digest.update(chunk)
        except Failure:
            raise
        except Exception as exc:  # noqa: BLE001
            raise damaged(info.filename, exc) from None
    if seen != size:
        raise Failure(info.filename, "size", f"{seen} bytes, the zip and the manifest say {size}")
    return digest.hexdigest()


def bounded_lines(archive: zipfile.ZipFile, path: str):
    """The member's lines as bytes, numbered from 1; a line over MAX_LINE_BYTES fails."""
    with open_member(archive, archive.getinfo(path)) as raw:
        number = 0
        while line := raw.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(line) > MAX_LINE_BYTES:
                raise Failure(f"{path}:{number}", "line too long", f"over {MAX_LINE_BYTES} bytes")
            yield number, line


def jsonl(archive: zipfile.ZipFile, path: str):
    for number, line in bounded_lines(archive, path):
        try:
            yield number, json.loads(line.decode("utf-8"))
        except ValueError as exc:
            raise Failure(f"{path}:{number}", "line is not JSON", str(exc)) from None


def check_csv(archive: zipfile.ZipFile, path: str) -> None:
    """No cell a spreadsheet would run as a formula: the exporter quotes them with `'`."""
    lines = (line.decode("utf-8") for _, line in bounded_lines(archive, path))
    limit = csv.field_size_limit(MAX_LINE_BYTES)  # one cell: several passage texts
    try:
        reader = csv.reader(lines, strict=True)
        header: list[str] = []
        for row in reader:
            header = header or row
            for column, cell in enumerate(row):
                if cell.startswith(FORMULA_STARTS):
                    name = header[column] if column < len(header) else str(column + 1)
                    raise Failure(
                        f"{path}:{reader.line_num}",
                        "cell a spreadsheet would run as a formula",
                        f"column {name}",
                    )
    except (csv.Error, UnicodeDecodeError) as exc:
        raise Failure(path, "not CSV", str(exc)) from None
    finally:
        csv.field_size_limit(limit)


def end_record(file) -> tuple[int, int]:
    """The entry count and central directory size the zip's end record declares.

    zipfile reads the whole central directory, a record per entry, before anything can be
    checked: these two numbers bound it first. zipfile reads as many bytes as the size
    says, whatever the count, so both are bounded. (0, 0) when there is no end record:
    zipfile then says what is wrong.
    """
    file.seek(0, 2)
    tail = min(file.tell(), 22 + 65535)  # the record, and a comment of at most 64 KiB
    file.seek(-tail, 2)
    data = file.read(tail)
    at = data.rfind(b"PK\x05\x06")
    if at < 0 or len(data) - at < 22:
        return 0, 0
    entries, directory = struct.unpack("<HI", data[at + 10 : at + 16])
    locator = data[at - 20 : at] if at >= 20 else b""
    if locator[:4] == b"PK\x06\x07":  # zip64: the real figures are in the zip64 record
        file.seek(struct.unpack("<Q", locator[8:16])[0])
        record = file.read(56)
        if record[:4] == b"PK\x06\x06":
            entries, directory = struct.unpack("<QQ", record[32:48])
    return entries, directory


def verify(
    path: str, package_id: str | None = None, signing_key: bytes | None = None
) -> dict[str, int]:
    counts = {"files": 0, "passages": 0, "revisions": 0, "chains": 0, "cards": 0, "signed": 0}
    try:
        with open(path, "rb") as file:
            entries, directory = end_record(file)
        if entries > MAX_FILES + len(UNLISTED):
            raise Failure(path, "too many entries", f"{entries}, a package holds {MAX_FILES}")
        if directory > MAX_DIRECTORY_BYTES:
            raise Failure(
                path,
                "central directory too large",
                f"{directory} bytes, a package's is at most {MAX_DIRECTORY_BYTES}",
            )
        archive = zipfile.ZipFile(path)
    except Failure:
        raise
    except Exception as exc:  # noqa: BLE001 - any damage to the container is a failed check
        raise Failure(path, "not a readable zip file", f"{type(exc).__name__}: {exc}") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_FILES + len(UNLISTED):
            raise Failure(path, "too many entries", f"{len(infos)}, a package holds {MAX_FILES}")
        seen = collections.Counter(info.filename for info in infos)
        repeated = sorted(name for name, count in seen.items() if count > 1)
        if repeated:
            raise Failure(repeated[0], "the zip holds two entries of this name (one was added)")
        for info in infos:
            if unsafe(info.filename):
                raise Failure(info.filename, UNSAFE)
        members = {info.filename: info for info in infos}
        if "manifest.json" not in members:
            raise Failure("manifest.json", "missing from the package")
        manifest_bytes = read_manifest(archive, members["manifest.json"], "manifest.json")
        if package_id and sha256(manifest_bytes) != package_id:
            raise Failure(
                "manifest.json", "package id", "its SHA-256 is not the id recorded at export"
            )
        manifest = self_sealed("manifest.json", manifest_bytes, "manifest_sha256")
        if manifest.get("format") != FORMAT:
            raise Failure("manifest.json", "format", f"expected {FORMAT}")
        listed = listed_files(manifest)
        for name in members:
            if name not in UNLISTED and name not in listed:
                raise Failure(name, "file not listed in the manifest (added?)")
        for name in listed:
            if name not in members:
                raise Failure(name, "file listed in the manifest is missing")
        # Every declared size before any byte is inflated: a lie costs nothing to find.
        for name, entry in listed.items():
            info = members[name]
            if info.file_size != entry["bytes"]:
                raise Failure(
                    name, "size", f"{info.file_size} bytes, the manifest says {entry['bytes']}"
                )
            if info.file_size > MAX_RATIO * info.compress_size + RATIO_FLOOR:
                raise Failure(
                    name,
                    "size",
                    f"{info.file_size} bytes from {info.compress_size} compressed: "
                    f"over {MAX_RATIO} times, a zip bomb",
                )
        for name, entry in listed.items():
            if streamed_sha256(archive, members[name], entry["bytes"]) != entry["sha256"]:
                raise Failure(name, "SHA-256 does not match the manifest")
            counts["files"] += 1

        passages: dict[tuple[str, str], str] = {}
        for number, row in jsonl(archive, "fixture/passages.jsonl"):
            if sha256(row["text"].encode("utf-8")) != row["sha256"]:
                raise Failure(
                    f"fixture/passages.jsonl:{number}",
                    "passage text does not match its SHA-256",
                    row["ref"],
                )
            passages[(row["snapshot"], row["ref"])] = row["sha256"]
            counts["passages"] += 1

        heads: dict[str, tuple[int, str]] = {}
        for number, row in jsonl(archive, "cards/revisions.jsonl"):
            where = f"cards/revisions.jsonl:{number}"
            document = {k: v for k, v in row.items() if k != "sha256"}
            if sha256(canonical(document)) != row.get("sha256"):
                raise Failure(where, "revision SHA-256 does not match its content")
            chain = "/".join((row["project"], row["run_id"], row["case_id"], row["claim_id"]))
            seq, previous = heads.get(chain, (0, None))
            if row["seq"] != seq + 1:
                raise Failure(where, "revision chain", f"{chain}: seq {row['seq']} after {seq}")
            if row["prev_sha256"] != previous:
                raise Failure(
                    where,
                    "revision chain",
                    f"{chain}: prev_sha256 does not link to revision {seq}",
                )
            heads[chain] = (row["seq"], row["sha256"])
            counts["revisions"] += 1
        counts["chains"] = len(heads)
        expected_heads = manifest.get("chain_heads", {})
        for chain, digest in expected_heads.items():
            if heads.get(chain, (0, None))[1] != digest:
                raise Failure(
                    "cards/revisions.jsonl",
                    "chain head",
                    f"{chain} does not end at the manifest's head",
                )
        for chain in heads:
            if chain not in expected_heads:
                raise Failure(
                    "cards/revisions.jsonl", "chain head", f"{chain} is not in the manifest"
                )

        for number, row in jsonl(archive, "cards/cards.jsonl"):
            for citation in row["citations"]:
                key = (row["snapshot"], citation["ref"])
                text = citation.get("text")
                if text is None:
                    continue
                if (
                    sha256(text.encode("utf-8")) != citation["sha256"]
                    or passages.get(key) != citation["sha256"]
                ):
                    raise Failure(
                        f"cards/cards.jsonl:{number}",
                        "attached passage text does not match the passage file",
                        citation["ref"],
                    )
            counts["cards"] += 1
        check_csv(archive, "cards/cards.csv")
        if "anchor.json" in members:
            check_anchor(read_manifest(archive, members["anchor.json"], "anchor.json"),
                         manifest, manifest_bytes, signing_key)  # fmt: skip
            counts["files"] += 1
            counts["signed"] = int(signing_key is not None)
        elif signing_key is not None:
            raise Failure("anchor.json", "missing from the package", "nothing to check the key on")
    return counts


def self_sealed(name: str, data: bytes, seal: str) -> dict:
    """A JSON object in canonical form whose field `seal` is the SHA-256 of the rest."""
    try:
        document = json.loads(data)
    except ValueError as exc:
        raise Failure(name, "not JSON", str(exc)) from None
    if not isinstance(document, dict) or canonical(document) + b"\n" != data:
        raise Failure(name, "not in canonical form (a byte was changed)")
    body = {k: v for k, v in document.items() if k != seal}
    if document.get(seal) != sha256(canonical(body)):
        raise Failure(name, f"{seal} does not match the {name.removesuffix('.json')}")
    return document


def check_anchor(data: bytes, manifest: dict, manifest_bytes: bytes, key: bytes | None) -> None:
    """anchor.json names this manifest and its heads; with a key, its signature matches."""
    anchor = self_sealed("anchor.json", data, "anchor_sha256")
    if anchor.get("format") != ANCHOR_FORMAT:
        raise Failure("anchor.json", "format", f"expected {ANCHOR_FORMAT}")
    if anchor.get("package_id") != sha256(manifest_bytes):
        raise Failure("anchor.json", "package id", "not the SHA-256 of this manifest.json")
    if anchor.get("project") != manifest.get("project"):
        raise Failure("anchor.json", "project", "not the manifest's project")
    if anchor.get("chain_heads") != manifest.get("chain_heads"):
        raise Failure("anchor.json", "chain heads", "not the manifest's chain heads")
    if key is None:
        return
    if anchor.get("key_id") != hashlib.sha256(b"evidence-audit key id\n" + key).hexdigest()[:16]:
        raise Failure("anchor.json", "signature", "signed with another key than KEYFILE")
    body = {k: v for k, v in anchor.items() if k not in ("hmac_sha256", "anchor_sha256")}
    expected = hmac.new(key, canonical(body), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, str(anchor.get("hmac_sha256"))):
        raise Failure("anchor.json", "signature", "HMAC-SHA256 does not match under KEYFILE")


def read_manifest(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> bytes:
    """manifest.json (or anchor.json), read whole only once its size is known to be bounded."""
    if info.file_size > MAX_MANIFEST_BYTES:
        raise Failure(
            name,
            "too large",
            f"{info.file_size} bytes, the verifier reads at most {MAX_MANIFEST_BYTES}",
        )
    with open_member(archive, info) as member:
        try:
            data = member.read(MAX_MANIFEST_BYTES + 1)
        except Exception as exc:  # noqa: BLE001
            raise damaged(name, exc) from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise Failure(name, "too large", f"over {MAX_MANIFEST_BYTES} bytes")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Verify an Evidence Review audit package.")
    parser.add_argument("package")
    parser.add_argument("--id", help="the package id (manifest SHA-256) recorded at export")
    parser.add_argument(
        "--key", metavar="KEYFILE", help="the audit signing key, to check anchor.json"
    )
    args = parser.parse_args(argv)
    try:
        key = read_key(args.key) if args.key else None
        counts = verify(args.package, args.id, key)
    except Failure as failure:
        print(f"FAIL {failure}")
        return 1
    except (KeyError, TypeError, ValueError) as exc:
        print(f"FAIL package: unexpected structure: {exc!r}")
        return 1
    except Exception as exc:  # noqa: BLE001 - a damaged package never ends in a traceback
        print(f"FAIL package: cannot be checked: {type(exc).__name__}: {exc}")
        return 1
    print(summary(counts))
    return 0


def read_key(path: str) -> bytes:
    """The key as the application reads AUDIT_SIGNING_KEY_FILE: surrounding whitespace stripped."""
    try:
        with open(path, "rb") as file:
            key = file.read(4096).strip()
    except OSError as exc:
        raise Failure(path, "cannot read the key", exc.strerror or str(exc)) from None
    if not key:
        raise Failure(path, "cannot read the key", "the file is empty")
    return key


def summary(counts: dict[str, int]) -> str:
    return (
        "OK {files} files, {passages} passages, {revisions} revisions in {chains} chains, "
        "{cards} cards checked".format(**counts)
        + (", anchor signature valid" if counts["signed"] else "")
    )


if __name__ == "__main__":
    sys.exit(main())
