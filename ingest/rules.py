"""The cross-line rules of a bundle: what each line must satisfy, given the lines before it.

The schema (`ingest.bundle`) judges a line alone; these rules judge what one
line cannot know by itself: a ref declared on an earlier line, one response
per case, ranks 1..n, offsets inside the answer, judgements that fit their
claim. A broken rule is reported and reading goes on, so one pass finds up to
MAX_PROBLEMS problems. What the rules accept is remembered (refs, cases, fact
and gap ids) for the lines after it; `ingest.writer` stores it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from cards.models import Diagnosis, Support
from cards.rules import association_problem
from evidence.canonical import text_sha256
from evidence.expectations import expectation_document, expectation_sha256
from evidence.models import Project
from ingest.bundle import DEFAULT_LIMITS, MAX_PROBLEMS, SCHEMA_NAME, Limits, Problem
from ingest.schema import storable_time_problem


class StopReading(Exception):
    """MAX_PROBLEMS were found: reading stops, and those are the answer."""


class Problems:
    """The problems found so far, capped at MAX_PROBLEMS."""

    def __init__(self) -> None:
        self.found: list[Problem] = []
        self.truncated = False

    def __bool__(self) -> bool:
        return bool(self.found)

    def add(self, line: int, path: str, message: str) -> None:
        if len(self.found) >= MAX_PROBLEMS:
            self.truncated = True
            raise StopReading
        self.found.append(Problem(line, path, message))

    def last_word(self, problem: Problem) -> None:
        """A problem that ends reading is always shown, even past the cap."""
        if len(self.found) >= MAX_PROBLEMS:
            self.truncated = True
            del self.found[MAX_PROBLEMS - 1 :]
        self.found.append(problem)


@dataclass(slots=True)
class PassageSeen:
    line: int
    ref: str
    sha256: str
    data: dict | None  # the line, until it is stored
    pk: int | None = None


@dataclass(slots=True)
class CaseSeen:
    line: int
    case_id: str
    document: dict | None  # until it is stored
    sha256: str
    fact_ids: frozenset[str]
    gap_ids: frozenset[str]
    query_id: str
    pk: int | None = None
    expectation_pk: int | None = None


@dataclass(slots=True)
class ResponseSeen:
    line: int
    position: int
    data: dict
    case: CaseSeen


class Rules:
    """The rules, and what they remember of the lines read so far."""

    def __init__(self, *, problems: Problems, limits: Limits = DEFAULT_LIMITS) -> None:
        self.problem = problems.add
        self.limits = limits
        self.passages: dict[str, PassageSeen] = {}
        self.cases: dict[str, CaseSeen] = {}
        self.responded: dict[str, int] = {}  # case_id → line of its response

    def on_run(self, number: int, line: dict, *, first: bool, project: Project | None) -> bool:
        """Whether the run line is taken: the import then has a run to store lines into."""
        if not first:
            self.problem(number, "/kind", "a bundle holds exactly one run, on its first line")
            return False
        if line["schema"] != SCHEMA_NAME:  # the schema's const already says so; kept explicit
            self.problem(number, "/schema", f"only {SCHEMA_NAME} is understood")
            return False
        run_id = line["run_id"]
        if set(run_id) <= {"."}:
            self.problem(number, "/run_id", "a run id of dots only cannot name a file or folder")
            return False
        if project is not None and project.runs.filter(run_id=run_id).exists():
            self.problem(
                number,
                "/run_id",
                f"run {run_id!r} already exists in project {project.slug!r}; runs are "
                "never overwritten or extended: give the replay a new run_id",
            )
            return False
        if line.get("baseline_run_id") == run_id:
            self.problem(number, "/baseline_run_id", "a run cannot be its own baseline")
        if problem := storable_time_problem(line["created_at"]):
            self.problem(number, "/created_at", problem)
        self.check_verbatim(number, "/system", line["system"])
        return True

    def declared(self, number: int, path: str, ref: str) -> PassageSeen | None:
        seen = self.passages.get(ref)
        if seen is None:
            self.problem(number, path, f"passage {ref} is not declared on an earlier line")
        return seen

    def on_passage(self, number: int, line: dict) -> PassageSeen | None:
        ref = line["ref"]
        joined = f"{line['doc_id']}@{line['version']}#{line['chunk_id']}"
        if ref != joined:
            self.problem(number, "/ref", f"must equal doc_id@version#chunk_id ({joined})")
            return None
        if len(line["text"]) > self.limits.passage_chars:
            self.problem(
                number,
                "/text",
                f"is {len(line['text']):,} characters; a passage may hold at most "
                f"{self.limits.passage_chars:,} (BUNDLE_MAX_PASSAGE_CHARS)",
            )
            return None
        digest = text_sha256(line["text"])
        if "sha256" in line and line["sha256"] != digest:
            self.problem(number, "/sha256", f"does not match the text, whose SHA-256 is {digest}")
            return None
        if ref in self.passages:
            first = self.passages[ref].line
            self.problem(
                number, "/ref", f"passage {ref} is declared twice (first on line {first})"
            )
            return None
        seen = PassageSeen(number, ref, digest, line)
        self.passages[ref] = seen
        return seen

    def on_case(self, number: int, line: dict) -> CaseSeen | None:
        case_id = line["case_id"]
        if case_id in self.cases:
            first = self.cases[case_id].line
            self.problem(
                number, "/case_id", f"case {case_id} is declared twice (first on line {first})"
            )
            return None
        facts = line.get("required_facts", [])
        fact_ids: set[str] = set()
        evidence_refs: list[str] = []
        for i, fact in enumerate(facts):
            if fact["fact_id"] in fact_ids:
                self.problem(number, f"/required_facts/{i}/fact_id", "fact_id is used twice")
            fact_ids.add(fact["fact_id"])
            for j, ref in enumerate(fact.get("evidence", [])):
                self.declared(number, f"/required_facts/{i}/evidence/{j}", ref)
                evidence_refs.append(ref)
        if "relevant_refs" in line:
            for j, ref in enumerate(line["relevant_refs"]):
                self.declared(number, f"/relevant_refs/{j}", ref)
            relevant = list(dict.fromkeys(line["relevant_refs"]))
        else:
            relevant = list(dict.fromkeys(evidence_refs))
        gap_ids: set[str] = set()
        for i, gap in enumerate(line.get("known_gaps", [])):
            if gap["gap_id"] in gap_ids:
                self.problem(number, f"/known_gaps/{i}/gap_id", "gap_id is used twice")
            gap_ids.add(gap["gap_id"])
        document = expectation_document(
            query=line["query"],
            required_facts=facts,
            relevant_refs=relevant,
            known_gaps=line.get("known_gaps", []),
        )
        seen = CaseSeen(
            line=number,
            case_id=case_id,
            document=document,
            sha256=expectation_sha256(document),
            fact_ids=frozenset(fact_ids),
            gap_ids=frozenset(gap_ids),
            query_id=line.get("query_id", ""),
        )
        self.cases[case_id] = seen
        return seen

    def on_response(self, number: int, line: dict) -> ResponseSeen | None:  # noqa: C901 - one rule per branch
        case_id = line["case_id"]
        case = self.cases.get(case_id)
        if case is None:
            self.problem(number, "/case_id", f"case {case_id} is not declared on an earlier line")
            return None
        if case_id in self.responded:
            first = self.responded[case_id]
            self.problem(
                number, "/case_id", f"case {case_id} already has a response on line {first}"
            )
            return None
        self.responded[case_id] = number
        text: str = line["text"]
        if not text and not line.get("abstained", False):
            self.problem(number, "/text", "is empty, which only an abstained response may be")
        if "trace" in line:
            self.check_verbatim(number, "/trace", line["trace"])
        _integral(line)
        seen_refs: dict[str, int] = {}
        for i, item in enumerate(line["retrieved"]):
            if "filters" in item:
                self.check_verbatim(number, f"/retrieved/{i}/filters", item["filters"])
            if "score" in item and not _fits_float(item["score"]):
                self.problem(number, f"/retrieved/{i}/score", "is too large for a number")
            if item["rank"] != i + 1:
                self.problem(
                    number,
                    f"/retrieved/{i}/rank",
                    f"is {item['rank']} but must be {i + 1}: ranks follow the list order "
                    "1..n without gaps or repeats",
                )
            if item["ref"] in seen_refs:
                self.problem(
                    number,
                    f"/retrieved/{i}/ref",
                    f"is retrieved twice (also at rank {seen_refs[item['ref']]})",
                )
            seen_refs[item["ref"]] = i + 1
            self.declared(number, f"/retrieved/{i}/ref", item["ref"])
        for i, citation in enumerate(line.get("citations", [])):
            self.declared(number, f"/citations/{i}/ref", citation["ref"])
            self.check_marker(number, i, citation, text)
        claim_ids: set[str] = set()
        for i, claim in enumerate(line.get("claims", [])):
            path = f"/claims/{i}"
            if claim["claim_id"] in claim_ids:
                self.problem(number, f"{path}/claim_id", "claim_id is used twice in this response")
            claim_ids.add(claim["claim_id"])
            self.check_claim(number, path, claim, text, case)
        return ResponseSeen(number, len(self.responded), line, case)

    def check_verbatim(self, number: int, path: str, value: dict) -> None:
        """An object stored verbatim (a trace, the run's system, filters) within its limit."""
        # Measured as it would be stored (ingest.bulk.to_json): the raw line can be larger
        # (spaces, escapes) or smaller (`1e9` is stored as 1000000000.0).
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
        if size > self.limits.verbatim_bytes:
            self.problem(
                number,
                path,
                f"is {size:,} bytes as stored; an object kept verbatim may hold at most "
                f"{self.limits.verbatim_bytes:,} (BUNDLE_MAX_VERBATIM_BYTES)",
            )

    def check_marker(self, number: int, i: int, citation: dict, text: str) -> None:
        start, end = citation.get("start"), citation.get("end")
        path = f"/citations/{i}"
        if (start is None) != (end is None):
            self.problem(number, path, "start and end come together, or not at all")
        elif start is not None:
            if not start <= end <= len(text):
                self.problem(
                    number,
                    f"{path}/end",
                    f"offsets {start}..{end} are outside the text (length {len(text)})",
                )
            elif text[start:end] != citation["marker"]:
                found = text[start:end][:40]
                self.problem(
                    number,
                    f"{path}/marker",
                    f"text[{start}:{end}] is {found!r}, not the marker {citation['marker']!r}",
                )

    def check_claim(self, number: int, path: str, claim: dict, text: str, case: CaseSeen) -> None:  # noqa: C901
        for j, (start, end) in enumerate(claim.get("spans", [])):
            if not start < end <= len(text):
                self.problem(
                    number,
                    f"{path}/spans/{j}",
                    f"span {start}..{end} is empty or outside the text (length {len(text)})",
                )
        cited = claim.get("citations", [])
        for j, ref in enumerate(cited):
            self.declared(number, f"{path}/citations/{j}", ref)
        for j, fact_id in enumerate(claim.get("facts", [])):
            if fact_id not in case.fact_ids:
                self.problem(
                    number,
                    f"{path}/facts/{j}",
                    f"case {case.case_id} has no required fact {fact_id}",
                )
        for j, gap_id in enumerate(claim.get("gaps", [])):
            if gap_id not in case.gap_ids:
                self.problem(
                    number, f"{path}/gaps/{j}", f"case {case.case_id} has no known gap {gap_id}"
                )
        for j, judgement in enumerate(claim.get("judgements", [])):
            where = f"{path}/judgements/{j}"
            if "at" in judgement and (problem := storable_time_problem(judgement["at"])):
                self.problem(number, f"{where}/at", problem)
            if "diagnosis" in judgement and judgement["diagnosis"] not in Diagnosis.values:
                self.problem(
                    number,
                    f"{where}/diagnosis",
                    f"{judgement['diagnosis']!r} is not one of: {', '.join(Diagnosis.values)}",
                )
            if judgement.get("contradicts") and judgement["support"] != Support.UNSUPPORTED:
                self.problem(
                    number, f"{where}/contradicts", "qualifies only an unsupported verdict"
                )
            if problem := association_problem(judgement.get("association"), cited):
                self.problem(number, f"{where}/association", problem)
            for ref in judgement.get("citation_relevance", {}):
                if ref not in cited:
                    self.problem(
                        number,
                        f"{where}/citation_relevance",
                        f"{ref} is not among the claim's citations",
                    )


def _integral(response: dict) -> None:
    """Integers may be written 1.0 (JSON Schema allows it): make them ints before use."""
    for item in response["retrieved"]:
        item["rank"] = int(item["rank"])
    for citation in response.get("citations", ()):
        for key in ("start", "end"):
            if key in citation:
                citation[key] = int(citation[key])
    for claim in response.get("claims", ()):
        claim["spans"] = [[int(a), int(b)] for a, b in claim.get("spans", ())]


def _fits_float(value: float | int) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False
