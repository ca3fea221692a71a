"""Log lines as JSON objects, each with the id of the request it was written for.

`LOG_FORMAT=json` (config/settings.py) gives Django's handler `JsonFormatter`: every
record of Django, the apps and the worker becomes one JSON object a line; gunicorn's
access and error lines too (config/gunicorn.py). The request id is taken from the
proxy's `X-Request-ID` when it sends a sane one, else made here
(`evidence.middleware.RequestId`), and sent back in the response's `X-Request-ID`.

Standard library only: gunicorn's master loads it before Django is set up.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

# The id of the request this thread serves; "" outside a request.
request_id: ContextVar[str] = ContextVar("request_id", default="")

# What an id from outside may look like: a proxy's (nginx's $request_id is 32 hex digits),
# a UUID, a trace id. Anything else is replaced, so a log line never carries what a client
# made up beyond that.
SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def request_id_from(given: str | None) -> str:
    """The id a request is logged under: the one given if sane, else a new one."""
    if given and SANE_ID.fullmatch(given):
        return given
    return uuid.uuid4().hex


class JsonFormatter(logging.Formatter):
    """One JSON object a record: time (UTC), level, logger, message, request id, process;
    a 4xx or 5xx logged by Django adds its status, an exception its traceback, and a record
    logged with `extra={"fields": {...}}` those fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": request_id.get(),
            "process": record.process,
        }
        status = getattr(record, "status_code", None)
        if status is not None:
            entry["status"] = status
        entry.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)
