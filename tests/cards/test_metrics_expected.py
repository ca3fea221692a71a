"""The known answers of ../shared/fixtures/expected.json, reproduced exactly."""

from __future__ import annotations

import json

import pytest

from cards.annotators import Annotator
from cards.metrics import Source, run_metrics
from replay.models import Run
from tests.conftest import KNOWN_ANSWERS

EXPECTED = json.loads(KNOWN_ANSWERS.read_text(encoding="utf-8"))


def expected_cases() -> list[tuple[str, str, dict]]:
    cases = []
    for run_id, known in EXPECTED["runs"].items():
        if "per_case" in known:
            for case_id, figures in known["per_case"].items():
                cases.append((run_id, case_id, figures))
        else:
            figures = dict(known.get("response", {}))
            if "prechecks" in known:
                figures["prechecks"] = known["prechecks"]
            cases.append((run_id, figures.pop("case_id", None), figures))
    return cases


def as_pair(value):
    """cli.md's proportion {"k", "n", …} in expected.json's [k, n] form."""
    if isinstance(value, dict) and "k" in value:
        return [value["k"], value["n"]]
    return value


@pytest.fixture
def figures(demo_runs):
    source = Source.of(Annotator("seed-protocol", imported=True))
    return {
        run.run_id: run_metrics(run=run, source=source).as_json()
        for run in Run.objects.filter(project__slug="demo")
    }


@pytest.mark.parametrize(
    ("run_id", "case_id", "known"),
    expected_cases(),
    ids=[f"{r}/{c}" for r, c, _ in expected_cases()],
)
def test_every_known_figure_is_reproduced(figures, run_id, case_id, known):
    responses = figures[run_id]["per_response"]
    response = (
        responses[0] if case_id is None else next(r for r in responses if r["case_id"] == case_id)
    )
    for name, value in known.items():
        if name == "prechecks":
            continue
        have = as_pair(response[name])
        if name == "verdicts":
            have = {label: n for label, n in have.items() if label in value}
        assert have == value, name


@pytest.mark.parametrize(
    ("run_id", "case_id", "known"),
    [case for case in expected_cases() if "prechecks" in case[2]],
    ids=[f"{r}/{c}" for r, c, k in expected_cases() if "prechecks" in k],
)
def test_every_known_precheck_fires_and_no_other(figures, run_id, case_id, known):
    responses = figures[run_id]["per_response"]
    response = (
        responses[0] if case_id is None else next(r for r in responses if r["case_id"] == case_id)
    )
    hints = response["prechecks"]
    wanted = known["prechecks"]
    # pro-plan lists response codes flat; the others split response and claims.
    response_codes = wanted.get("response", wanted if "claims" not in wanted else {})
    for code, details in response_codes.items():
        assert hints["response"].get(code, []) == details, code
    if "claims" in wanted:
        assert hints["claims"] == wanted["claims"]


def test_an_empty_answer_never_scores_and_an_abstention_covers_nothing(project):
    from tests.conftest import bundle_bytes, import_bytes
    from tests.factories import synthetic_bundle

    lines = synthetic_bundle(run_id="abstain", cases=1, passages=2, claims=0)
    lines[-1].update(text="", abstained=True, citations=[])
    lines[-1].pop("claims")
    import_bytes(bundle_bytes(*lines))
    response = run_metrics(run=Run.objects.get(run_id="abstain")).as_json()["per_response"][0]
    assert response["status"] == "abstention"
    assert response["support"] is None
    assert response["citation_presence"] is None
    assert as_pair(response["coverage"]) == [0, 1]


@pytest.mark.parametrize("retrieved", [0, 2], ids=["nothing retrieved", "two others retrieved"])
def test_a_relevant_ref_not_retrieved_is_missing_at_every_k_even_past_the_lists_end(
    project, retrieved
):
    from tests.conftest import bundle_bytes, import_bytes
    from tests.factories import synthetic_bundle

    lines = synthetic_bundle(run_id="short", cases=1, passages=3, claims=0)
    others = lines[-1]["retrieved"][1 : 1 + retrieved]  # the relevant ref is the first
    lines[-1].update(retrieved=[item | {"rank": i + 1} for i, item in enumerate(others)])
    import_bytes(bundle_bytes(*lines))
    response = run_metrics(run=Run.objects.get(run_id="short")).as_json()["per_response"][0]
    for k in (1, 2, 3, 4, 5, 10):
        assert as_pair(response[f"passage_recall@{k}"]) == [0, 1], k
        assert as_pair(response[f"fact_evidence_recall@{k}"]) == [0, 1], k
        assert response[f"hit@{k}"] == 0, k
    assert response["context_precision"] == 0.0


def test_unreviewed_responses_are_counted_not_scored(demo_runs):
    figures = run_metrics(run=Run.objects.get(run_id="pro-plan-r1")).as_json()
    assert figures["run"]["unreviewed"] == 3
    assert figures["run"]["reviewed"] == 0
    assert figures["run"]["micro"]["support"] is None
    assert all(r["support"] is None for r in figures["per_response"])
    assert as_pair(figures["run"]["micro"]["hit@3"]) == [1, 3]


def test_the_default_source_ignores_imported_judgements(demo_runs):
    figures = run_metrics(run=Run.objects.get(run_id="q017-r1")).as_json()
    response = figures["per_response"][0]
    assert figures["verdicts_from"] == "default"
    assert response["verdicts"]["unreviewed"] == 4
    assert as_pair(response["support"]) == [0, 4]
