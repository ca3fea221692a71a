"""Every class of bad bundle gets its own clear message, and stores nothing.

Bad bundles are built from a good fixture (q017-r1: a run, two passages, a
case and a response with four judged claims) by changing one thing, so each
test shows exactly what is wrong with its input.

q017-r1, line by line: 1 run, 2 passage D-01@returns-v4#p04, 3 passage
D-02@refunds-v2#p07, 4 case Q-017 (facts G1 G2 G3, gap X1), 5 response.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable
from unittest import mock

import pytest

from evidence.canonical import text_sha256
from evidence.models import Expectation, Passage, Project
from ingest import bundle
from ingest.services import BundleInvalid, bundle_import
from replay.models import Response, Retrieval, Run
from tests.conftest import FIXTURES, bundle_bytes, import_bytes, import_fixture, row_counts

FIXTURE = "q017-r1.jsonl"
D01 = "D-01@returns-v4#p04"
D02 = "D-02@refunds-v2#p07"
UNDECLARED = "D-09@faq-v1#p01"
STOPPED = "… stopped after 50 problems; fix these and import again"


def good(name: str = FIXTURE) -> list[dict]:
    """The lines of a fixture bundle as dicts, fresh for each caller to change."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def changed(line_number: int, change: Callable[[dict], object], name: str = FIXTURE) -> bytes:
    """The fixture's bytes with one line (1-based) changed in place by `change`."""
    lines = good(name)
    change(lines[line_number - 1])
    return bundle_bytes(*lines)


def refused(data: bytes, **kwargs) -> BundleInvalid:
    """Import `data`, expect a refusal, and check that no table gained or lost a row.

    Then again with every line a batch of its own, so that every rule is checked
    against lines of earlier batches (kept in `ingest.seen`'s tables, not in
    memory): the answer must be the same, problem for problem, in the same order.
    """
    before = row_counts()
    with pytest.raises(BundleInvalid) as info:
        import_bytes(data, **kwargs)
    assert row_counts() == before
    with (
        mock.patch.multiple(
            "ingest.services",
            FLUSH_EVERY_RESPONSES=1,
            FLUSH_EVERY_PASSAGES=1,
            FLUSH_EVERY_BYTES=1,
        ),
        pytest.raises(BundleInvalid) as line_by_line,
    ):
        import_bytes(data, **kwargs)
    assert line_by_line.value.lines() == info.value.lines()
    assert row_counts() == before
    return info.value


def response_json(change: Callable[[dict], object] | None = None) -> str:
    """Line 5 of the fixture as JSON text, for tests that corrupt the text itself."""
    response = good()[4]
    if change is not None:
        change(response)
    return json.dumps(response, ensure_ascii=False)


def with_line_5(raw: str | bytes) -> bytes:
    """The fixture with its response line replaced by raw text (nothing refers to line 5)."""
    head = bundle_bytes(*good()[:4])
    return head + (raw if isinstance(raw, bytes) else raw.encode("utf-8")) + b"\n"


def extra_passage(**changes) -> dict:
    """A sixth line, an unreferenced passage (D-03), valid until `changes` are applied.

    Its sha256 follows a changed text unless `changes` sets one.
    """
    passage = {
        "kind": "passage",
        "ref": "D-03@gifts-v1#p01",
        "doc_id": "D-03",
        "version": "gifts-v1",
        "chunk_id": "p01",
        "text": "Gift cards cannot be returned.",
    }
    passage.update(changes)
    passage.setdefault("sha256", text_sha256(passage["text"]))
    return passage


def judgement(claim: int) -> Callable[[dict], dict]:
    """Accessor for the first judgement of claim `claim` of a response."""
    return lambda response: response["claims"][claim]["judgements"][0]


# --- the control ----------------------------------------------------------------------------


def test_the_unchanged_fixture_imports(project):
    summary = import_bytes(bundle_bytes(*good()))
    assert summary.responses == 1
    assert summary.claims == 4


def test_an_import_collects_its_young_objects_less_often_and_puts_the_collector_back(
    project, monkeypatch
):
    # gc.set_threshold is the process's: a worker's next job, or a test, must find it as it was,
    # after an import that passed and after one that was refused.
    import gc

    from ingest import services
    from ingest.tallies import ImportTallies

    seen = []
    finish = ImportTallies.finish

    def tallies(self):
        seen.append(gc.get_threshold())
        return finish(self)

    monkeypatch.setattr(ImportTallies, "finish", tallies)
    before = gc.get_threshold()
    import_bytes(bundle_bytes(*good()))
    assert seen == [(services.YOUNG_THRESHOLD, *before[1:])]
    assert gc.get_threshold() == before
    refused(with_line_5("{"))
    assert gc.get_threshold() == before


# --- bytes, encoding and JSON ---------------------------------------------------------------


def test_it_refuses_malformed_json(project):
    error = refused(with_line_5('{"kind": "response", "case_id" "Q-017"}'))
    assert error.lines() == ["line 5: not valid JSON: Expecting ':' delimiter (column 32)"]
    assert error.problems[0].line == 5
    assert error.problems[0].path == ""


def test_a_line_cut_short_is_reported_at_its_end(project):
    error = refused(with_line_5('{"kind": "response", "case_id": '))
    assert error.lines() == ["line 5: not valid JSON: Expecting value (column 33)"]


