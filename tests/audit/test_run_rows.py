"""audit.run_rows: the files of runs/RUN/ show the run as it was imported."""

from __future__ import annotations

import json

from evidence.models import Passage
from replay.models import Response, Retrieval
from tests.audit.test_audit_zip import export, members
from tests.conftest import import_bytes
from tests.factories import synthetic_bundle

# Each score as the bundle writes it, and as retrieval.jsonl must write it again.
SCORES = ["1", "0.82", "1.0", "12345678901234567890", "1e-07", "0.30000000000000004", "-0.0"]


def literal_scores(data: bytes) -> list[str | None]:
    """The score of each line as written in the JSON text, not as a Python number."""
    return [
        json.loads(line, parse_int=str, parse_float=str).get("score")
        for line in data.decode("utf-8").splitlines()
    ]


def scored_bundle(scores: list[str]) -> bytes:
    lines = synthetic_bundle(run_id="scored", cases=1, passages=len(scores) + 1, claims=1)
    (answer,) = [line for line in lines if line["kind"] == "response"]
    text = "\n".join(json.dumps(line) for line in lines)
    # The scores go in as literal JSON text: `1` and `1.0` must stay what they were.
    for item, score in zip(answer["retrieved"], [*scores, None], strict=True):
        written = f'"rank": {item["rank"]}, "score": {json.dumps(item["score"])}'
        text = text.replace(
            written, f'"rank": {item["rank"]}' + (f', "score": {score}' if score else ""), 1
        )
    return (text + "\n").encode("utf-8")


def test_retrieval_scores_are_exported_exactly_as_the_bundle_wrote_them(project, tmp_path):
    import_bytes(scored_bundle(SCORES))
    out = tmp_path / "package.zip"
    export(out=out)
    exported = literal_scores(members(out)["runs/scored/retrieval.jsonl"])
    assert exported == [*SCORES, None]


def test_a_score_stored_before_scores_were_kept_as_imported_comes_from_the_number(
    project, tmp_path
):
    import_bytes(scored_bundle(["0.5"]))
    response = Response.objects.get(run__run_id="scored")
    passage = Passage.objects.filter(ref__startswith="doc0@").order_by("ref").first()
    Retrieval.objects.create(response=response, rank=3, passage=passage, score=0.25)
    out = tmp_path / "package.zip"
    export(out=out)
    exported = literal_scores(members(out)["runs/scored/retrieval.jsonl"])
    assert exported == ["0.5", None, "0.25"]
