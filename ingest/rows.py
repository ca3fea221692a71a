"""The rows the import writes: one typed tuple per table, its fields named as the model's.

A row is built by keyword (`PassageRow(id=…, snapshot_id=…)`) and is a plain
tuple in memory, so a batch costs no more than positional tuples would. The
names are the models' field names (`attname`: `snapshot_id` for a foreign
key); `RowWriter.write` maps them to columns, so `_fields` is the one column
list of each COPY or INSERT. Columns with a database default (`created_at` of
passages, cases, …) are left out: the database fills them. JSON columns carry
JSON text (`ingest.bulk.to_json`).
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple


class PassageRow(NamedTuple):
    id: int
    snapshot_id: int
    ref: str
    doc_id: str
    version: str
    chunk_id: str
    text: str
    sha256: str
    title: str
    url: str
    anchor: str
    context_before: str
    context_after: str
    version_status: str
    superseded_by: str
    numbers: str


class CaseRow(NamedTuple):
    id: int
    project_id: int
    case_id: str


class ExpectationRow(NamedTuple):
    id: int
    case_id: int
    version: int
    query: str
    query_id: str
    required_facts: str | None
    relevant_refs: str | None
    known_gaps: str | None
    sha256: str


class ResponseRow(NamedTuple):
    id: int
    run_id: int
    case_id: int
    expectation_id: int
    position: int
    answer_id: str
    text: str
    abstained: bool
    trace: str | None


class RetrievalRow(NamedTuple):
    id: int
    response_id: int
    rank: int
    passage_id: int
    score: float | None
    score_as_imported: str | None  # the bundle's JSON number, as written (1 stays 1)
    filters: str | None


class CitationRow(NamedTuple):
    id: int
    response_id: int
    position: int
    marker: str
    passage_id: int
    start: int | None
    end: int | None


class ClaimRow(NamedTuple):
    id: int
    response_id: int
    key: str
    position: int


class ClaimRevisionRow(NamedTuple):
    id: int
    claim_id: int
    seq: int
    text: str
    kind: str
    spans: str | None
    citations: str | None
    facts: str | None
    gaps: str | None
    withdrawn: bool
    reason: str
    author_id: int | None
    annotator: str
    origin: str
    created_at: datetime
    prev_sha256: str | None
    sha256: str


class VerdictRevisionRow(NamedTuple):
    id: int
    claim_id: int
    seq: int
    author_id: int | None
    annotator: str
    origin: str
    association: str
    support: str
    contradicts: bool
    reason: str
    diagnosis: str
    citation_relevance: str | None
    note: str
    stated_at: datetime | None
    supersedes_id: int | None
    created_at: datetime
    prev_sha256: str | None
    sha256: str


class ResponseReviewRow(NamedTuple):
    id: int
    response_id: int
    complete: bool
    author_id: int | None
    annotator: str
    origin: str
