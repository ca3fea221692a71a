"""The cross-line rules of a bundle: what each line must satisfy, given the lines before it.

The schema (`ingest.bundle`) judges a line alone; these rules judge what one
line cannot know by itself: a ref declared on an earlier line, one response
per case, ranks 1..n, offsets inside the answer, judgements that fit their
claim. A broken rule is reported and reading goes on, so one pass finds up to
MAX_PROBLEMS problems.

What the rules accept is remembered for the lines after it, in two parts: this
batch's lines here, in dicts, and the lines of batches already flushed in the
import's temporary tables (`ingest.seen`), so memory does not grow with the
bundle. A line's question about an earlier batch (a ref, its case, its case's
first response, whether its passage or case was declared before) waits for the
flush, which asks the tables once for the whole batch (`Rules.settle`); the
problem it finds takes the place in the report its line gave it, so the report
reads as if every check had been made on the spot. `ingest.writer` stores what
was accepted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from cards.models import Diagnosis, Support
from cards.rules import association_problem
from evidence.canonical import text_sha256
from evidence.expectations import expectation_document, expectation_sha256
from evidence.models import Project
from ingest.bundle import DEFAULT_LIMITS, MAX_PROBLEMS, SCHEMA_NAME, Limits, Problem
from ingest.schema import storable_time_problem
from ingest.seen import Seen


class StopReading(Exception):
    """More than MAX_PROBLEMS were found: reading stops, and the first of them are the answer."""


class Problems:
    """The problems found so far, each at its place in the report.

    A place is the order a check comes in: line by line, and within a line check
    by check. A check only a flush can make takes its place (`place()`) when its
    line is read. Reading stops once more than MAX_PROBLEMS are known, except
    during a flush and after reading, whose checks are all made: the report is
    the first MAX_PROBLEMS by place, as if each problem had been found on the spot.
    """

    def __init__(self) -> None:
        self.found: list[tuple[int, Problem]] = []
        self.places = 0
        self.capped = True  # StopReading past the cap (not during a flush, nor after reading)
        self.last: list[Problem] = []  # what ended reading: shown last, even past the cap

    def __bool__(self) -> bool:
        return bool(self.found or self.last)

    def place(self) -> int:
        self.places += 1
        return self.places

    def add(self, line: int, path: str, message: str, *, place: int | None = None) -> None:
        self.found.append((self.place() if place is None else place, Problem(line, path, message)))
        if self.capped and self.over():
            raise StopReading

    def over(self) -> bool:
        return len(self.found) > MAX_PROBLEMS

    @contextmanager
    def uncapped(self) -> Iterator[None]:
        capped, self.capped = self.capped, False
        try:
            yield
        finally:
            self.capped = capped

    def last_word(self, problem: Problem) -> None:
        """A problem that ends reading is always shown, even past the cap."""
        self.last.append(problem)

    def report(self) -> tuple[list[Problem], bool]:
        """The problems to show, in the order of the bundle, and whether some were left out."""
        ordered = sorted(self.found, key=lambda item: item[0])
        shown = [problem for _, problem in ordered[:MAX_PROBLEMS]]
        truncated = len(ordered) > MAX_PROBLEMS
        for problem in self.last:
            if len(shown) >= MAX_PROBLEMS:
                truncated = True
                del shown[MAX_PROBLEMS - 1 :]
            shown.append(problem)
        return shown, truncated


@dataclass(slots=True)
class RefUse:
    """A ref this batch had not declared when a line used it: an earlier batch's, or none."""

    line: int
    place: int
    path: str
    ref: str


@dataclass(slots=True)
class Held:
    """A case or response line waiting for the flush to say whether its key was taken before.

    Its checks are made as it is read, but their problems are held: when its case
    was declared on an earlier batch's line (or, for a response, is undeclared or
    answered already) that is the line's one problem, as when the rule is broken
    within a batch.
    """

    line: int
    problems: list[tuple[int, Problem]] = field(default_factory=list)
    refs: list[RefUse] = field(default_factory=list)
    # (place, path, "fact" or "gap", id): a response's claim, checked once its case is found
    ids: list[tuple[int, str, str, str]] = field(default_factory=list)


@dataclass(slots=True)
class PassageSeen:
    line: int
    place: int  # of "declared twice", should an earlier batch have declared it
    ref: str
    sha256: str
    data: dict  # the line
    pk: int | None = None


