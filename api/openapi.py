"""The OpenAPI document of the API, written by hand (docs/decisions.md, "The API").

The responses' schemas are the JSON of cli.md; tests/api/test_api_schema.py sends
generated requests to every operation (schemathesis) and checks each answer against them.
"""

from __future__ import annotations

from typing import Any

from ingest.convert import SNAPSHOT_CHARS
from ingest.forms import FORMAT_CHOICES

RUN_ID = r"^[A-Za-z0-9._:-]{1,100}$"  # the bundle's charset (replay.Run)
# ingest.convert.snapshot_name: the bundle schema's length, no control character.
SNAPSHOT_NAME = rf"^[^\u0000-\u001f\u007f]{{0,{SNAPSHOT_CHARS}}}$"
# Any text but a NUL, which every operation refuses with 400 (evidence.middleware): a
# document that allowed it would promise an answer the API cannot give.
TEXT = {"type": "string", "pattern": r"^[^\x00]*$"}
FORMATS = [value for value, _label in FORMAT_CHOICES]

PROPORTION = {
    "description": "k of n with its Wilson 95 % interval; null when n is 0.",
    "oneOf": [
        {"type": "null"},
        {
            "type": "object",
            "required": ["k", "n", "value", "low", "high"],
            "properties": {
                "k": {"type": "integer", "minimum": 0},
                "n": {"type": "integer", "minimum": 1},
                "value": {"type": "number", "minimum": 0, "maximum": 1},
                "low": {"type": "number", "minimum": 0, "maximum": 1},
                "high": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "additionalProperties": False,
        },
    ],
}
P = {"$ref": "#/components/schemas/Proportion"}
COUNT = {"type": "integer", "minimum": 0}
NULLABLE_NUMBER = {"type": ["number", "null"]}
CLAIM_FIGURES = (
    "citation_presence", "support", "support_or_partial", "support_assessed", "coverage",
    "citation_recall", "citation_precision", "honest_misses",
)  # fmt: skip
VERDICTS = {
    "type": "object",
    "required": [
        "supported",
        "partial",
        "unsupported",
        "not_assessable",
        "unreviewed",
        "no_consensus",
    ],  # fmt: skip
    "additionalProperties": COUNT,
}


def _object(required: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "object", "required": list(required), "properties": required} | more


RUN_METRICS = _object(
    {
        "run_id": {"type": "string"},
        "verdicts_from": {"type": "string", "pattern": r"^(default|consensus|annotator:.+)$"},
        "per_response": {
            "type": "array",
            "items": _object(
                {
                    "case_id": {"type": "string"},
                    "status": {"enum": ["reviewed", "unreviewed", "abstention"]},
                    "claims": COUNT,
                    "verdicts": VERDICTS,
                    **dict.fromkeys(CLAIM_FIGURES, P),
                    "invented_over_gap": COUNT,
                    "context_precision": NULLABLE_NUMBER,
                    "prechecks": _object(
                        {
                            "response": {
                                "type": "object",
                                "additionalProperties": {"type": "array"},
                            },
                            "claims": {
                                "type": "object",
                                "additionalProperties": {
                                    "type": "array",
                                    "items": {"type": "string"},
                                },
                            },
                        }
                    ),
                },
                description="Also passage_recall@k, doc_recall@k, fact_evidence_recall@k "
                "(proportions) and hit@k (0, 1 or null) for each k.",
            ),
        },
        "run": _object(
            {
                "responses": COUNT,
                "reviewed": COUNT,
                "unreviewed": COUNT,
                "abstentions": COUNT,
                "claims": COUNT,
                "verdicts": VERDICTS,
                "micro": _object(dict.fromkeys(CLAIM_FIGURES, P)),
                "macro": _object(
                    dict.fromkeys(
                        CLAIM_FIGURES,
                        # null when no case defines the figure
                        _object(
                            {"value": NULLABLE_NUMBER, "cases": COUNT}, type=["object", "null"]
                        ),
                    )
                ),
            }
        ),
    },
    description="cli.md, `run_metrics`.",
)
RUN_AGREEMENT = _object(
    {
        "run_id": {"type": "string"},
        "annotators": {"type": "array", "items": {"type": "string"}},
        "claims": COUNT,
        "raw_agreement": P,
        "cohen_kappa": NULLABLE_NUMBER,
        "krippendorff_alpha": NULLABLE_NUMBER,
        "confusion": {
            "type": ["object", "null"],
            "additionalProperties": {"type": "object", "additionalProperties": COUNT},
        },
        "disagreements": COUNT,
    },
    description="cli.md, `run_agreement`.",
)
SIDE_FIGURES = _object(dict.fromkeys(CLAIM_FIGURES, P))
COMPARISON = _object(
    {
        "run_a": {"type": "string"},
        "run_b": {"type": "string"},
        "verdicts_from": {"type": "string"},
        "pairs": {
            "type": "array",
            "items": _object(
                {
                    "case_id": {"type": "string"},
                    "comparable": {"type": "boolean"},
                    "reasons": {"type": "array", "items": {"type": "string"}},
                    "facts": {
                        "type": "object",
                        "additionalProperties": _object(
                            {
                                "a": {"type": "string"},
                                "b": {"type": "string"},
                                "change": {"type": "string"},
                            }
                        ),
                    },
                    "claims": _object(
                        {
                            "matched": {
                                "type": "array",
                                "items": {
                                    "type": "array",
                                    "items": {"type": "string"},
                                    "minItems": 2,
                                    "maxItems": 2,
                                },
                            },
                            "only_a": {"type": "array", "items": {"type": "string"}},
                            "only_b": {"type": "array", "items": {"type": "string"}},
                        }
                    ),
                }
            ),
        },
        "left_out": COUNT,
        "metrics": _object(
            {
                "a": SIDE_FIGURES,
                "b": SIDE_FIGURES,
                "difference": _object(dict.fromkeys(CLAIM_FIGURES, NULLABLE_NUMBER)),
                "pairs": COUNT,
            }
        ),
    },
    description="cli.md, `compare_runs`.",
)
PROJECTS = _object(
    {
        "projects": {
            "type": "array",
            "items": _object(
                {
                    "slug": {"type": "string"},
                    "name": {"type": "string"},
                    "role": {"enum": ["reviewer", "lead", "admin"]},
                }
            ),
        }
    }
)
RUNS = _object(
    {
        "project": {"type": "string"},
        "runs": {
            "type": "array",
            "items": _object(
                {
                    "run_id": {"type": "string", "pattern": RUN_ID},
                    "label": {"type": "string"},
                    "created_at": {"type": "string", "format": "date-time"},
                    "imported_at": {"type": "string", "format": "date-time"},
                    "baseline_run_id": {"type": ["string", "null"]},
                    "snapshot": {"type": "string"},
                    "responses": COUNT,
                    "reviewed": COUNT,
                    "claims": COUNT,
                }
            ),
        },
    }
)
NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}
NULLABLE_PATH = {"type": ["string", "null"]}
JOB = _object(
    {
        "code": {"type": "string", "format": "uuid"},
        "kind": {"enum": ["import", "export"]},
        "state": {"enum": ["queued", "running", "done", "failed"]},
        "project": {"type": "string"},
        "requested_by": {"type": ["string", "null"]},
        "options": {"type": "object", "description": "What was asked, as the request said it."},
        "created_at": {"type": "string", "format": "date-time"},
        "started_at": NULLABLE_TIME,
        "finished_at": NULLABLE_TIME,
        "progress": _object(
            {
                "size_bytes": {"type": ["integer", "null"], "minimum": 0},
                "bytes_read": COUNT,
                "lines_read": COUNT,
                "cases_stored": COUNT,
                "percent": {"type": ["integer", "null"], "minimum": 0, "maximum": 100},
            }
        ),
        "errors": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Why a failed job stored nothing: an import's `line N: …` problems.",
        },
        "result": {
            "type": "object",
            "description": "A done import's summary (`run_id`, counts), a done export's "
            "`package_id` and `runs`; empty before.",
            "properties": {
                "run_id": {"type": "string"},
                "package_id": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            },
        },
        "links": _object(
            {
                "self": {"type": "string"},
                "page": {"type": "string"},
                "metrics": {**NULLABLE_PATH, "description": "The imported run's figures."},
                "package": {**NULLABLE_PATH, "description": "The export's package, once done."},
            }
        ),
    },
    description="A bundle import or an audit export, run by a worker.",
)
ERROR = _object({"error": {"type": "string"}})


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _ok(schema: str) -> dict[str, Any]:
    return {
        "description": "OK",
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
    }