def test_it_refuses_a_line_with_trailing_garbage(project):
    error = refused(with_line_5(response_json() + " }"))
    assert len(error.problems) == 1
    assert error.lines()[0].startswith("line 5: not valid JSON: Extra data (column ")


def test_it_refuses_bad_utf8_and_names_the_byte(project):
    raw = response_json().encode("utf-8")
    position = raw.index(b"You can return")
    raw = raw[:position] + b"\xff" + raw[position:]
    error = refused(with_line_5(raw))
    assert error.lines() == [f"line 5: not valid UTF-8 (byte {position + 1} of the line)"]


def test_it_refuses_latin1_text(project):
    raw = response_json(lambda r: r.update(text="Perché no?")).encode("latin-1")
    error = refused(with_line_5(raw))
    assert len(error.problems) == 1
    assert error.lines()[0].startswith("line 5: not valid UTF-8 (byte ")


def test_it_refuses_a_lone_surrogate_escape_in_a_passage_text(project):
    passage = extra_passage()
    del passage["sha256"]
    raw = json.dumps(passage).replace("Gift cards", "Gift \\ud800 cards")
    data = bundle_bytes(*good(), raw)
    error = refused(data)
    assert [(p.line, p.path) for p in error.problems] == [(6, "/text")]


def test_it_refuses_a_lone_surrogate_escape_in_a_response_text(project):
    raw = response_json(lambda r: r.update(text="x", citations=[], claims=[]))
    raw = raw.replace('"text": "x"', '"text": "x\\udc80"')
    error = refused(with_line_5(raw))
    assert [(p.line, p.path) for p in error.problems] == [(5, "/text")]


def test_a_nul_character_never_escapes_as_a_driver_error(project):
    data = bundle_bytes(*good(), extra_passage(text="before\u0000after"))
    try:
        import_bytes(data)
    except BundleInvalid as error:
        assert all(problem.line == 6 for problem in error.problems)


def test_a_huge_integer_score_is_stored_as_a_float(project):
    summary = import_bytes(changed(5, lambda r: r["retrieved"][0].update(score=10**30)))
    assert summary.retrieved == 2
    assert Retrieval.objects.get(rank=1).score == pytest.approx(1e30)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_it_refuses_nan_and_infinity(project, constant):
    raw = response_json().replace('"score": 0.82', f'"score": {constant}')
    error = refused(with_line_5(raw))
    assert error.lines() == [
        f"line 5: not valid JSON: {constant} is not a JSON number (NaN and Infinity are refused)"
    ]


def test_it_refuses_a_float_that_overflows_to_infinity(project):
    raw = response_json().replace('"score": 0.82', '"score": 1e999')
    error = refused(with_line_5(raw))
    assert error.lines() == ["line 5: not valid JSON: number 1e999 is too large"]


def test_it_refuses_an_integer_with_thousands_of_digits(project):
    raw = response_json().replace('"score": 0.82', '"score": ' + "9" * 5000)
    error = refused(with_line_5(raw))
    assert error.lines() == ["line 5: not valid JSON: a number has too many digits"]


def test_it_refuses_absurd_nesting_without_crashing(project):
    deep = "[" * 100_000 + "]" * 100_000
    raw = response_json(lambda r: r.update(trace={"x": 0})).replace('"x": 0', f'"x": {deep}')
    error = refused(with_line_5(raw))
    assert error.lines() == ["line 5: JSON nested too deeply"]


def nested_trace(depth: int) -> str:
    """A response line whose deepest value sits `depth` levels down (the line itself is 1)."""
    arrays = depth - 2  # the line object, then the trace object
    deep = "[" * arrays + "]" * arrays
    return response_json(lambda r: r.update(trace={"x": 0})).replace('"x": 0', f'"x": {deep}')


def test_it_refuses_nesting_just_over_the_limit(project):
    error = refused(with_line_5(nested_trace(bundle.MAX_DEPTH + 1)))
    assert error.lines() == [f"line 5: JSON nested deeper than {bundle.MAX_DEPTH} levels"]


def test_it_accepts_nesting_at_the_limit(project):
    summary = import_bytes(with_line_5(nested_trace(bundle.MAX_DEPTH)))
    assert summary.responses == 1


def test_it_refuses_duplicate_keys_in_an_object(project):
    raw = response_json().replace('"answer_id": "A-017"', '"answer_id": "A-017", "answer_id": "B"')
    error = refused(with_line_5(raw))
    assert error.lines() == ["line 5: not valid JSON: duplicate key 'answer_id' in one object"]


def test_it_refuses_duplicate_keys_in_a_nested_object(project):
    raw = response_json().replace('"rank": 1', '"rank": 1, "rank": 2')
    error = refused(with_line_5(raw))
    assert error.lines() == ["line 5: not valid JSON: duplicate key 'rank' in one object"]


def test_a_duplicate_key_named_digits_is_reported_as_a_duplicate_key(project):
    raw = response_json(lambda r: r.update(trace={"x": 0}))
    raw = raw.replace('{"x": 0}', '{"digits": 1, "digits": 2}')
    error = refused(with_line_5(raw))
    assert error.lines() == ["line 5: not valid JSON: duplicate key 'digits' in one object"]


@pytest.mark.parametrize(
    ("raw", "word"),
    [("[1, 2]", "an array"), ('"response"', "a string"), ("42", "a number"), ("null", "null")],
)
def test_it_refuses_a_line_that_is_not_an_object(project, raw, word):
    error = refused(with_line_5(raw))
    assert error.lines() == [f"line 5: a line must be a JSON object, not {word}"]


