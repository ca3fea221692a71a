"""docs/ci-gate.sh, the CI job of docs/api.md, run as a pipeline runs it: bash, curl, jq.

Against a live server and its worker (`_serve`, DEBUG off, a database of its own with
the demo), with a lead's token from `manage.py api_token`: a run above the threshold
passes and gets its audit package, one below it fails the pipeline (exit 1), an upload
the import refuses fails it with its `line N:` errors, and a reviewer's token is
refused before a byte is stored (curl's exit 22). No browser: it sits here for the server.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import LiveServer, _serve
from tests.conftest import FIXTURES, ROOT

SCRIPT = ROOT / "docs" / "ci-gate.sh"


@pytest.fixture(scope="module")
def gate_server(request, tmp_path_factory) -> Iterator[LiveServer]:
    """A server of its own: the runs these tests add would show on the other tests' pages."""
    yield from _serve(request, tmp_path_factory, debug=False)


@pytest.fixture(scope="module")
def tools() -> None:
    missing = [tool for tool in ("bash", "curl", "jq") if shutil.which(tool) is None]
    if missing:
        message = f"{', '.join(missing)} missing (apt-get install {' '.join(missing)})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def renamed(fixture: str, run_id: str, folder: Path) -> Path:
    """A demo bundle as a new run of the demo project (its passages and case reused)."""
    data = (FIXTURES / f"{fixture}.jsonl").read_text()
    path = folder / f"{run_id}.jsonl"
    path.write_text(data.replace(f'"run_id": "{fixture}"', f'"run_id": "{run_id}"', 1))
    return path


def gate(server: LiveServer, folder: Path, *, user: str = "lead", **env: str):
    token = server.manage("api_token", user, "--name", "ci-gate").stdout.strip()
    return subprocess.run(
        ["bash", str(SCRIPT)], cwd=folder, capture_output=True, text=True, timeout=300,
        env={"PATH": os.environ["PATH"], "EVIDENCE_URL": server.url, "EVIDENCE_TOKEN": token,
             "PROJECT": "demo", "THRESHOLD": "0.8", **env},
    )  # fmt: skip


def test_the_doc_shows_the_script_as_it_is():
    doc = (ROOT / "docs" / "api.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```\n", doc, flags=re.S)
    assert SCRIPT.read_text() in blocks


def test_a_run_above_the_threshold_passes_and_its_package_is_kept(gate_server, tools, tmp_path):
    bundle = renamed("q017-r2", "ci-pass", tmp_path)
    done = gate(gate_server, tmp_path, BUNDLE=str(bundle))
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"value": 1' in done.stdout  # the support, as step 3 prints it
    assert '"improved"' in done.stdout  # step 5: what changed against q017-r1
    assert (tmp_path / "audit.zip").read_bytes().startswith(b"PK")
    # The same upload again: the import refuses it, and the pipeline says why.
    again = gate(gate_server, tmp_path, BUNDLE=str(bundle))
    assert again.returncode == 1, again.stdout + again.stderr
    assert "line 1: /run_id: run 'ci-pass' already exists" in again.stderr


def test_a_run_below_the_threshold_fails_the_pipeline(gate_server, tools, tmp_path):
    done = gate(gate_server, tmp_path, BUNDLE=str(renamed("q017-r1", "ci-fail", tmp_path)))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "support of ci-fail: 0 is below 0.8" in done.stderr
    assert not (tmp_path / "audit.zip").exists()


def test_a_reviewers_token_is_refused_before_anything_is_stored(gate_server, tools, tmp_path):
    done = gate(gate_server, tmp_path, user="alice", BUNDLE=str(FIXTURES / "q017-r1.jsonl"))
    assert done.returncode == 22, done.stdout + done.stderr  # curl -f: the 403
    assert "403" in done.stderr
    assert not (tmp_path / "metrics.json").exists()