UNAUTHORIZED = _error("No token, or one that is revoked or was never issued.")
NOT_FOUND = _error("No such project for this token's user (outsiders too), or no such run.")
BLIND = _error("The project reviews blind and the user is a reviewer, not a lead.")
LEAD_ONLY = _error("The token's user is a member but not a lead of the project.")
NO_JOB = _error("No such project for this token's user (outsiders too), or no such job in it.")
BUSY = _error("The database did not take the job (on SQLite: busy with another import).")
BAD = _error(
    "A query parameter is wrong (the message says which), or holds a NUL character, which "
    "every operation refuses."
)


def _parameter(name: str, where: str, schema: dict, example: str = "", **more: Any) -> dict:
    parameter = {"name": name, "in": where, "schema": schema, **more}
    if where == "path":
        parameter["required"] = True
    if example:
        parameter["example"] = example
    return parameter


# A job's code in the examples (tests/api/test_api_schema.py makes a done export of it).
EXAMPLE_JOB = "00000000-0000-4000-8000-00000000e0a1"
SLUG = _parameter("slug", "path", {"type": "string", "pattern": r"^[-a-zA-Z0-9_]{1,50}$"}, "demo")
RUN = _parameter("run_id", "path", {"type": "string", "pattern": RUN_ID}, "q017-r1")
SOURCE = _parameter(
    "source",
    "query",
    {
        "anyOf": [
            {"enum": ["default", "consensus"]},
            {"type": "string", "pattern": r"^annotator:[^\x00]{1,150}$"},  # no NUL: 400
        ]
    },
    description="Whose verdicts the figures use, as `verdicts_from` says: `default`, "
    "`consensus` (`--consensus`) or `annotator:NAME` (`--annotator NAME`; "
    "`annotator:imported:NAME` for an imported annotator whose name is also an account's).",
)


