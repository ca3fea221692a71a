"""Query parameters the API's operations share, read as the commands read their options.

A wrong value is a BadRequest (400) that says which parameter and what it takes.
"""

from __future__ import annotations

import re

from django.core.exceptions import BadRequest
from django.http import HttpRequest

RUN_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")  # the bundle's charset (replay.Run)
TRUE, FALSE = {"true", "1"}, {"false", "0"}


def source_of(request: HttpRequest) -> tuple[str | None, bool]:
    """`?source=default|consensus|annotator:NAME`, the labels of the JSON's `verdicts_from`
    and of the figures page, as the commands' `--annotator NAME` and `--consensus`.

    One parameter, not two: an annotator and the consensus at once would be a request the
    document allows and the API refuses.
    """
    label = request.GET.get("source", "default")
    if label in {"default", "consensus"}:
        return None, label == "consensus"
    if label.startswith("annotator:") and label != "annotator:":
        return label.removeprefix("annotator:"), False
    raise BadRequest("source is default, consensus or annotator:NAME.")


def source_label(request: HttpRequest) -> str | None:
    """`?source=…` as the audit package reads it (`audit.services.audit_package`)."""
    annotator, consensus = source_of(request)
    return f"annotator:{annotator}" if annotator else "consensus" if consensus else None


def flag_of(request: HttpRequest, name: str) -> bool:
    """A check box of the upload page as a parameter: `true`/`1`, `false`/`0` or absent."""
    value = request.GET.get(name, "false").lower()
    if value not in TRUE | FALSE:
        raise BadRequest(f"{name} is true or false.")
    return value in TRUE


def run_id_of(value: str, name: str) -> str:
    if not RUN_ID.fullmatch(value):
        raise BadRequest(f"{name} holds 1 to 100 letters, digits, dots, _, : or -.")
    return value
