"""Converting Ragas, ALCE and jsonl-simple files into bundles that the importer takes.

The samples in tests/ingest/samples are ours, written to follow each tool's format
(docs/import-formats.md says which versions).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cards.annotators import roster_of
from cards.metrics import Source, run_metrics
from cards.models import Origin, VerdictRevision
from cards.services.claims import claim_create
from cards.suggestions import suggest_claims
from ingest.bundle import Problem
from ingest.convert import ConversionInvalid, Origins, convert_bundle, records
from ingest.services import BundleInvalid
from replay.models import Citation, Run
from tests.conftest import ROOT, import_bytes

SAMPLES = Path(__file__).parent / "samples"
EVERY_SAMPLE = [
    ("ragas", "ragas-result.jsonl"),
    ("ragas", "ragas-0.1.jsonl"),
    ("alce", "alce-asqa.json"),
    ("jsonl-simple", "simple.jsonl"),
]


def converted(fmt: str, data: bytes, **options) -> bytes:
    out = io.BytesIO()
    convert_bundle(fmt=fmt, source=io.BytesIO(data), out=out, run_id="conv-1", **options)
    return out.getvalue()


def sample(fmt: str, name: str, **options) -> bytes:
    return converted(fmt, (SAMPLES / name).read_bytes(), **options)


def lines_of(bundle: bytes) -> list[dict]:
    return [json.loads(line) for line in bundle.splitlines()]


def responses_of(bundle: bytes) -> list[dict]:
    return [line for line in lines_of(bundle) if line["kind"] == "response"]


def problems_of(fmt: str, data: bytes) -> list[str]:
    with pytest.raises(ConversionInvalid) as caught:
        converted(fmt, data)
    return caught.value.lines()


@pytest.mark.parametrize(("fmt", "name"), EVERY_SAMPLE)
def test_each_sample_converts_into_a_bundle_the_importer_stores(project, fmt, name):
    summary = import_bytes(sample(fmt, name))
    assert summary.run_id == "conv-1"
    assert Run.objects.get(run_id="conv-1").snapshot.name == fmt


def expected_bundle(name: str) -> Path:
    """The bundle a sample converts to (run id conv-1), checked in beside it: written by
    `convert_bundle --run-id conv-1` and read once by a person. A change of the converter
    that changes the bytes changes this file, in the same commit."""
    return SAMPLES / f"{name.rsplit('.', 1)[0]}.bundle.jsonl"


@pytest.mark.parametrize(("fmt", "name"), EVERY_SAMPLE)
def test_each_sample_converts_to_the_bytes_checked_in_beside_it(fmt, name):
    assert sample(fmt, name) == expected_bundle(name).read_bytes()


def test_another_process_with_another_hash_seed_converts_to_the_same_bytes(tmp_path):
    # Set and dict order of str keys changes with PYTHONHASHSEED; a converter that leaned
    # on one would pass in this process and differ in the next. One subprocess, all four.
    script = "; ".join(
        [
            "from pathlib import Path",
            "from ingest.convert import convert_bundle",
            *(
                f"convert_bundle(fmt={fmt!r}, source=open({str(SAMPLES / name)!r}, 'rb'), "
                f"out=open({str(tmp_path / name)!r}, 'wb'), run_id='conv-1')"
                for fmt, name in EVERY_SAMPLE
            ),
        ]
    )
    env = {**os.environ, "DEBUG": "1", "PYTHONHASHSEED": "4242"}
    env.pop("DATABASE_URL", None)  # it converts only: no database is opened
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT, env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    for _, name in EVERY_SAMPLE:
        assert (tmp_path / name).read_bytes() == expected_bundle(name).read_bytes(), name


def test_ragas_statements_become_claims_judged_by_an_imported_annotator(project):
    summary = import_bytes(sample("ragas", "ragas-result.jsonl"))
    assert (summary.responses, summary.claims, summary.verdicts) == (3, 3, 3)
    verdicts = VerdictRevision.objects.order_by("claim__key")
    assert {v.annotator for v in verdicts} == {"ragas-faithfulness"}
    assert {v.origin for v in verdicts} == {Origin.IMPORTED}
    assert sorted(v.support for v in verdicts) == ["supported", "supported", "unsupported"]


def test_a_judges_verdicts_do_not_count_as_a_review(project):
    import_bytes(sample("ragas", "ragas-result.jsonl"))
    run = Run.objects.get(run_id="conv-1")
    judge = Source.parse("annotator:ragas-faithfulness", roster=roster_of(runs=[run]))
    default = run_metrics(run=run, source=Source()).as_json()["run"]
    judged = run_metrics(run=run, source=judge).as_json()["run"]
    assert default["micro"]["support"]["k"] == 0
    assert judged["micro"]["support"]["k"] == 2


def test_ragas_scores_and_reference_are_kept_in_the_trace_and_nan_is_null():
    responses = [
        line
        for line in lines_of(sample("ragas", "ragas-result.jsonl"))
        if line["kind"] == "response"
    ]
    assert responses[0]["trace"]["ragas"] == {
        "reference": "Within 30 days of delivery; final-sale items are excluded.",
        "faithfulness": 0.5,
        "answer_relevancy": 0.91,
    }
    assert responses[1]["trace"]["ragas"]["answer_relevancy"] is None


def test_an_empty_ragas_response_is_an_abstention():
    responses = [
        line
        for line in lines_of(sample("ragas", "ragas-result.jsonl"))
        if line["kind"] == "response"
    ]
    assert responses[2]["text"] == ""
    assert responses[2]["abstained"] is True


def test_a_context_without_an_id_gets_a_ref_from_its_text_and_is_declared_once():
    bundle = lines_of(sample("ragas", "ragas-result.jsonl"))
    passages = [line for line in bundle if line["kind"] == "passage"]
    refs = [p["ref"] for p in passages]
    assert len(refs) == len(set(refs))
    norway = next(p for p in passages if p["text"].startswith("We ship"))
    assert norway["ref"] == "shipping-policy_p02@1#1"  # its id, made a ref part
    final_sale = next(p for p in passages if p["text"].startswith("Final-sale"))
    assert final_sale["ref"].startswith("ctx-") and final_sale["ref"].endswith("@1#1")


def test_the_old_ragas_names_convert_like_the_new_ones():
    old = lines_of(sample("ragas", "ragas-0.1.jsonl"))
    response = old[-1]
    assert old[-2]["query"] == "How long do I have to return an item?"
    assert response["text"] == "Within 30 days of delivery."
    assert len(response["retrieved"]) == 1
    assert response["trace"]["ragas"]["ground_truths"] == ["Within 30 days of delivery."]


def test_alce_markers_become_citations_and_its_sentences_are_left_to_the_suggested_split(
    project, reviewer
):
    summary = import_bytes(sample("alce", "alce-asqa.json"))
    assert (summary.claims, summary.verdicts, Citation.objects.count()) == (0, 0, 3)
    bundle = lines_of(sample("alce", "alce-asqa.json"))
    first = next(line for line in bundle if line["kind"] == "response")
    assert [c["marker"] for c in first["citations"]] == ["[1]", "[2]"]
    assert "claims" not in first
    # Nobody has split the answers: they are not reviewed, as the "not judged" says.
    run = Run.objects.get(run_id="conv-1")
    figures = run_metrics(run=run, source=Source()).as_json()
    assert {r["status"] for r in figures["per_response"]} == {"unreviewed"}
    # The case page suggests the same sentences, and an accepted one cites its markers.
    response = run.responses.get(text__startswith="Maurice")
    markers = [(c.start, c.end) for c in response.citations.all()]
    suggested = suggest_claims(response.text, markers)
    assert [s.text for s in suggested][0] == "Maurice Garin won the first Tour de France in 1903."
    claim = claim_create(
        response=response, author=reviewer, text=suggested[0].text, spans=suggested[0].spans
    )
    assert claim.revisions.get().citations == ["1029384@1#1"]


def test_an_alce_marker_past_the_documents_is_left_in_the_trace():
    first = next(
        line for line in lines_of(sample("alce", "alce-asqa.json")) if line["kind"] == "response"
    )
    assert first["trace"]["alce"]["unresolved_markers"] == ["[4]"]
    assert first["retrieved"][0] == {"ref": "1029384@1#1", "rank": 1, "score": 1.71}


def test_alce_args_say_which_model_ran():
    run = lines_of(sample("alce", "alce-asqa.json"))[0]
    assert run["system"]["model"] == "gpt-3.5-turbo-0301"
    assert run["system"]["alce_args"]["ndoc"] == 3


def test_an_alce_file_read_in_small_chunks_converts_to_the_same_bundle(monkeypatch):
    whole = sample("alce", "alce-asqa.json")
    monkeypatch.setattr(records, "CHUNK_CHARS", 7)
    assert sample("alce", "alce-asqa.json") == whole


def test_jsonl_simple_keeps_ids_titles_and_the_rest_in_the_trace():
    bundle = lines_of(sample("jsonl-simple", "simple.jsonl"))
    returns = next(line for line in bundle if line["kind"] == "passage")
    assert (returns["ref"], returns["title"]) == ("returns@v4#p01", "Returns policy")
    cases = [line["case_id"] for line in bundle if line["kind"] == "case"]
    assert cases[0] == "Q-001" and cases[1].startswith("q-")
    response = next(line for line in bundle if line["kind"] == "response")
    assert response["trace"] == {"jsonl-simple": {"latency_ms": 812}}


def test_options_name_the_run_its_snapshot_and_time():
    run = lines_of(
        sample(
            "jsonl-simple",
            "simple.jsonl",
            snapshot="kb-2026-11",
            created_at="2026-11-30T12:00:00Z",
            label="Nightly",
        )
    )[0]
    assert (run["collection_snapshot"], run["created_at"], run["label"]) == (
        "kb-2026-11",
        "2026-11-30T12:00:00Z",
        "Nightly",
    )


def test_a_problem_names_the_input_line_and_field():
    data = (
        b'{"query": "q1", "answer": "a", "contexts": [{"text": "t"}]}\n'
        b'{"query": "q2", "answer": "a", "contexts": [{"text": ""}]}\n'
        b"{oops\n"
    )
    assert problems_of("jsonl-simple", data) == [
        "line 2: /contexts/0: a context needs a non-empty text",
        "line 3: not valid JSON (Expecting property name enclosed in double quotes, column 2)",
    ]


def test_an_alce_problem_names_the_item_and_its_line():
    data = (
        b'{"args": {},\n "data": [\n'
        b'  {"question": "q", "docs": [], "output": "a"},\n'
        b'  {"question": "q2", "docs": [], "output": ["a", "b"]}\n]}'
    )
    assert problems_of("alce", data) == [
        "data[1] (line 4): /output: holds several samples; convert one sample a run"
    ]


def test_one_id_with_two_texts_is_refused_naming_where_it_came_first():
    data = (
        b'{"query": "q1", "answer": "a", "contexts": [{"id": "d1", "text": "one"}]}\n'
        b'{"query": "q2", "answer": "a", "contexts": [{"id": "d1", "text": "two"}]}\n'
    )
    assert problems_of("jsonl-simple", data) == [
        "line 2: /contexts/0: context 'd1' has another text than it had in line 1"
    ]


def test_a_question_asked_twice_is_refused():
    data = b'{"question": "q", "answer": "a", "contexts": []}\n' * 2
    [problem] = problems_of("ragas", data)
    assert problem.startswith("line 2: case q-") and "(first in line 1)" in problem


def test_a_converted_line_the_schema_refuses_is_the_records_problem():
    context = {"text": "t", "title": "x" * 1001}  # a title has 1,000 characters at most
    data = json.dumps({"query": "q", "answer": "a", "contexts": [context]})
    [problem] = problems_of("jsonl-simple", data.encode())
    assert problem.startswith("line 1: its passage line, /title:")


def test_a_multi_turn_ragas_sample_is_not_covered():
    data = b'{"user_input": [{"content": "hi", "type": "human"}], "response": "x"}\n'
    assert problems_of("ragas", data) == [
        "line 1: /user_input: a multi-turn sample (a list of messages) is not covered"
    ]


def test_an_empty_file_is_refused():
    assert problems_of("ragas", b"\n") == ["the file holds no ragas record"]


def test_a_record_past_the_line_limit_is_refused_by_its_place():
    small = records.Limits(line_bytes=200)
    data = b'{"args": {}, "data": [\n{"question": "' + b"x" * 400 + b'", "output": "a"}]}'
    with pytest.raises(ConversionInvalid) as caught:
        convert_bundle(
            fmt="alce", source=io.BytesIO(data), out=io.BytesIO(), run_id="r", limits=small
        )
    assert caught.value.lines() == ["data[0] (line 2): a record is longer than 200 bytes"]


def test_the_importers_problems_of_a_converted_bundle_are_named_by_the_inputs_records():
    origins = Origins()
    out = io.BytesIO()
    data = (SAMPLES / "simple.jsonl").read_bytes()
    convert_bundle(
        fmt="jsonl-simple", source=io.BytesIO(data), out=out, run_id="c", origins=origins
    )
    kinds = [line["kind"] for line in lines_of(out.getvalue())]
    second_case = kinds.index("case", kinds.index("case") + 1) + 1
    refused = BundleInvalid(
        [
            Problem(1, "/run_id", "taken"),
            Problem(second_case, "/case_id", "declared twice (first on line 4)"),
            Problem(0, "", "the database refused the import"),
            Problem(len(kinds) + 1, "", "past the end"),
        ]
    )
    assert origins.placed(refused).lines() == [
        "the run: its run line, /run_id: taken",
        "line 2: its case line, /case_id: declared twice (first in line 1)",
        "the database refused the import",
        "past the end",
    ]
