from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from cards.annotators import Annotator
from cards.figures import ClaimState
from cards.verdicts import Source
from compare.comparison import compare_runs, match_claims
from replay.models import Run
from tests.cards.test_metrics_expected import EXPECTED
from tests.conftest import bundle_bytes, import_bytes
from tests.factories import synthetic_bundle

SEED = Source.of(Annotator("seed-protocol", imported=True))


def comparison(a: str, b: str, source: Source = SEED):
    runs = Run.objects.select_related("snapshot")
    return compare_runs(run_a=runs.get(run_id=a), run_b=runs.get(run_id=b), source=source)


@pytest.mark.parametrize(("pair", "known"), EXPECTED["comparisons"].items())
def test_the_known_comparisons_are_reproduced(demo_runs, pair, known):
    a, b = pair.split(" vs ")
    result = comparison(a, b)
    [case] = result.pairs
    assert case.comparable is known["comparable"]
    for reason, wanted in zip(case.reasons, known.get("reasons", []), strict=True):
        # expected.json names the ref; cli.md adds OLDHASH→NEWHASH after it.
        assert reason.startswith(wanted + " ")
    for fact, (status_a, status_b, change) in known.get("facts", {}).items():
        assert (case.facts[fact].a, case.facts[fact].b, case.facts[fact].change) == (
            status_a,
            status_b,
            change,
        )
    for name in ("support", "coverage"):
        if name in known:
            got = [result.metrics_a["micro"][name], result.metrics_b["micro"][name]]
            assert [[p.k, p.n] for p in got] == known[name]


def test_a_drifted_pair_names_both_hashes_and_is_left_out_of_the_figures(demo_runs):
    result = comparison("q017-r1", "q017-r3")
    assert result.left_out == 1
    assert result.pairs[0].reasons == [
        "passage_drift: D-01@returns-v4#p04 "
        "39159de721c6704a420e725cd74f14cf92c7d7eb415a90e4b2e53aa7d679a3fd→"
        "134b49d4c2993b1c4c12d7ee97e97891cf8d594449a1331cde56a76b7a6fdb59"
    ]
    assert result.metrics_a["micro"]["support"].n == 0


def test_claims_match_by_facts_then_by_text():
    a = [
        ClaimState("a1", "factual", "The limit is 80 degrees.", [], ["G1"], [], False),
        ClaimState("a2", "factual", "Eco saves energy every year.", [], [], [], False),
        ClaimState("a3", "factual", "Something else entirely.", [], [], [], False),
    ]
    b = [
        ClaimState("b1", "factual", "Continuous limit: 80 °C.", [], ["G1"], [], False),
        ClaimState("b2", "factual", "Eco saves energy every single year.", [], [], [], False),
    ]
    assert match_claims(a, b) == ([("a1", "b1"), ("a2", "b2")], ["a3"], [])


def test_compare_runs_prints_json_and_defaults_to_the_baseline(demo_runs):
    out = io.StringIO()
    call_command(
        "compare_runs", "q017-r2", "--project", "demo", "--annotator", "seed-protocol", stdout=out
    )
    data = json.loads(out.getvalue())
    assert (data["run_a"], data["run_b"]) == ("q017-r1", "q017-r2")
    assert data["left_out"] == 0
    assert data["pairs"][0]["facts"]["G1"] == {
        "a": "partial",
        "b": "supported",
        "change": "improved",
    }
    assert data["metrics"]["a"]["support"]["n"] == 4
    assert data["metrics"]["difference"]["support"] == 1.0


def test_compare_runs_without_a_baseline_is_a_usage_error(demo_runs):
    with pytest.raises(CommandError, match="declares no baseline") as caught:
        call_command("compare_runs", "q017-r1", "--project", "demo", stdout=io.StringIO())
    assert caught.value.returncode == 2


def test_comparing_takes_the_same_number_of_queries_whatever_the_size(
    project, django_assert_max_num_queries
):
    for run_id, cases, snapshot in (
        ("s1", 2, "kb@1"),
        ("s2", 2, "kb@2"),
        ("b1", 40, "kb@1"),
        ("b2", 40, "kb@2"),
    ):
        import_bytes(
            bundle_bytes(
                *synthetic_bundle(run_id=run_id, cases=cases, claims=3, snapshot=snapshot)
            )
        )
    # 9: the two runs, drift, responses, expectations, claims, verdicts, and the runs'
    # project twice, which says whether its labels are blind (cards.blind).
    with django_assert_max_num_queries(9) as small:
        comparison("s1", "s2", Source("consensus"))
    with django_assert_max_num_queries(9) as large:
        result = comparison("b1", "b2", Source("consensus"))
    assert len(small.captured_queries) == len(large.captured_queries)
    assert len(result.pairs) == 40
