"""Each request has an id: the proxy's when sane, else a new one; it is answered, and
logged with every line written for the request (as JSON with LOG_FORMAT=json)."""

from __future__ import annotations

import io
import json
import logging
import re
import runpy
import sys
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured

from evidence.logs import JsonFormatter, request_id
from tests.conftest import ROOT


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """What Django's request logger writes, through the JSON formatter (LOG_FORMAT=json)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)


def test_a_request_without_an_id_gets_a_new_one_in_its_answer(client, db):
    first, second = client.get("/healthz"), client.get("/healthz")
    assert re.fullmatch(r"[0-9a-f]{32}", first["X-Request-ID"])
    assert first["X-Request-ID"] != second["X-Request-ID"]


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("0f1e2d3c4b5a69788796a5b4c3d2e1f0", True),  # nginx's $request_id
        ("3f2b8c1e-7a4d-4e9b-9c2a-1d5e6f7a8b9c", True),
        ("trace.1:span-2_x", True),
        ("x" * 65, False),
        ("two words", False),
        ('"},{"level":"ERROR', False),
        ("", False),
    ],
)
def test_the_proxys_id_is_kept_only_when_sane(client, db, given, kept):
    answered = client.get("/healthz", HTTP_X_REQUEST_ID=given)["X-Request-ID"]
    assert (answered == given) is kept
    assert re.fullmatch(r"[A-Za-z0-9._:-]{1,64}", answered)


def test_a_line_django_logs_after_the_view_carries_the_requests_id(client, db, json_lines):
    # A 4xx is logged once the middleware has returned: the id must still be there.
    response = client.post("/healthz", HTTP_X_REQUEST_ID="req-405")
    assert response.status_code == 405
    (line,) = json_lines.getvalue().splitlines()
    entry = json.loads(line)
    assert entry["request_id"] == "req-405"
    assert (entry["level"], entry["logger"], entry["status"]) == ("WARNING", "django.request", 405)
    assert entry["message"] == "Method Not Allowed (POST): /healthz"
    assert request_id.get() == ""  # forgotten once the response is closed


def test_a_record_becomes_one_json_object_with_its_fields_and_traceback():
    token = request_id.set("req-7")
    try:
        try:
            raise ValueError("bad\nline")
        except ValueError:
            record = logging.getLogger("x").makeRecord(
                "x", logging.ERROR, __file__, 1, "failed %s", ("here",), exc_info=sys.exc_info(),
                extra={"fields": {"path": "/p/", "status": 500}},
            )  # fmt: skip
        line = JsonFormatter().format(record)
    finally:
        request_id.reset(token)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "failed here"
    assert (entry["request_id"], entry["path"], entry["status"]) == ("req-7", "/p/", 500)
    assert entry["exception"].endswith("ValueError: bad\nline")
    assert entry["time"].endswith("+00:00")


def test_gunicorns_access_line_is_json_with_the_id_the_app_answered(tmp_path):
    from gunicorn.config import Config

    from config.gunicorn import JsonLogger

    settings = Config()
    settings.set("accesslog", str(tmp_path / "access.log"))
    logger = JsonLogger(settings)
    response = SimpleNamespace(
        status="201 Created", sent=12, headers=[("X-Request-ID", "req-9"), ("Vary", "Cookie")]
    )
    request = SimpleNamespace(headers=[("USER-AGENT", "probe")])
    environ = {
        "REQUEST_METHOD": "POST", "RAW_URI": "/p/demo/?a=1", "PATH_INFO": "/p/demo/",
        "QUERY_STRING": "a=1", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "10.0.0.5",
        "HTTP_USER_AGENT": "probe",
    }  # fmt: skip
    logger.access(response, request, environ, timedelta(milliseconds=42))
    for log in (logger.access_log, logger.error_log):  # gunicorn's loggers are global
        for handler in list(log.handlers):
            handler.close()
            log.removeHandler(handler)
    (line,) = (tmp_path / "access.log").read_text().splitlines()
    entry = json.loads(line)
    assert entry["logger"] == "gunicorn.access"
    assert {k: entry[k] for k in ("request_id", "method", "path", "query", "status")} == {
        "request_id": "req-9", "method": "POST", "path": "/p/demo/", "query": "a=1",
        "status": 201,
    }  # fmt: skip
    assert (entry["remote"], entry["bytes"], entry["duration_ms"]) == ("10.0.0.5", 12, 42.0)


def test_log_format_is_text_or_json(monkeypatch):
    monkeypatch.setenv("LOG_FORMAT", "xml")
    with pytest.raises(ImproperlyConfigured, match="LOG_FORMAT"):
        runpy.run_path(str(ROOT / "config" / "settings.py"))


def test_a_gunicorn_worker_sets_its_switch_interval_and_freezes_what_it_loaded(monkeypatch):
    import gc
    import sys

    from config.gunicorn import post_worker_init

    monkeypatch.setenv("SWITCH_INTERVAL_MS", "0.5")
    interval, frozen = sys.getswitchinterval(), gc.get_freeze_count()
    try:
        post_worker_init(None)
        assert sys.getswitchinterval() == 0.0005
        assert gc.get_freeze_count() > frozen  # out of the collector's way (docs/decisions.md)
    finally:
        gc.unfreeze()
        sys.setswitchinterval(interval)