def test_it_refuses_an_oversized_line_and_reads_on(project, settings):
    lines = good()
    head = bundle_bytes(*lines[:4])
    longest_head_line = max(len(line) for line in head.split(b"\n"))
    settings.BUNDLE_MAX_LINE_BYTES = longest_head_line
    data = head + bundle_bytes(lines[4], "{oops")
    error = refused(data)
    assert error.lines() == [
        f"line 5: line is longer than {longest_head_line:,} bytes (BUNDLE_MAX_LINE_BYTES)",
        "line 6: not valid JSON: Expecting property name enclosed in double quotes (column 2)",
    ]


def test_a_line_exactly_at_the_size_limit_is_read(project, settings):
    data = bundle_bytes(*good())
    settings.BUNDLE_MAX_LINE_BYTES = max(len(line) for line in data.split(b"\n"))
    assert import_bytes(data).responses == 1


def test_it_refuses_a_truncated_gzip_stream(project):
    packed = gzip.compress((FIXTURES / FIXTURE).read_bytes(), mtime=0)
    error = refused(packed[: len(packed) // 2])
    assert len(error.problems) == 1
    problem = error.problems[0]
    assert problem.message == "the gzip stream is truncated (the file ends before its end marker)"
    assert problem.path == ""
    assert problem.line >= 1


def test_it_refuses_a_gzip_stream_cut_inside_its_trailer(project):
    packed = gzip.compress((FIXTURES / FIXTURE).read_bytes(), mtime=0)
    error = refused(packed[:-4])
    assert [p.message for p in error.problems] == [
        "the gzip stream is truncated (the file ends before its end marker)"
    ]


def test_it_refuses_a_stream_that_only_starts_like_gzip(project):
    error = refused(b"\x1f\x8b" + b"this is not deflate data\n")
    assert error.lines() == ["line 1: the gzip stream is corrupt (Unknown compression method)"]


def test_it_refuses_a_gzip_stream_with_corrupt_data(project):
    packed = gzip.compress((FIXTURES / FIXTURE).read_bytes(), mtime=0)
    broken = packed[:12] + bytes(byte ^ 0x55 for byte in packed[12:40]) + packed[40:]
    error = refused(broken)
    assert len(error.problems) == 1
    assert error.problems[0].message.startswith("the gzip stream is corrupt (")


def test_it_refuses_trailing_bytes_after_a_gzip_member(project):
    packed = gzip.compress((FIXTURES / FIXTURE).read_bytes(), mtime=0)
    error = refused(packed + b"garbage")
    assert error.lines() == ["line 6: the gzip stream is corrupt (Not a gzipped file (b'ga'))"]


# --- the shape of the bundle ----------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"\n\n   \n"], ids=["empty", "only-blank-lines"])
def test_it_refuses_an_empty_bundle(project, data):
    error = refused(data)
    assert error.lines() == ["the bundle is empty: its first line must be the run"]


def test_a_bundle_whose_only_line_is_malformed_is_not_called_empty(project):
    error = refused(b"{not json\n")
    assert error.lines() == [
        "line 1: not valid JSON: Expecting property name enclosed in double quotes (column 2)"
    ]


def test_it_refuses_a_first_line_that_is_not_the_run(project):
    error = refused(bundle_bytes(*good()[1:]))
    assert error.lines() == ['line 1: /kind: the first line must be the run (kind "run")']


def test_it_refuses_a_second_run_line(project):
    second = good()[0] | {"run_id": "q017-r1b"}
    error = refused(bundle_bytes(*good(), second))
    assert error.lines() == ["line 6: /kind: a bundle holds exactly one run, on its first line"]


def test_it_refuses_another_schema_version(project):
    error = refused(changed(1, lambda run: run.update(schema="evidence-bundle/2")))
    assert error.lines() == ['line 1: /schema: must be "evidence-bundle/1"']


def test_it_refuses_an_unknown_kind(project):
    error = refused(changed(5, lambda response: response.update(kind="answer")))
    assert error.lines() == [
        'line 5: /kind: unknown kind "answer" (one of: run, passage, case, response)'
    ]


def test_it_refuses_a_line_without_a_kind(project):
    error = refused(changed(5, lambda response: response.pop("kind")))
    assert error.lines() == ["line 5: /kind: is required (one of: run, passage, case, response)"]


@pytest.mark.parametrize(
    ("line_number", "field"),
    [
        (1, "run_id"),
        (1, "created_at"),
        (1, "system"),
        (2, "text"),
        (2, "chunk_id"),
        (4, "query"),
        (5, "text"),
        (5, "retrieved"),
    ],
)
def test_it_refuses_a_missing_required_field(project, line_number, field):
    error = refused(changed(line_number, lambda line: line.pop(field)))
    assert error.lines()[0] == f"line {line_number}: /{field}: is required"


def test_it_refuses_a_missing_required_field_inside_a_list(project):
    error = refused(changed(5, lambda response: judgement(0)(response).pop("support")))
    assert error.lines() == ["line 5: /claims/0/judgements/0/support: is required"]


def test_it_refuses_a_field_that_is_not_in_the_schema(project):
    error = refused(changed(5, lambda response: response.update(confidence=0.9)))
    assert error.lines() == ["line 5: /confidence: is not a field of this kind of line"]


def test_it_refuses_an_unknown_field_inside_a_list_and_escapes_its_name(project):
    error = refused(changed(5, lambda response: response["retrieved"][1].update({"a/b~c": 1})))
    assert error.lines() == ["line 5: /retrieved/1/a~1b~0c: is not a field of this kind of line"]


def test_it_refuses_a_wrong_type_and_says_which(project):
    error = refused(changed(5, lambda response: response.update(abstained="no")))
    assert error.lines() == ["line 5: /abstained: must be true or false, not a string"]


def test_it_refuses_an_id_outside_the_charset(project):
    error = refused(changed(1, lambda run: run.update(run_id="q017 r1")))
    assert error.lines() == ['line 1: /run_id: "q017 r1" does not match ^[A-Za-z0-9._:-]{1,100}$']


def test_it_refuses_a_created_at_that_is_not_rfc3339(project):
    error = refused(changed(1, lambda run: run.update(created_at="28/09/2026")))
    assert error.lines() == ['line 1: /created_at: "28/09/2026" is not an RFC 3339 date-time']


def test_it_refuses_a_created_at_with_a_space_between_date_and_time(project):
    error = refused(changed(1, lambda run: run.update(created_at="2026-10-01 12:00:00Z")))
    assert error.lines() == [
        'line 1: /created_at: "2026-10-01 12:00:00Z" is not an RFC 3339 date-time: '
        'put "T" between date and time, not a space'
    ]


def test_it_refuses_a_time_that_leaves_the_storable_years_in_utc(project):
    # Valid RFC 3339, but the year 0 once converted to UTC: refused, not a traceback.
    early = "0001-01-01T00:00:00+23:59"
    error = refused(changed(1, lambda run: run.update(created_at=early)))
    assert error.lines() == [
        f'line 1: /created_at: "{early}" is outside the years 1–9999 once converted to UTC'
    ]
    error = refused(changed(5, lambda r: judgement(0)(r).update(at=early)))
    assert error.lines() == [
        f'line 5: /claims/0/judgements/0/at: "{early}" is outside the years 1–9999 once '
        "converted to UTC"
    ]


def test_it_refuses_a_judgement_time_without_an_offset(project):
    error = refused(changed(5, lambda r: judgement(0)(r).update(at="2026-10-01T12:00:00")))
    assert error.lines() == [
        'line 5: /claims/0/judgements/0/at: "2026-10-01T12:00:00" is not an RFC 3339 '
        "date-time: it needs Z (UTC) or an offset like +02:00"
    ]


@pytest.mark.parametrize(
    ("line_number", "change", "path"),
    [
        (1, lambda run: run.update(run_id="q017-r1\n"), "/run_id"),
        (4, lambda case: case.update(case_id="Q-017\n"), "/case_id"),
    ],
    ids=["run_id", "case_id"],
)
def test_it_refuses_an_id_with_a_trailing_newline(project, line_number, change, path):
    lines = good()
    change(lines[line_number - 1])
    error = refused(bundle_bytes(*lines[:4]))
    assert (line_number, path) in [(p.line, p.path) for p in error.problems]


def test_every_bad_field_of_one_line_is_reported(project):
    raw = response_json().replace('{"kind": "response", ', '{"kind": "response", "trace": 5, ')
    raw = raw.replace('"case_id": "Q-017"', '"case_id": "Q 017"')
    error = refused(with_line_5(raw))
    assert [p.path for p in error.problems] == ["/trace", "/case_id"]


# --- passages -------------------------------------------------------------------------------


def test_it_refuses_a_ref_that_is_not_its_parts_joined(project):
    error = refused(bundle_bytes(*good(), extra_passage(version="gifts-v2")))
    assert error.lines() == [
        "line 6: /ref: must equal doc_id@version#chunk_id (D-03@gifts-v2#p01)"
    ]


def test_it_refuses_a_sha256_that_does_not_match_the_text(project):
    error = refused(bundle_bytes(*good(), extra_passage(sha256="0" * 64)))
    digest = text_sha256("Gift cards cannot be returned.")
    assert error.lines() == [
        f"line 6: /sha256: does not match the text, whose SHA-256 is {digest}"
    ]


def test_it_refuses_an_uppercase_sha256(project):
    passage = extra_passage()
    passage["sha256"] = passage["sha256"].upper()
    error = refused(bundle_bytes(*good(), passage))
    assert len(error.problems) == 1
    assert error.problems[0].path == "/sha256"
    assert "does not match ^[0-9a-f]{64}$" in error.problems[0].message


def test_it_accepts_a_passage_without_a_sha256(project):
    passage = extra_passage()
    del passage["sha256"]
    summary = import_bytes(bundle_bytes(*good(), passage))
    assert summary.passages_new == 3
    assert Passage.objects.get(ref="D-03@gifts-v1#p01").sha256 == text_sha256(passage["text"])


def test_it_refuses_an_empty_passage_text(project):
    error = refused(bundle_bytes(*good(), extra_passage(text="")))
    assert error.lines() == ["line 6: /text: must not be empty"]


def test_it_refuses_a_passage_declared_twice(project):
    lines = good()
    error = refused(bundle_bytes(*lines[:2], lines[1], *lines[2:]))
    assert error.lines() == [f"line 3: /ref: passage {D01} is declared twice (first on line 2)"]


def test_it_refuses_another_text_for_a_ref_already_stored_in_the_snapshot(project):
    import_fixture(FIXTURE)
    lines = good("q017-r2.jsonl")  # the same snapshot, store-kb@2026-07
    stored = lines[1]["sha256"]
    lines[1]["text"] += " Except on Sundays."
    this = text_sha256(lines[1]["text"])
    lines[1]["sha256"] = this
    error = refused(bundle_bytes(*lines))
    assert error.lines() == [
        f"line 2: /text: passage {D01} already has another text in snapshot store-kb@2026-07 "
        f"(stored SHA-256 {stored}, this line {this}); a changed text belongs to another "
        "snapshot or version"
    ]


# --- undeclared references ------------------------------------------------------------------


def _cite_undeclared_in_a_claim(response: dict) -> None:
    response["claims"][0]["citations"] = [UNDECLARED]
    del judgement(0)(response)["citation_relevance"]


@pytest.mark.parametrize(
    ("line_number", "change", "path"),
    [
        (5, lambda r: r["retrieved"][1].update(ref=UNDECLARED), "/retrieved/1/ref"),
        (5, lambda r: r["citations"][0].update(ref=UNDECLARED), "/citations/0/ref"),
        (4, lambda c: c["relevant_refs"].append(UNDECLARED), "/relevant_refs/2"),
        (
            4,
            lambda c: c["required_facts"][2]["evidence"].append(UNDECLARED),
            "/required_facts/2/evidence/1",
        ),
        (5, _cite_undeclared_in_a_claim, "/claims/0/citations/0"),
    ],
    ids=["retrieved", "citations", "relevant_refs", "fact-evidence", "claim-citations"],
)
def test_it_refuses_an_undeclared_ref(project, line_number, change, path):
    error = refused(changed(line_number, change))
    assert error.lines() == [
        f"line {line_number}: {path}: passage {UNDECLARED} is not declared on an earlier line"
    ]


def test_it_refuses_a_ref_that_is_declared_only_on_a_later_line(project):
    run, d01, d02, case, response = good()
    error = refused(bundle_bytes(run, d01, case, d02, response))
    message = f"passage {D02} is not declared on an earlier line"
    assert error.lines() == [
        f"line 3: /required_facts/2/evidence/0: {message}",
        f"line 3: /relevant_refs/1: {message}",
    ]


def test_it_refuses_a_response_whose_case_is_declared_only_later(project):
    run, d01, d02, case, response = good()
    error = refused(bundle_bytes(run, d01, d02, response, case))
    assert error.lines() == ["line 4: /case_id: case Q-017 is not declared on an earlier line"]


# --- cases ----------------------------------------------------------------------------------


def test_it_refuses_a_case_declared_twice(project):
    lines = good()
    error = refused(bundle_bytes(*lines[:4], lines[3], lines[4]))
    assert error.lines() == ["line 5: /case_id: case Q-017 is declared twice (first on line 4)"]


def test_it_refuses_a_fact_id_used_twice(project):
    error = refused(
        changed(4, lambda case: case["required_facts"].append(dict(case["required_facts"][0])))
    )
    assert error.lines() == ["line 4: /required_facts/3/fact_id: fact_id is used twice"]


def test_it_refuses_a_gap_id_used_twice(project):
    error = refused(changed(4, lambda case: case["known_gaps"].append(case["known_gaps"][0])))
    assert error.lines() == ["line 4: /known_gaps/1/gap_id: gap_id is used twice"]


def test_it_refuses_a_changed_expectation_of_a_stored_case(project):
    import_fixture(FIXTURE)
    error = refused(
        changed(4, lambda case: case.update(query="Can I return anything?"), "q017-r2.jsonl")
    )
    assert error.lines() == [
        "line 4: /case_id: case Q-017 differs from its stored expectation (version 1) in: "
        "query; expectations are fixed before generation — import with a new expectation "
        "version if the change is intended"
    ]


def test_it_names_every_changed_part_of_an_expectation(project):
    import_fixture(FIXTURE)

    def change(case: dict) -> None:
        case["known_gaps"][0]["text"] = "Refund duration."
        case["relevant_refs"].reverse()

    error = refused(changed(4, change, "q017-r2.jsonl"))
    assert len(error.problems) == 1
    assert "in: relevant_refs, known_gaps;" in error.problems[0].message


def test_it_stores_a_changed_expectation_as_version_2_when_asked(project):
    import_fixture(FIXTURE)
    data = changed(4, lambda case: case.update(query="Can I return anything?"), "q017-r2.jsonl")
    summary = import_bytes(data, new_expectation_versions=True)
    assert summary.cases_new == 0
    assert summary.cases_reused == 1
    assert summary.expectation_versions_new == 1
    versions = Expectation.objects.filter(case__case_id="Q-017").order_by("version")
    assert [(e.version, e.query) for e in versions] == [
        (1, good()[3]["query"]),
        (2, "Can I return anything?"),
    ]
    replay = Response.objects.get(run__run_id="q017-r2")
    assert replay.expectation.version == 2
    assert Response.objects.get(run__run_id="q017-r1").expectation.version == 1


# --- responses ------------------------------------------------------------------------------


def test_it_refuses_a_second_response_to_one_case(project):
    lines = good()
    error = refused(bundle_bytes(*lines, lines[4]))
    assert error.lines() == ["line 6: /case_id: case Q-017 already has a response on line 5"]


def test_it_refuses_citation_offsets_outside_the_text(project):
    error = refused(changed(5, lambda r: r["citations"][1].update(end=999)))
    assert error.lines() == [
        "line 5: /citations/1/end: offsets 121..999 are outside the text (length 167)"
    ]


def test_it_refuses_citation_offsets_in_the_wrong_order(project):
    error = refused(changed(5, lambda r: r["citations"][0].update(start=73, end=67)))
    assert error.lines() == [
        "line 5: /citations/0/end: offsets 73..67 are outside the text (length 167)"
    ]


def test_it_refuses_a_negative_offset(project):
    error = refused(changed(5, lambda r: r["citations"][0].update(start=-1)))
    assert error.lines() == ["line 5: /citations/0/start: must be at least 0"]


def test_it_refuses_a_marker_that_is_not_at_its_offsets(project):
    error = refused(changed(5, lambda r: r["citations"][0].update(marker="[D-02]")))
    assert error.lines() == [
        "line 5: /citations/0/marker: text[67:73] is '[D-01]', not the marker '[D-02]'"
    ]


@pytest.mark.parametrize("dropped", ["start", "end"])
def test_it_refuses_only_one_of_start_and_end(project, dropped):
    error = refused(changed(5, lambda r: r["citations"][0].pop(dropped)))
    assert error.lines() == ["line 5: /citations/0: start and end come together, or not at all"]


def test_it_accepts_a_citation_without_offsets(project):
    def change(response: dict) -> None:
        del response["citations"][0]["start"], response["citations"][0]["end"]

    assert import_bytes(changed(5, change)).citations == 2


@pytest.mark.parametrize(
    ("ranks", "expected"),
    [
        ([1, 3], ["/retrieved/1/rank: is 3 but must be 2"]),
        ([1, 1], ["/retrieved/1/rank: is 1 but must be 2"]),
        (
            [2, 1],
            ["/retrieved/0/rank: is 2 but must be 1", "/retrieved/1/rank: is 1 but must be 2"],
        ),
    ],
    ids=["gap", "repeat", "out-of-order"],
)
def test_it_refuses_ranks_that_are_not_1_to_n(project, ranks, expected):
    def change(response: dict) -> None:
        for item, rank in zip(response["retrieved"], ranks, strict=True):
            item["rank"] = rank

    error = refused(changed(5, change))
    suffix = ": ranks follow the list order 1..n without gaps or repeats"
    assert error.lines() == [f"line 5: {text}{suffix}" for text in expected]


def test_it_refuses_a_rank_of_zero(project):
    error = refused(changed(5, lambda r: r["retrieved"][0].update(rank=0)))
    assert error.lines() == ["line 5: /retrieved/0/rank: must be at least 1"]


def test_it_refuses_a_passage_retrieved_twice(project):
    error = refused(changed(5, lambda r: r["retrieved"][1].update(ref=D01)))
    assert error.lines() == ["line 5: /retrieved/1/ref: is retrieved twice (also at rank 1)"]


def bare_response(**fields) -> dict:
    return {"kind": "response", "case_id": "Q-017", "text": "", "retrieved": []} | fields


def test_it_refuses_an_empty_text_without_abstained(project):
    error = refused(bundle_bytes(*good()[:4], bare_response()))
    assert error.lines() == ["line 5: /text: is empty, which only an abstained response may be"]


def test_it_refuses_an_empty_text_with_abstained_false(project):
    error = refused(bundle_bytes(*good()[:4], bare_response(abstained=False)))
    assert error.lines() == ["line 5: /text: is empty, which only an abstained response may be"]


def test_it_accepts_an_empty_text_when_abstained(project):
    summary = import_bytes(bundle_bytes(*good()[:4], bare_response(abstained=True)))
    assert summary.responses == 1
    assert Response.objects.get().abstained


# --- claims and judgements ------------------------------------------------------------------


def test_it_refuses_a_claim_id_used_twice(project):
    error = refused(changed(5, lambda r: r["claims"][1].update(claim_id="C-017-1")))
    assert error.lines() == ["line 5: /claims/1/claim_id: claim_id is used twice in this response"]


def test_it_refuses_a_claim_fact_that_is_not_in_the_case(project):
    error = refused(changed(5, lambda r: r["claims"][0].update(facts=["G9"])))
    assert error.lines() == ["line 5: /claims/0/facts/0: case Q-017 has no required fact G9"]


def test_it_refuses_a_claim_gap_that_is_not_in_the_case(project):
    error = refused(changed(5, lambda r: r["claims"][3].update(gaps=["X1", "X2"])))
    assert error.lines() == ["line 5: /claims/3/gaps/1: case Q-017 has no known gap X2"]


def test_it_refuses_a_claim_span_outside_the_text(project):
    error = refused(changed(5, lambda r: r["claims"][0].update(spans=[[160, 170]])))
    assert error.lines() == [
        "line 5: /claims/0/spans/0: span 160..170 is empty or outside the text (length 167)"
    ]


def test_it_refuses_a_claim_kind_it_does_not_know(project):
    error = refused(changed(5, lambda r: r["claims"][0].update(kind="opinion")))
    assert error.lines() == [
        'line 5: /claims/0/kind: "opinion" is not one of: factual, abstention'
    ]


def test_it_refuses_a_diagnosis_code_it_does_not_know(project):
    error = refused(changed(5, lambda r: judgement(0)(r).update(diagnosis="bad_luck")))
    assert error.lines() == [
        "line 5: /claims/0/judgements/0/diagnosis: 'bad_luck' is not one of: "
        "expected_passage_not_retrieved, qualifier_dropped, citation_conflicts, "
        "supporting_passage_not_cited, locator_drift, not_in_collection"
    ]


def test_it_refuses_a_support_label_it_does_not_know(project):
    error = refused(changed(5, lambda r: judgement(0)(r).update(support="mostly")))
    assert error.lines() == [
        'line 5: /claims/0/judgements/0/support: "mostly" is not one of: '
        "supported, partial, unsupported, not_assessable"
    ]


@pytest.mark.parametrize("support", ["supported", "partial", "not_assessable"])
def test_it_refuses_contradicts_with_a_support_other_than_unsupported(project, support):
    error = refused(changed(5, lambda r: judgement(0)(r).update(support=support)))
    assert error.lines() == [
        "line 5: /claims/0/judgements/0/contradicts: qualifies only an unsupported verdict"
    ]


def test_it_refuses_a_missing_association_for_a_claim_with_citations(project):
    error = refused(changed(5, lambda r: judgement(0)(r).update(association="missing")))
    assert error.lines() == [
        "line 5: /claims/0/judgements/0/association: is missing, but the claim has citations"
    ]


def test_it_refuses_an_attached_association_for_a_claim_without_citations(project):
    error = refused(changed(5, lambda r: judgement(3)(r).update(association="attached")))
    assert error.lines() == [
        "line 5: /claims/3/judgements/0/association: is attached, but the claim has no citations"
    ]


def test_it_refuses_citation_relevance_for_a_ref_the_claim_does_not_cite(project):
    error = refused(
        changed(5, lambda r: judgement(0)(r)["citation_relevance"].update({D02: "redundant"}))
    )
    assert error.lines() == [
        f"line 5: /claims/0/judgements/0/citation_relevance: {D02} is not among the claim's "
        "citations"
    ]


def test_it_refuses_a_relevance_label_it_does_not_know(project):
    error = refused(changed(5, lambda r: judgement(0)(r).update(citation_relevance={D01: "key"})))
    assert error.lines() == [
        f"line 5: /claims/0/judgements/0/citation_relevance/{D01}: "
        '"key" is not one of: necessary, redundant, irrelevant'
    ]


def test_it_refuses_an_empty_reason(project):
    error = refused(changed(5, lambda r: judgement(0)(r).update(reason="")))
    assert error.lines() == [
        "line 5: /claims/0/judgements/0/reason: must not be empty",
        "line 5: /claims/0/judgements/0/reason: must contain a written reason, not only blanks",
    ]


@pytest.mark.parametrize(
    "reason", [" ", "   \n\t", "\u00a0\u2003"], ids=["space", "mixed", "nbsp"]
)
def test_it_refuses_a_whitespace_only_reason(project, reason):
    error = refused(changed(5, lambda r: judgement(0)(r).update(reason=reason)))
    assert error.lines() == [
        "line 5: /claims/0/judgements/0/reason: must contain a written reason, not only blanks"
    ]


def test_it_refuses_a_judgement_without_a_reason(project):
    error = refused(changed(5, lambda r: judgement(0)(r).pop("reason")))
    assert error.lines() == ["line 5: /claims/0/judgements/0/reason: is required"]


def test_it_refuses_a_judgement_time_that_is_not_rfc3339(project):
    error = refused(changed(5, lambda r: judgement(0)(r).update(at="yesterday")))
    assert error.lines() == [
        'line 5: /claims/0/judgements/0/at: "yesterday" is not an RFC 3339 date-time'
    ]


# --- the run and the project ----------------------------------------------------------------


def test_it_refuses_a_run_id_already_imported_into_the_project(project):
    import_fixture(FIXTURE)
    error = refused((FIXTURES / FIXTURE).read_bytes())
    assert error.lines() == [
        "line 1: /run_id: run 'q017-r1' already exists in project 'demo'; runs are never "
        "overwritten or extended: give the replay a new run_id"
    ]


def test_the_same_run_id_is_welcome_in_another_project(project):
    import_fixture(FIXTURE)
    summary = import_fixture(FIXTURE, project="other", create_project=True)
    assert summary.responses == 1
    assert Run.objects.filter(run_id="q017-r1").count() == 2


def test_it_refuses_a_run_that_is_its_own_baseline(project):
    error = refused(changed(1, lambda run: run.update(baseline_run_id="q017-r1")))
    assert error.lines() == ["line 1: /baseline_run_id: a run cannot be its own baseline"]


def test_it_refuses_a_project_that_does_not_exist(db):
    error = refused((FIXTURES / FIXTURE).read_bytes(), project="nowhere")
    assert error.lines() == ["project 'nowhere' does not exist"]
    assert error.problems[0].line == 0


def test_it_creates_the_project_when_asked(db):
    summary = import_bytes((FIXTURES / FIXTURE).read_bytes(), project="new", create_project=True)
    assert summary.responses == 1
    assert Project.objects.filter(slug="new").exists()


def test_a_refused_bundle_does_not_create_its_project(db):
    data = changed(5, lambda r: r.update(kind="answer"))
    refused(data, project="new", create_project=True)
    assert not Project.objects.filter(slug="new").exists()


# --- reporting ------------------------------------------------------------------------------


def test_it_reports_the_problems_of_several_lines_at_once(project):
    lines = good()
    lines[0]["created_at"] = "tomorrow"
    lines[2]["sha256"] = "f" * 64
    lines[4]["retrieved"][0]["ref"] = UNDECLARED
    error = refused(bundle_bytes(*lines))
    assert [(p.line, p.path) for p in error.problems] == [
        (1, "/created_at"),
        (3, "/sha256"),
        # Line 3 was refused, so D-02 is undeclared wherever it is used afterwards.
        (4, "/required_facts/2/evidence/0"),
        (4, "/relevant_refs/1"),
        (5, "/retrieved/0/ref"),
        (5, "/retrieved/1/ref"),
        (5, "/citations/1/ref"),
        (5, "/claims/2/citations/0"),
    ]


def test_it_caps_the_problem_list_at_50_and_says_it_stopped(project):
    error = refused(bundle_bytes(*good(), *["{bad"] * 60))
    assert len(error.problems) == bundle.MAX_PROBLEMS == 50
    assert error.more
    assert error.problems[-1].line == 55
    lines = error.lines()
    assert len(lines) == 51
    assert lines[-1] == STOPPED


def test_it_does_not_say_it_stopped_at_exactly_50_problems(project):
    error = refused(bundle_bytes(*good(), *["{bad"] * 50))
    assert len(error.problems) == 50
    assert not error.more
    assert STOPPED not in error.lines()


def test_a_read_error_after_50_problems_is_not_dropped_silently(project):
    packed = gzip.compress(bundle_bytes(*good(), *["{bad"] * 50, *[""] * 100), mtime=0)
    error = refused(packed[:-10])
    assert len(error.problems) == 50
    assert error.more or "gzip stream is truncated" in error.problems[-1].message


def test_str_of_a_problem_reads_line_path_message(project):
    error = refused(changed(5, lambda r: r.update(confidence=1)))
    problem = error.problems[0]
    assert (problem.line, problem.path) == (5, "/confidence")
    assert str(problem) == "line 5: /confidence: is not a field of this kind of line"
    assert str(error) == "1 problem(s)"


# --- what is fine ---------------------------------------------------------------------------


def test_it_ignores_blank_lines_but_counts_them(project):
    run, d01, d02, case, response = good()
    summary = import_bytes(bundle_bytes(run, "", d01, "   ", d02, "\t", case, "", response, ""))
    assert summary.responses == 1
    assert summary.passages_new == 2


def test_line_numbers_count_blank_lines(project):
    run, d01, d02, case, response = good()
    response["kind"] = "answer"
    error = refused(bundle_bytes(run, "", d01, "", d02, "", case, "", response))
    assert error.problems[0].line == 9


def test_it_accepts_a_utf8_bom_on_line_1(project):
    summary = import_bytes(b"\xef\xbb\xbf" + (FIXTURES / FIXTURE).read_bytes())
    assert summary.responses == 1


def test_it_refuses_a_bom_on_a_later_line(project):
    lines = bundle_bytes(*good()).split(b"\n")
    lines[1] = b"\xef\xbb\xbf" + lines[1]
    error = refused(b"\n".join(lines))
    assert error.lines()[0] == (
        "line 2: not valid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (column 1)"
    )


def test_it_accepts_windows_line_endings(project):
    data = (FIXTURES / FIXTURE).read_bytes().replace(b"\n", b"\r\n")
    assert import_bytes(data).responses == 1


class Unseekable(io.RawIOBase):
    """A pipe-like stream (stdin): read only, no seek, no peek."""

    def __init__(self, data: bytes):
        self._inner = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self._inner.read(min(len(buffer), 7))  # short reads, as from a pipe
        buffer[: len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_it_imports_from_a_stdin_like_stream(project, packed):
    data = (FIXTURES / FIXTURE).read_bytes()
    if packed:
        data = gzip.compress(data)
    summary = bundle_import(stream=Unseekable(data), project_slug="demo")
    assert summary.responses == 1
    assert summary.claims == 4


def test_it_imports_a_gz_file(project, tmp_path):
    path = tmp_path / "q017-r1.jsonl.gz"
    path.write_bytes(gzip.compress((FIXTURES / FIXTURE).read_bytes()))
    with path.open("rb") as stream:
        summary = bundle_import(stream=stream, project_slug="demo", source_name=path.name)
    assert summary.responses == 1
    run = Run.objects.get(run_id="q017-r1")
    assert run.source_name == "q017-r1.jsonl.gz"


def test_a_bundle_read_through_gzip_or_plain_gets_the_same_summary(project):
    data = (FIXTURES / FIXTURE).read_bytes()
    plain = import_bytes(data).as_dict()
    packed = import_bytes(gzip.compress(data), project="other", create_project=True).as_dict()
    assert {**plain, "project": "other"} == packed


def test_a_refusal_leaves_earlier_imports_untouched(project):
    import_fixture(FIXTURE)
    before = row_counts()
    data = changed(5, lambda r: r.update(kind="answer"), "q017-r2.jsonl")
    with pytest.raises(BundleInvalid):
        import_bytes(data)
    assert row_counts() == before
    assert before["Run"] == 1


def test_rows_of_a_refused_bundle_are_rolled_back_even_after_a_flush(project, monkeypatch):
    # A tiny flush batch makes the importer write the first response before it meets
    # the bad line, so the refusal must undo rows that were already written.
    monkeypatch.setattr("ingest.services.FLUSH_EVERY_RESPONSES", 1)
    lines = good("pro-plan.jsonl")
    lines[-1]["retrieved"][0]["rank"] = 7
    error = refused(bundle_bytes(*lines))
    assert [(p.line, p.path) for p in error.problems] == [(11, "/retrieved/0/rank")]