def _get(summary: str, parameters: list[dict], ok: str, *errors: tuple[str, dict]) -> dict:
    return {
        "get": {
            "summary": summary,
            "operationId": ok[0].lower() + ok[1:],
            "parameters": parameters,
            "responses": {"200": _ok(ok), "400": BAD, "401": UNAUTHORIZED, **dict(errors)},
        }
    }


def _queue(summary: str, operation: str, parameters: list[dict], **more: Any) -> dict:
    """A POST that queues a job: 202 with the job, its URL in Location; a lead's only."""
    queued = _ok("Job") | {
        "description": "Queued: the job as it is now; poll its `links.self` until it is over.",
        "headers": {
            "Location": {
                "description": "The job's URL (its `links.self`).",
                "required": True,
                "schema": {"type": "string"},
            }
        },
    }
    responses = {
        "202": queued, "400": BAD, "401": UNAUTHORIZED, "403": LEAD_ONLY, "404": NOT_FOUND,
        **more.pop("errors", {}), "503": BUSY,
    }  # fmt: skip
    return {
        "post": {
            "summary": summary,
            "operationId": operation,
            "parameters": parameters,
            **more,
            "responses": responses,
        }
    }


def _flag(name: str, description: str) -> dict:
    return _parameter(name, "query", {"type": "boolean"}, description=description)


