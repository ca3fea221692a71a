"""The package's own description: manifest.json, README.txt and schema/cards.schema.json."""

from __future__ import annotations

import hashlib

from audit.package import Package
from audit.zipstream import line
from evidence.canonical import canonical_json, rfc3339

FORMAT = "evidence-audit/1"
GENERATOR = "evidence-review 0.1"


def manifest_bytes(*, package: Package, files: list[dict]) -> bytes:
    """manifest.json: every other file, the chain heads and what is missing, sealed by its own
    `manifest_sha256`. Written last, once every file it lists is known."""
    manifest = {
        "format": FORMAT,
        "generator": GENERATOR,
        "project": package.project.slug,
        "runs": [run.run_id for run in package.runs],
        "compare": [run.run_id for run in package.compare] if package.compare else None,
        "verdicts_from": package.source.label,
        "created_at": rfc3339(package.newest),
        "files": files,
        "chain_heads": package.chain_heads,
        "missing": sorted(set(package.missing)),
    }
    manifest["manifest_sha256"] = hashlib.sha256(canonical_json(manifest)).hexdigest()
    return line(manifest)


README = """Evidence Review audit package (evidence-audit/1)

What is here
  manifest.json               every other file with its size and SHA-256, the chain heads,
                              and missing[]: what the application did not have
  anchor.json                 the package id and chain heads, signed (HMAC-SHA256) with the
                              exporting site's audit key, which the database does not hold
  verify.py                   checks all of it with the Python standard library:
                                python3 verify.py THIS.zip [--id PACKAGE_ID] [--key KEYFILE]
  schema/                     the bundle format the runs came in; the shape of card rows
  fixture/cases.jsonl         each case: query, required facts, relevant refs, known gaps
  fixture/passages.jsonl      every passage an exported response retrieved or cited, as imported
  runs/RUN/run.json           run metadata as imported
  runs/RUN/responses.jsonl    each answer as shown, its citations, abstained flag and trace
  runs/RUN/retrieval.jsonl    the ranked retrieval output
  cards/cards.jsonl, .csv     one row per claim: its verdict with the exact passage text
                              (in the CSV a cell starting with = + - @ gets a ' in front)
  cards/revisions.jsonl       every claim and verdict revision, oldest first (the chains are
                              interleaved, each in order), with prev_sha256 and sha256
                              (canonical JSON, keys sorted)
  metrics/RUN.json            the run's figures (metrics.md)
  replay/A__B.json            the comparison of two runs, when one was asked for

Which verdicts
  The cards show, and the figures count, the verdicts of one source, named in manifest.json
  as verdicts_from (metrics.md): "default" (a lead's adjudication, else the newest verdict
  of a reviewer; imported judgements are not counted), "annotator:NAME" (that annotator's
  newest verdict), or "consensus" (the strict majority of the annotators' newest labels,
  else no_consensus). Every verdict of every source is in cards/revisions.jsonl.

What verify.py proves, and what it does not
  It proves the files are those the manifest lists, unchanged, that every passage text
  matches its hash and that every revision chain is intact. A verdict is a person's
  judgement on the visible evidence, not a guarantee of truth. A package rebuilt whole,
  hashes included, is detected only against the package id (the SHA-256 of manifest.json)
  recorded when it was exported: pass it with --id, or against the signature of
  anchor.json: pass the audit key's file with --key (whoever holds the key can sign).
"""

CARDS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "One row of cards/cards.jsonl (evidence-audit/1)",
    "type": "object",
    "required": [
        "run_id",
        "snapshot",
        "case_id",
        "claim_id",
        "text",
        "kind",
        "citations",
        "support",
        "reason",
        "prechecks",
    ],  # fmt: skip
    "properties": {
        "run_id": {"type": "string"},
        "snapshot": {"type": "string"},
        "case_id": {"type": "string"},
        "claim_id": {"type": "string"},
        "text": {"type": "string"},
        "kind": {"enum": ["factual", "abstention"]},
        "withdrawn": {"type": "boolean"},
        "spans": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "citations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "ref": {"type": "string"},
                    "text": {"type": ["string", "null"]},
                    "sha256": {"type": ["string", "null"]},
                },
            },
        },
        "facts": {"type": "array", "items": {"type": "string"}},
        "gaps": {"type": "array", "items": {"type": "string"}},
        "association": {"enum": ["attached", "missing", None]},
        "support": {
            "enum": ["supported", "partial", "unsupported", "not_assessable", "no_consensus", None]
        },
        "contradicts": {"type": ["boolean", "null"]},
        "reason": {"type": ["string", "null"]},
        "diagnosis": {"type": ["string", "null"]},
        "note": {"type": ["string", "null"]},
        "reviewer": {"type": ["string", "null"]},
        "origin": {"enum": ["review", "adjudication", "imported", None]},
        "judged_at": {"type": ["string", "null"]},
        "prechecks": {"type": "array", "items": {"type": "string"}},
    },
}