@dataclass(slots=True)
class CaseSeen:
    line: int
    place: int  # of "declared twice", should an earlier batch have declared it
    case_id: str
    document: dict | None  # None for a case of an earlier batch
    sha256: str
    fact_ids: frozenset[str]
    gap_ids: frozenset[str]
    query_id: str
    pk: int | None = None
    expectation_pk: int | None = None
    held: Held | None = None  # None once settled, and for a case of an earlier batch


@dataclass(slots=True)
class ResponseSeen:
    line: int
    place: int  # of a problem with its case: undeclared, or answered in an earlier batch
    position: int
    data: dict
    case: CaseSeen | None  # None until the flush finds it in an earlier batch
    held: Held


@dataclass(slots=True)
class Batch:
    """What one batch's lines passed, ready to store; `Rules.settle` makes it."""

    passages: list[PassageSeen]
    cases: list[CaseSeen]
    responses: list[ResponseSeen]
    answered: dict[str, int]  # case_id → line of its response
    earlier_refs: set[str]  # refs the lines use that earlier batches declared


class Rules:
    """The rules, and what they remember of this batch's lines (earlier ones: `ingest.seen`)."""

    def __init__(self, *, problems: Problems, limits: Limits = DEFAULT_LIMITS) -> None:
        self.problems = problems
        self.problem: Callable[[int, str, str], None] = problems.add
        self.limits = limits
        self.passages: dict[str, PassageSeen] = {}
        self.cases: dict[str, CaseSeen] = {}
        self.responses: list[ResponseSeen] = []
        self.responded: dict[str, int] = {}  # case_id → line of its response
        self.refs: list[RefUse] = []  # where `declared` notes a ref it cannot settle
        self.answered = 0  # responses so far, for their positions

    @contextmanager
    def holding(self, held: Held) -> Iterator[None]:
        """Report the problems of the line being read, and the refs it uses, into `held`."""

        def hold(line: int, path: str, message: str) -> None:
            held.problems.append((self.problems.place(), Problem(line, path, message)))

        self.problem, self.refs = hold, held.refs
        try:
            yield
        finally:
            self.problem, self.refs = self.problems.add, []

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

    def declared(self, number: int, path: str, ref: str) -> None:
        """A ref must be declared on an earlier line: this batch's, or one the flush asks about."""
        if ref not in self.passages:
            self.refs.append(RefUse(number, self.problems.place(), path, ref))

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
        seen = PassageSeen(number, self.problems.place(), ref, digest, line)
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
        place, held = self.problems.place(), Held(number)
        with self.holding(held):
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
            place=place,
            case_id=case_id,
            document=document,
            sha256=expectation_sha256(document),
            fact_ids=frozenset(fact_ids),
            gap_ids=frozenset(gap_ids),
            query_id=line.get("query_id", ""),
            held=held,
        )
        self.cases[case_id] = seen
        return seen

    def on_response(self, number: int, line: dict) -> ResponseSeen | None:  # noqa: C901 - one rule per branch
        case_id = line["case_id"]
        case = self.cases.get(case_id)  # None: an earlier batch's case, or undeclared
        place, held = self.problems.place(), Held(number)
        if case is not None and case_id in self.responded:
            first = self.responded[case_id]
            self.problem(
                number, "/case_id", f"case {case_id} already has a response on line {first}"
            )
            return None
        if case is not None:
            self.responded[case_id] = number
        self.answered += 1
        with self.holding(held):
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
                    self.problem(
                        number, f"{path}/claim_id", "claim_id is used twice in this response"
                    )
                claim_ids.add(claim["claim_id"])
                self.check_claim(number, path, claim, text, case, held)
        seen = ResponseSeen(number, place, self.answered, line, case, held)
        self.responses.append(seen)
        return seen

    def settle(self, seen: Seen, *, last: bool) -> Batch:
        """Answer what this batch's lines asked of earlier batches, and hand the batch over.

        One look-up per table for the whole batch, and this batch's passages added
        (which finds those an earlier batch declared). What an earlier batch declared
        or answered is refused here; a held line whose key passes has its held
        problems reported, at their places.
        """
        passages = list(self.passages.values())
        cases = list(self.cases.values())
        responses = self.responses
        held = [item.held for item in (*cases, *responses) if item.held is not None]
        earlier = seen.passages({use.ref for h in held for use in h.refs})
        earlier_cases = seen.cases(
            {c.case_id for c in cases} | {r.data["case_id"] for r in responses if r.case is None}
        )
        earlier_answers = seen.responses({r.data["case_id"] for r in responses})
        # The last batch of an import of one batch has nothing to be checked against.
        taken = {}
        if seen.created or not last:
            taken = seen.add_passages([(p.ref, p.line) for p in passages])
        add = self.problems.add

        for passage in passages:
            if (first := taken.get(passage.ref)) is not None:
                add(
                    passage.line,
                    "/ref",
                    f"passage {passage.ref} is declared twice (first on line {first})",
                    place=passage.place,
                )
        kept_cases = []
        for case in cases:
            if case.case_id in earlier_cases:
                first = earlier_cases[case.case_id].line
                add(
                    case.line,
                    "/case_id",
                    f"case {case.case_id} is declared twice (first on line {first})",
                    place=case.place,
                )
                continue
            if case.held is not None:
                self.release(case.held, earlier, None)
                case.held = None
            kept_cases.append(case)
        kept_responses = []
        answered: dict[str, int] = {}
        for response in responses:  # in the order of their lines
            case_id, place = response.data["case_id"], response.place
            if response.case is None:
                stored = earlier_cases.get(case_id)
                if stored is None:
                    add(
                        response.line,
                        "/case_id",
                        f"case {case_id} is not declared on an earlier line",
                        place=place,
                    )
                    continue
                response.case = CaseSeen(
                    line=stored.line, place=0, case_id=case_id, document=None, sha256="",
                    fact_ids=stored.fact_ids, gap_ids=stored.gap_ids, query_id="",
                    pk=stored.pk, expectation_pk=stored.expectation_pk,
                )  # fmt: skip
            first = earlier_answers.get(case_id, answered.get(case_id))
            if first is not None:
                add(
                    response.line,
                    "/case_id",
                    f"case {case_id} already has a response on line {first}",
                    place=place,
                )
                continue
            answered[case_id] = response.line
            self.release(response.held, earlier, response.case)
            kept_responses.append(response)
        return Batch(
            passages=[p for p in passages if p.ref not in taken],
            cases=kept_cases,
            responses=kept_responses,
            answered=answered,
            earlier_refs=set(earlier),
        )

    def release(self, held: Held, earlier: dict[str, int], case: CaseSeen | None) -> None:
        """Report a held line's problems, and those of its refs and ids now answerable."""
        add = self.problems.add
        for place, problem in held.problems:
            add(problem.line, problem.path, problem.message, place=place)
        for use in held.refs:
            if use.ref not in earlier:
                add(use.line, use.path, _undeclared(use.ref), place=use.place)
        for place, path, kind, value in held.ids:
            if case is not None and (message := _unknown_id(case, kind, value)):
                add(held.line, path, message, place=place)

    def remember(self, seen: Seen, batch: Batch) -> None:
        """Keep what this batch accepted for the batches after it (its passages already are)."""
        seen.add_cases(
            [
                (c.case_id, c.line, c.pk, c.expectation_pk, c.fact_ids, c.gap_ids)
                for c in batch.cases
            ]
        )
        seen.add_responses(list(batch.answered.items()))

    def next_batch(self) -> None:
        self.passages, self.cases, self.responses, self.responded = {}, {}, [], {}

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

    def check_claim(  # noqa: C901
        self, number: int, path: str, claim: dict, text: str, case: CaseSeen | None, held: Held
    ) -> None:
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
        for kind, key in (("fact", "facts"), ("gap", "gaps")):
            for j, value in enumerate(claim.get(key, [])):
                if case is None:  # an earlier batch's case, or none: the flush checks
                    held.ids.append((self.problems.place(), f"{path}/{key}/{j}", kind, value))
                elif message := _unknown_id(case, kind, value):
                    self.problem(number, f"{path}/{key}/{j}", message)
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


def _undeclared(ref: str) -> str:
    return f"passage {ref} is not declared on an earlier line"


def _unknown_id(case: CaseSeen, kind: str, value: str) -> str | None:
    """A claim's fact or gap id that its case does not have."""
    if kind == "fact":
        if value not in case.fact_ids:
            return f"case {case.case_id} has no required fact {value}"
    elif value not in case.gap_ids:
        return f"case {case.case_id} has no known gap {value}"
    return None


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
