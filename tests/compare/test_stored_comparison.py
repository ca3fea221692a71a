"""The default source's comparison read from the stored figures equals the computed one.

`compare_runs` of the default source reads each claim's stored row (`ClaimTally`) and
each response's (`ResponseTally`), not every revision and verdict. The reference is the
computation from the revisions (`computed_comparison`, which every other source uses):
on the demo's comparisons and on two generated runs worked over by every write path,
both give the same pairs, the same figures and the same filters of the page.
"""

from __future__ import annotations

import json
import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cards.models import Claim
from cards.verdicts import Source
from compare.comparison import compare_runs, computed_comparison, stored_comparison
from compare.rows import filters_of, summary_band
from evidence.canonical import text_sha256
from replay.models import Run
from tests.cards.conftest import judge, work_over
from tests.cards.test_metrics_expected import EXPECTED
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle


def assert_stored_equals_computed(run_a: Run, run_b: Run) -> None:
    stored = stored_comparison(run_a=run_a, run_b=run_b)
    computed = computed_comparison(run_a=run_a, run_b=run_b, source=Source())
    # The same JSON, byte for byte (the command and the audit package print it).
    assert json.dumps(stored.as_json()) == json.dumps(computed.as_json())
    assert stored.metrics_a == computed.metrics_a
    assert stored.metrics_b == computed.metrics_b
    # What the side-by-side page keeps of it: its band and where each filter's pairs are.
    assert summary_band(stored) == summary_band(computed)
    assert [filters_of(p) for p in stored.pairs] == [filters_of(p) for p in computed.pairs]
    assert [p.changes for p in stored.pairs] == [p.changes for p in computed.pairs]


def runs_of(*run_ids: str) -> list[Run]:
    stored = Run.objects.select_related("snapshot")
    return [stored.get(run_id=run_id) for run_id in run_ids]


def test_the_demo_comparisons_read_from_the_stored_figures_equal_the_computed_ones(
    demo_runs, reviewer, lead
):
    pairs = [pair.split(" vs ") for pair in EXPECTED["comparisons"]]
    # With reviewers' verdicts too: the bundles' own are imported, which the default
    # source does not count (every fact would be unreviewed on both sides).
    for a, b in pairs:
        for run in runs_of(a, b):
            for i, claim in enumerate(Claim.objects.filter(response__run=run).order_by("pk")):
                judge(claim, reviewer, ["supported", "partial", "unsupported"][i % 3],
                      diagnosis="not_in_collection" if i % 3 == 2 else "")  # fmt: skip
                if i % 4 == 0:
                    judge(claim, lead, "supported", adjudication=True)
    for a, b in pairs:
        assert_stored_equals_computed(*runs_of(a, b))
        assert_stored_equals_computed(*runs_of(b, a))


def generated_runs() -> tuple[Run, Run]:
    """Two runs of eight cases in two snapshots: case-1 cites a passage whose text differs,
    case-2's query is reworded, case-3's relevant refs differ, case-7 is not answered in
    the second run; the rest are comparable."""
    for run_id, snapshot in (("g1", "kb@1"), ("g2", "kb@2")):
        lines = synthetic_bundle(run_id=run_id, cases=8, claims=3, passages=4, snapshot=snapshot)
        second = run_id == "g2"
        for line in lines:
            if line["kind"] == "case":
                c = line["case_id"].removeprefix("case-")
                line["relevant_refs"] = [f"doc{c}@v1#c1"]
                line["required_facts"].append(
                    {"fact_id": "G2", "text": "The other limit.", "evidence": [f"doc{c}@v1#c2"]}
                )
                if second and c == "2":
                    line["query"] = "Reworded?"
                if second and c == "3":
                    line["relevant_refs"] = [f"doc{c}@v1#c2"]
            if second and line["kind"] == "passage" and line["ref"] == "doc1@v1#c0":
                line["text"] = "A rewritten passage: the limit is 99 units."
                line["sha256"] = text_sha256(line["text"])
        if second:
            lines = [x for x in lines if x.get("case_id") != "case-7"]
        import_bytes(bundle_bytes(*lines), new_expectation_versions=True)
    return tuple(runs_of("g1", "g2"))


TEXTS = ["The limit is 10 units.", "The limit is ten units.", "Costs are not covered.", "Other."]


def test_two_generated_runs_worked_over_compare_alike_stored_and_computed(
    project, reviewer, second_reviewer, lead
):
    run_a, run_b = generated_runs()
    assert_stored_equals_computed(run_a, run_b)
    rng = random.Random(7)
    for run in (run_a, run_b):
        work_over(run, rng, [reviewer, second_reviewer], lead, steps=90, texts=TEXTS)
    assert_stored_equals_computed(run_a, run_b)
    assert_stored_equals_computed(run_b, run_a)
    comparison = stored_comparison(run_a=run_a, run_b=run_b)
    # The walk reached what it was meant to: every reason, changes both ways, claims
    # matched by text, and a diagnosis filter.
    reasons = {r.split(":")[0] for p in comparison.pairs for r in p.reasons}
    assert reasons == {"passage_drift", "query_changed", "expectation_changed", "case_missing"}
    changes = set().union(*(p.changes for p in comparison.pairs))
    assert {"improved", "regressed"} <= changes
    assert any("diagnosis:not_in_collection" in filters_of(p) for p in comparison.pairs)
    texts = {c.key: c.text for p in comparison.pairs if p.a for c in p.a.claims if c.text}
    assert texts, "no pair needed its claims' texts"


def test_the_stored_comparison_reads_no_revision_when_facts_match_every_claim(project):
    # Every claim of the synthetic bundles reports G1: matched by fact, no text is needed.
    for run_id, snapshot in (("s1", "kb@1"), ("s2", "kb@2")):
        import_bytes(bundle_bytes(*synthetic_bundle(run_id=run_id, cases=4, snapshot=snapshot)))
    run_a, run_b = runs_of("s1", "s2")
    with CaptureQueriesContext(connection) as queries:
        comparison = compare_runs(run_a=run_a, run_b=run_b)
    assert len(comparison.pairs) == 4
    read = " ".join(q["sql"] for q in queries.captured_queries)
    assert "cards_claimrevision" not in read
    assert "cards_claimtally" in read


@pytest.mark.parametrize("cases", [2, 12])
def test_the_stored_comparison_takes_the_same_queries_whatever_the_size(project, cases):
    for run_id in ("q1", "q2"):
        lines = synthetic_bundle(run_id=run_id, cases=cases, snapshot=f"kb-{run_id}")
        for line in lines:
            for claim in line.get("claims", ()):
                claim["facts"] = []  # matched by text: their texts are read
        import_bytes(bundle_bytes(*lines))
    run_a, run_b = runs_of("q1", "q2")
    with CaptureQueriesContext(connection) as queries:
        comparison = compare_runs(run_a=run_a, run_b=run_b)
    assert all(p.matched for p in comparison.pairs)
    # The drift, the responses, their expectations, the claim sums, the claims' rows,
    # the diagnoses, the texts.
    assert len(queries) == 7
