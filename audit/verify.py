#!/usr/bin/env python3
"""Verify an Evidence Review audit package (evidence-audit/1) with the standard library only.

    python verify.py PACKAGE.zip [--id PACKAGE_ID]

Exit status 0 and `OK …` when every check passes; 1 and the first failure as
`FAIL file[:line]: check: detail` otherwise; 2 for wrong usage. Checks, in order:
the zip opens; manifest.json is canonical JSON and its `manifest_sha256` matches
its content; the files in the zip are exactly those the manifest lists; every
file's size and SHA-256; every passage's text against its SHA-256; every claim
and verdict revision's SHA-256 against its content and the chain of
`prev_sha256` links of each claim (seq 1, 2, 3, … with no gap); every card's
attached passage text against the passage file; every chain head against the
manifest. With `--id`, the SHA-256 of manifest.json must equal the package id
recorded at export: only that detects a package forged whole, hashes included.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import zipfile

FORMAT = "evidence-audit/1"


class Failure(Exception):
    def __init__(self, where: str, check: str, detail: str = ""):
        super().__init__(f"{where}: {check}" + (f": {detail}" if detail else ""))


def canonical(value) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read(archive: zipfile.ZipFile, name: str) -> bytes:
    # A damaged member can fail in zlib, in the zip headers or in the CRC check: whatever
    # the error, it is a failed check of this file, not a crash.
    try:
        return archive.read(name)
    except Exception as exc:  # noqa: BLE001
        raise Failure(name, "cannot be read (damaged)", f"{type(exc).__name__}: {exc}") from None


def jsonl(archive: zipfile.ZipFile, path: str):
    with archive.open(path) as raw:
        for number, line in enumerate(io.TextIOWrapper(raw, encoding="utf-8", newline="\n"), 1):
            try:
                yield number, json.loads(line)
            except ValueError as exc:
                raise Failure(f"{path}:{number}", "line is not JSON", str(exc)) from None


def verify(path: str, package_id: str | None = None) -> dict[str, int]:
    counts = {"files": 0, "passages": 0, "revisions": 0, "chains": 0, "cards": 0}
    try:
        archive = zipfile.ZipFile(path)
    except Exception as exc:  # noqa: BLE001 - any damage to the container is a failed check
        raise Failure(path, "not a readable zip file", f"{type(exc).__name__}: {exc}") from None
    with archive:
        names = [info.filename for info in archive.infolist()]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise Failure(repeated[0], "the zip holds two entries of this name (one was added)")
        if "manifest.json" not in names:
            raise Failure("manifest.json", "missing from the package")
        manifest_bytes = read(archive, "manifest.json")
        if package_id and sha256(manifest_bytes) != package_id:
            raise Failure(
                "manifest.json", "package id", "its SHA-256 is not the id recorded at export"
            )
        try:
            manifest = json.loads(manifest_bytes)
        except ValueError as exc:
            raise Failure("manifest.json", "not JSON", str(exc)) from None
        if canonical(manifest) + b"\n" != manifest_bytes:
            raise Failure("manifest.json", "not in canonical form (a byte was changed)")
        body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
        if manifest.get("manifest_sha256") != sha256(canonical(body)):
            raise Failure("manifest.json", "manifest_sha256 does not match the manifest")
        if manifest.get("format") != FORMAT:
            raise Failure("manifest.json", "format", f"expected {FORMAT}")
        listed = {entry["path"]: entry for entry in manifest["files"]}
        for name in names:
            if name != "manifest.json" and name not in listed:
                raise Failure(name, "file not listed in the manifest (added?)")
        for name in listed:
            if name not in names:
                raise Failure(name, "file listed in the manifest is missing")
        for name, entry in listed.items():
            data = read(archive, name)
            if len(data) != entry["bytes"]:
                raise Failure(
                    name, "size", f"{len(data)} bytes, the manifest says {entry['bytes']}"
                )
            if sha256(data) != entry["sha256"]:
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
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Verify an Evidence Review audit package.")
    parser.add_argument("package")
    parser.add_argument("--id", help="the package id (manifest SHA-256) recorded at export")
    args = parser.parse_args(argv)
    try:
        counts = verify(args.package, args.id)
    except Failure as failure:
        print(f"FAIL {failure}")
        return 1
    except (KeyError, TypeError, ValueError) as exc:
        print(f"FAIL package: unexpected structure: {exc!r}")
        return 1
    except Exception as exc:  # noqa: BLE001 - a damaged package never ends in a traceback
        print(f"FAIL package: cannot be checked: {type(exc).__name__}: {exc}")
        return 1
    print(
        "OK {files} files, {passages} passages, {revisions} revisions in {chains} chains, "
        "{cards} cards checked".format(**counts)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
