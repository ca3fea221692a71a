"""gunicorn's settings for `make serve`, the production shape (`gunicorn -c config/gunicorn.py`).

Sized as docs/performance.md measured best on this kind of machine: one gthread worker per
core, 4 threads each (keep-alive; sync workers close the connection after every answer),
and a 0.5 ms GIL switch interval, so that a save which waited on PostgreSQL does not wait
as long again for the GIL while it holds its claim's lock. SIGTERM stops gracefully:
requests in flight get GRACEFUL_TIMEOUT seconds to finish.
"""

from __future__ import annotations

import gc
import os
import sys
import traceback

from gunicorn import glogging

from evidence.logs import JsonFormatter

_cores = getattr(os, "process_cpu_count", os.cpu_count)() or 1

wsgi_app = "config.wsgi:application"
bind = [os.environ.get("BIND", "127.0.0.1:8443")]
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS") or _cores)
threads = int(os.environ.get("WEB_THREADS") or 4)
# How long a stopping server lets its requests finish: enough for an upload handed on by a
# buffering proxy; without one, the longest upload at the client's speed (docs/deploy.md).
graceful_timeout = int(os.environ.get("GRACEFUL_TIMEOUT") or 30)
# The largest upload is streamed to a temporary file as it arrives (ingest.uploads): no
# request should need longer than this between two reads.
timeout = 120
accesslog = "-"
# No control socket: its default path is per user, not per checkout, and nothing here uses it.
control_socket_disable = True
# TLS in gunicorn itself when given a certificate (make serve makes a self-signed one), so
# that the secure cookies, the https redirect and HSTS of production stay on locally.
certfile = os.environ.get("TLS_CERT") or None
keyfile = os.environ.get("TLS_KEY") or None


class JsonLogger(glogging.Logger):
    """gunicorn's lines as JSON objects (LOG_FORMAT=json), as Django's are: its own messages
    through `JsonFormatter`, and an access line with the request's fields and the id the
    application answered with (its `X-Request-ID`)."""

    def setup(self, cfg) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(JsonFormatter())

    def access(self, resp, req, environ, request_time) -> None:
        if not self.access_log_enabled:
            return
        try:
            atoms = self.atoms(resp, req, environ, request_time)
            status = str(atoms["s"])
            fields = {
                "request_id": atoms.get("{x-request-id}o", ""),
                "remote": atoms["h"], "method": atoms["m"], "path": atoms["U"],
                "query": atoms["q"], "status": int(status) if status.isdigit() else status,
                "bytes": atoms["B"], "duration_ms": round(atoms["D"] / 1000, 3),
                "referrer": atoms["f"], "agent": atoms["a"],
            }  # fmt: skip
            self.access_log.info(
                "%s %s %s", atoms["m"], atoms["U"], status, extra={"fields": fields}
            )
        except Exception:  # as gunicorn's own: a line that cannot be written is an error line
            self.error(traceback.format_exc())


if os.environ.get("LOG_FORMAT") == "json":
    logger_class = JsonLogger


def post_worker_init(worker) -> None:
    sys.setswitchinterval(float(os.environ.get("SWITCH_INTERVAL_MS") or 0.5) / 1000)
    # What the worker loaded to start (Django, the apps, some 130,000 objects) lives as long
    # as it does: out of the collector's way, so that a request's collections walk only what
    # requests made. Measured on the case page: 0.52 → 0.27 ms of collection per request.
    gc.freeze()
