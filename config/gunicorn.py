"""gunicorn's settings for `make serve`, the production shape (`gunicorn -c config/gunicorn.py`).

Sized as docs/performance.md measured best on this kind of machine: one gthread worker per
core, 4 threads each (keep-alive; sync workers close the connection after every answer),
and a 0.5 ms GIL switch interval, so that a save which waited on PostgreSQL does not wait
as long again for the GIL while it holds its claim's lock. SIGTERM stops gracefully:
requests in flight get GRACEFUL_TIMEOUT seconds to finish.
"""

from __future__ import annotations

import os
import sys

_cores = getattr(os, "process_cpu_count", os.cpu_count)() or 1

wsgi_app = "config.wsgi:application"
bind = [os.environ.get("BIND", "127.0.0.1:8443")]
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS") or _cores)
threads = int(os.environ.get("WEB_THREADS") or 4)
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


def post_worker_init(worker) -> None:
    sys.setswitchinterval(float(os.environ.get("SWITCH_INTERVAL_MS") or 0.5) / 1000)