BUNDLE_BODY = {"type": "string", "format": "binary"}
CODE = _parameter("code", "path", {"type": "string", "format": "uuid"}, EXAMPLE_JOB)


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document served at /api/openapi.json."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Evidence Review API",
            "version": "1",
            "description": "For pipelines (docs/api.md). Every request carries a token: "
            "`Authorization: Bearer evr_…`, made on the account page or by "
            "`manage.py api_token USERNAME`. A token acts as its user, with their projects "
            "and roles; session cookies are not accepted.",
        },
        "servers": [{"url": "/api"}],
        "security": [{"token": []}],
        "paths": {
            "/projects": _get("The projects of the token's user.", [], "Projects"),
            "/projects/{slug}/runs": _get(
                "A project's runs, newest import first.", [SLUG], "Runs", ("404", NOT_FOUND)
            ),
            "/projects/{slug}/runs/{run_id}/metrics": _get(
                "A run's figures, as `run_metrics --json`.",
                [SLUG, RUN, SOURCE],
                "RunMetrics",
                ("403", BLIND),
                ("404", NOT_FOUND),
            ),
            "/projects/{slug}/runs/{run_id}/agreement": _get(
                "Agreement between annotators on a run's claims, as `run_agreement --json`.",
                [
                    SLUG,
                    RUN,
                    _parameter(
                        "annotators",
                        "query",
                        {"type": "array", "items": TEXT | {"maxLength": 150}},
                        description="Default: all who labelled any claim of the run.",
                        style="form",
                        explode=True,
                    ),
                ],
                "RunAgreement",
                ("403", BLIND),
                ("404", NOT_FOUND),
            ),
            "/projects/{slug}/compare": _get(
                "Run A (before) against run B (after), as `compare_runs --json`.",
                [
                    SLUG,
                    *(
                        _parameter(side, "query", RUN["schema"], example, required=True)
                        for side, example in [("a", "q017-r1"), ("b", "q017-r2")]
                    ),
                    SOURCE,
                ],
                "Comparison",
                ("403", BLIND),
                ("404", NOT_FOUND),
            ),
            "/projects/{slug}/imports": _queue(
                "Import a bundle (the upload page): the body is the file, as it is.",
                "importBundle",
                [
                    SLUG,
                    _flag("dry_run", "Check only: validate everything, store nothing."),
                    _flag(
                        "new_expectation_versions",
                        "Record changed case expectations as new versions.",
                    ),
                    _parameter(
                        "format",
                        "query",
                        {"enum": FORMATS},
                        description="The body's format; any but `bundle` is converted first "
                        "(docs/import-formats.md). Default: bundle.",
                    ),
                    _parameter(
                        "run_id",
                        "query",
                        RUN["schema"],
                        description="A converted file's run id (default: `api-upload`).",
                    ),
                    _parameter(
                        "snapshot",
                        "query",
                        {"type": "string", "pattern": SNAPSHOT_NAME},
                        description="A converted file's collection snapshot (default: the "
                        "format's name; blanks around it are dropped). A text that changed "
                        "since an earlier import needs a snapshot of its own.",
                    ),
                ],
                requestBody={
                    "required": True,
                    "description": "JSON Lines (evidence-bundle/1, or the `format` named), "
                    "plain or gzip-compressed, at most BUNDLE_UPLOAD_MAX_BYTES.",
                    "content": {
                        "application/x-ndjson": {"schema": BUNDLE_BODY},
                        "application/gzip": {"schema": BUNDLE_BODY},
                    },
                },
                errors={
                    "411": _error("The body came without a Content-Length (chunked)."),
                    "413": _error("The body is larger than BUNDLE_UPLOAD_MAX_BYTES."),
                    "415": _error("The body's Content-Type is not one of those listed."),
                },
            ),
            "/projects/{slug}/audit-packages": _queue(
                "Export an audit package (`export_audit`) as a job.",
                "exportAuditPackage",
                [
                    SLUG,
                    _parameter(
                        "runs",
                        "query",
                        {"type": "array", "items": RUN["schema"]},
                        description="The runs to include (as `--run`); default: every run.",
                        style="form",
                        explode=True,
                    ),
                    _parameter(
                        "compare",
                        "query",
                        {"type": "array", "items": RUN["schema"], "minItems": 2, "maxItems": 2},
                        description="Two runs compared in the package, A (before) then B "
                        "(after), as `--compare RUN_A RUN_B`.",
                        style="form",
                        explode=True,
                    ),
                    SOURCE,
                ],
            ),
            "/projects/{slug}/jobs/{code}": {
                "get": {
                    "summary": "A job: its state, progress, errors, result and links.",
                    "operationId": "job",
                    "parameters": [SLUG, CODE],
                    "responses": {
                        "200": _ok("Job"),
                        "400": BAD,
                        "401": UNAUTHORIZED,
                        "403": LEAD_ONLY,
                        "404": NO_JOB,
                    },
                }
            },
            "/projects/{slug}/jobs/{code}/package": {
                "get": {
                    "summary": "A done export's package (the zip `export_audit` writes).",
                    "operationId": "jobPackage",
                    "parameters": [SLUG, CODE],
                    "responses": {
                        "200": {
                            "description": "The package, evidence-audit/1.",
                            "content": {"application/zip": {"schema": BUNDLE_BODY}},
                        },
                        "400": BAD,
                        "401": UNAUTHORIZED,
                        "403": LEAD_ONLY,
                        "404": _error(
                            "No such project or job, or the job made no package (yet): an "
                            "import, or an export not done."
                        ),
                    },
                }
            },
        },
        "components": {
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Proportion": PROPORTION,
                "Error": ERROR,
                "Projects": PROJECTS,
                "Runs": RUNS,
                "RunMetrics": RUN_METRICS,
                "RunAgreement": RUN_AGREEMENT,
                "Comparison": COMPARISON,
                "Job": JOB,
            },
        },
    }
