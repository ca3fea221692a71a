"""Reading and rebuilding audit packages with the standard library, as auditors and forgers do.

The helpers here are shared by the other `test_audit_*` modules. `rezip` rebuilds
a package with the exporter's own settings (the same names in the same order,
the fixed 1980 timestamp, deflate level 6, made on Unix, mode 0644, written as a
stream with data descriptors, zip64 for every member but the manifest and the anchor), so a
test changes only the bytes it means to change; the tests of this module prove
that a package rebuilt unchanged is the exporter's zip byte for byte.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import resource
import shutil
import subprocess
import zipfile
from pathlib import Path

from django.core.management import call_command

from evidence.canonical import canonical_json

ZIP_TIME = (1980, 1, 1, 0, 0, 0)
# The auditor's interpreter: the system python3, not the project's virtualenv.
PYTHON3 = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else shutil.which("python3")


def export(*args: str, out: Path, project: str = "demo") -> str:
    """Run export_audit; returns what it printed (the package id)."""
    stdout = io.StringIO()
    call_command("export_audit", "--project", project, *args, "--out", str(out), stdout=stdout)
    return stdout.getvalue().strip()


def members(source: Path | bytes) -> dict[str, bytes]:
    """Every file of a package, in the zip's order."""
    data = source.read_bytes() if isinstance(source, Path) else source
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


class _Stream(io.RawIOBase):
    """Unseekable, like the exporter's sink: zipfile then writes data descriptors."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        self.data += data
        return len(data)

    def tell(self) -> int:
        raise io.UnsupportedOperation("unseekable")


def rezip(files: dict[str, bytes]) -> bytes:
    """A zip of these files with the exporter's names, order and ZipInfo settings."""
    sink = _Stream()
    with zipfile.ZipFile(sink, "w") as out:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.compress_level = 1
            info.create_system = 3
            info.external_attr = 0o644 << 16
            if name in ("manifest.json", "anchor.json"):
                out.writestr(info, data)
            else:
                with out.open(info, "w", force_zip64=True) as handle:
                    handle.write(data)
    return bytes(sink.data)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def rows(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def lines(values: list[dict]) -> bytes:
    return b"".join(canonical_json(value) + b"\n" for value in values)


def manifest(files: dict[str, bytes]) -> dict:
    return json.loads(files["manifest.json"])


def refit_manifest(files: dict[str, bytes], *, reseal: bool = True, **changes) -> None:
    """What a forger does after editing files: fix their manifest entries, maybe re-seal it.

    Every listed file's size and SHA-256 is recomputed from `files`; entries of
    files no longer present are dropped; `changes` replace top-level fields.
    """
    document = manifest(files)
    document["files"] = [
        {"path": e["path"], "bytes": len(files[e["path"]]), "sha256": sha256(files[e["path"]])}
        for e in document["files"]
        if e["path"] in files
    ]
    document.update(changes)
    if reseal:
        body = {k: v for k, v in document.items() if k != "manifest_sha256"}
        document["manifest_sha256"] = sha256(canonical_json(body))
    files["manifest.json"] = canonical_json(document) + b"\n"
    if reseal and "anchor.json" in files:
        # The anchor names the manifest and its heads: a forger can fix those, not the HMAC.
        anchor = json.loads(files["anchor.json"])
        anchor["package_id"] = sha256(files["manifest.json"])
        anchor["chain_heads"] = document["chain_heads"]
        body = {k: v for k, v in anchor.items() if k != "anchor_sha256"}
        anchor["anchor_sha256"] = sha256(canonical_json(body))
        files["anchor.json"] = canonical_json(anchor) + b"\n"


AUDITOR_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def run_verify(verifier: Path, package: Path, *args: str) -> subprocess.CompletedProcess:
    """`python3 verify.py PACKAGE.zip` as an auditor runs it: system python, no Django."""
    return subprocess.run(
        [PYTHON3, verifier.name, str(package), *args],
        cwd=verifier.parent, env=AUDITOR_ENV, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def address_space(limit: int) -> None:
    """In a child about to start: cap the memory it may map (virtual, so a generous cap)."""
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


# Runs verify.py as `python3 verify.py PACKAGE` would, once per package, in one process.
VERIFY_EACH = """
import contextlib, io, json, runpy, sys
verifier, packages = sys.argv[1], json.loads(sys.stdin.read())
answers = []
for package in packages:
    out, err, code = io.StringIO(), io.StringIO(), 0
    sys.argv = [verifier, package]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(verifier, run_name="__main__")
        except SystemExit as end:
            code = end.code if isinstance(end.code, int) else (end.code is not None)
    answers.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(answers))
"""


def run_verify_each(
    verifier: Path, packages: list[Path], *, memory: int | None = None, timeout: float = 300
) -> list[subprocess.CompletedProcess]:
    """`run_verify` of each package, in one system python: many tampered packages, one start.

    Each package gets a fresh run of verify.py (new globals), with nothing but the
    standard library, as a separate `python3 verify.py` would; only the interpreter's
    start is shared. A traceback escaping verify.py ends this process, and the test.
    With `memory`, the process may map no more than that many bytes (RLIMIT_AS): past
    it, an allocation fails with MemoryError instead of the machine swapping.
    """
    done = subprocess.run(
        [PYTHON3, "-c", VERIFY_EACH, verifier.name],
        input=json.dumps([str(package) for package in packages]),
        cwd=verifier.parent, env=AUDITOR_ENV, capture_output=True, text=True, timeout=timeout,
        preexec_fn=None if memory is None else lambda: address_space(memory),
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, ""), done
    return [
        subprocess.CompletedProcess([verifier.name, str(package)], code, out, err)
        for package, (code, out, err) in zip(packages, json.loads(done.stdout), strict=True)
    ]


def test_a_package_rebuilt_unchanged_is_the_exporters_zip_byte_for_byte(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export("--compare", "q017-r1", "q017-r2", out=out)
    assert rezip(members(out)) == out.read_bytes()


def test_every_entry_has_the_fixed_timestamp_deflate_unix_and_mode_0644(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export(out=out)
    with zipfile.ZipFile(out) as archive:
        infos = archive.infolist()
    assert infos
    for info in infos:
        assert info.date_time == ZIP_TIME, info.filename
        assert info.compress_type == zipfile.ZIP_DEFLATED, info.filename
        assert info.create_system == 3, info.filename
        assert info.external_attr == 0o644 << 16, info.filename


def test_the_manifest_and_its_anchor_are_the_last_entries_in_canonical_form(demo_runs, tmp_path):
    out = tmp_path / "package.zip"
    export(out=out)
    files = members(out)
    assert list(files)[-2:] == ["manifest.json", "anchor.json"]
    assert files["anchor.json"] == canonical_json(json.loads(files["anchor.json"])) + b"\n"
    assert files["manifest.json"] == canonical_json(manifest(files)) + b"\n"
