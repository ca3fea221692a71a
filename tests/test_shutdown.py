"""The web server told to stop (SIGTERM) with an upload in flight: the upload is not lost.

gunicorn as `make serve` runs it (config/gunicorn.py, DEBUG=0, a gthread worker) on a
copy of the demo's SQLite file. A lead's bundle upload is sent over a raw socket in two
halves; SIGTERM reaches gunicorn between them. The server finishes reading the body,
answers with the redirect to the queued job, and exits 0; a worker started afterwards
runs that job to done.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests

from tests.conftest import (
    AUDIT_KEY,
    DEMO_PASSWORD,
    ROOT,
    bundle_bytes,
    free_port,
    sqlite_copy,
    sqlite_env,
    wait_healthy,
)
from tests.factories import synthetic_bundle

MANAGE = [sys.executable, str(ROOT / "manage.py")]
GUNICORN = Path(sys.executable).parent / "gunicorn"
TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture
def env(demo_sqlite, tmp_path) -> dict[str, str]:
    database = sqlite_copy(demo_sqlite, tmp_path / "own.sqlite3")
    env = sqlite_env(database) | {
        # Production's settings, over plain http on loopback (as tests/test_deploy_shape.py).
        "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
        "STATIC_MANIFEST": "0", "SECURE_SSL_REDIRECT": "0", "SECURE_HSTS_SECONDS": "0",
        "SECURE_COOKIES": "0", "JOBS_DIR": str(tmp_path / "jobs"),
        "AUDIT_SIGNING_KEY": AUDIT_KEY, "AUDIT_ANCHOR_DIR": str(tmp_path / "anchors"),
        "WEB_WORKERS": "1", "WEB_THREADS": "2",
    }  # fmt: skip
    for variable in ("TASKS_BACKEND", "TLS_CERT", "TLS_KEY", "GRACEFUL_TIMEOUT"):
        env.pop(variable, None)
    return env


def logged_in(base: str) -> tuple[dict[str, str], str]:
    """A lead's cookies and the upload form's CSRF token."""
    session = requests.Session()
    token = TOKEN.search(session.get(f"{base}/login/", timeout=30).text)[1]
    session.post(
        f"{base}/login/",
        data={"username": "lead", "password": DEMO_PASSWORD, "csrfmiddlewaretoken": token},
        allow_redirects=False, timeout=30,
    )  # fmt: skip
    form = session.get(f"{base}/p/demo/import/", timeout=30)
    assert form.status_code == 200
    return dict(session.cookies), TOKEN.search(form.text)[1]


def multipart(fields: dict[str, str], name: str, data: bytes) -> tuple[str, bytes]:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
        for key, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="bundle"; filename="{name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return f"multipart/form-data; boundary={boundary}", b"".join(parts)


def answer_of(sock: socket.socket) -> bytes:
    sock.settimeout(60)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_gunicorn_told_to_stop_mid_upload_answers_it_queues_its_job_and_exits_0(env, tmp_path):
    port = free_port()
    log = tmp_path / "gunicorn.log"
    with log.open("ab") as out:
        server = subprocess.Popen(
            [str(GUNICORN), "-c", "config/gunicorn.py"], env=env | {"BIND": f"127.0.0.1:{port}"},
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wait_healthy(server, port, log.read_text)
        cookies, token = logged_in(f"http://127.0.0.1:{port}")
        bundle = bundle_bytes(*synthetic_bundle(run_id="stopped-r1", cases=200, passages=4))
        kind, body = multipart(
            {"csrfmiddlewaretoken": token, "source_format": "bundle"}, "stopped-r1.jsonl", bundle
        )
        head = (
            "POST /p/demo/import/ HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{port}\r\n"
            f"Cookie: {'; '.join(f'{k}={v}' for k, v in cookies.items())}\r\n"
            f"Content-Type: {kind}\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        half = len(body) // 2
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(head + body[:half])
            time.sleep(1)  # a thread of the worker reads the body as it comes
            server.send_signal(signal.SIGTERM)
            time.sleep(1.5)  # the master has told its worker: it accepts no new connection
            assert server.poll() is None, "gunicorn left before the upload was whole"
            sock.sendall(body[half:])
            answer = answer_of(sock)
        status, _, rest = answer.partition(b"\r\n")
        assert status == b"HTTP/1.1 302 Found", answer[:2000]
        location = re.search(rb"(?im)^location: (/p/demo/jobs/([0-9a-f-]{36})/)\r$", rest)
        assert location, rest[:2000]
        assert server.wait(timeout=60) == 0, log.read_text()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
    # The job was queued before the answer: a worker started now runs it.
    done = subprocess.run(
        [*MANAGE, "db_worker", "--batch", "--no-reload", "--no-startup-delay"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    code = location[2].decode()
    state = f"from jobs.models import Job; print(Job.objects.get(code='{code}').state)"
    shown = subprocess.run(
        [*MANAGE, "shell", "-c", state],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert shown.stdout.splitlines()[-1] == "done"
