"""The API's reads: the JSON of cli.md, and the pages' access rules."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from evidence.models import Project, Role
from evidence.services import membership_set

METRICS = "/api/projects/demo/runs/q017-r1/metrics"
AGREEMENT = "/api/projects/demo/runs/q017-r1/agreement"
COMPARE = "/api/projects/demo/compare?a=q017-r1&b=q017-r2"
RUNS = "/api/projects/demo/runs"
PROTECTED = [RUNS, METRICS, AGREEMENT, COMPARE]
FIGURES = [METRICS, AGREEMENT, COMPARE]  # the figures and compare pages' rules


def command_json(*args: str) -> dict:
    out = io.StringIO()
    call_command(*args, "--project", "demo", "--json", stdout=out)
    return json.loads(out.getvalue())


def test_the_projects_are_the_users_own_with_their_role(api_as, reviewer, outsider):
    membership_set(project=Project.objects.get(slug="elsewhere"), user=reviewer, role=Role.LEAD)
    response = api_as(reviewer).get("/api/projects")
    assert response.status_code == 200
    assert response.json() == {
        "projects": [
            {"slug": "demo", "name": "Demo", "role": "reviewer"},
            {"slug": "elsewhere", "name": "Elsewhere", "role": "lead"},
        ]
    }


def test_the_runs_of_a_project_are_listed_with_their_progress(api_as, demo_runs, reviewer):
    response = api_as(reviewer).get(RUNS)
    assert response.status_code == 200
    runs = {run["run_id"]: run for run in response.json()["runs"]}
    assert len(runs) == len(demo_runs)
    assert runs["q017-r2"]["baseline_run_id"] == "q017-r1"
    assert runs["q017-r1"]["baseline_run_id"] is None
    assert runs["q017-r1"]["responses"] == 1


def test_a_runs_metrics_are_what_run_metrics_prints(api_as, demo_runs, reviewer):
    for query, options in [
        ("", []),
        ("?source=annotator:seed-protocol", ["--annotator", "seed-protocol"]),
        ("?source=consensus", ["--consensus"]),
    ]:
        response = api_as(reviewer).get(METRICS + query)
        assert response.status_code == 200
        assert response.json() == command_json("run_metrics", "q017-r1", *options)
    assert response.json()["verdicts_from"] == "consensus"


def test_a_runs_agreement_is_what_run_agreement_prints(api_as, demo_runs, reviewer):
    response = api_as(reviewer).get(AGREEMENT + "?annotators=seed-protocol&annotators=alice")
    assert response.status_code == 200
    assert response.json() == command_json(
        "run_agreement", "q017-r1", "--annotators", "seed-protocol", "alice"
    )
    everyone = api_as(reviewer).get(AGREEMENT).json()
    assert everyone == command_json("run_agreement", "q017-r1")


def test_a_comparison_is_what_compare_runs_prints(api_as, demo_runs, reviewer):
    response = api_as(reviewer).get(COMPARE + "&source=annotator:seed-protocol")
    assert response.status_code == 200
    comparison = response.json()
    assert comparison == command_json(
        "compare_runs", "q017-r1", "q017-r2", "--annotator", "seed-protocol"
    )
    assert {fact["change"] for fact in comparison["pairs"][0]["facts"].values()} >= {"improved"}


@pytest.mark.parametrize("path", PROTECTED)
def test_an_outsider_gets_404_as_json(api_as, demo_runs, outsider, path):
    response = api_as(outsider).get(path)
    assert response.status_code == 404
    assert response.json() == {"error": "No such project."}


@pytest.mark.parametrize("path", FIGURES)
def test_a_reviewer_of_a_blind_project_gets_403_like_the_figures_page(
    api_as, client, demo_runs, reviewer, lead, path
):
    Project.objects.filter(slug="demo").update(blind_review=True)
    client.force_login(reviewer)
    assert client.get("/p/demo/runs/q017-r1/figures/").status_code == 403
    response = api_as(reviewer).get(path)
    assert response.status_code == 403
    assert "reviews blind" in response.json()["error"]
    assert api_as(lead).get(path).status_code == 200


def test_a_reviewer_of_a_blind_project_still_lists_its_runs(api_as, demo_runs, reviewer):
    Project.objects.filter(slug="demo").update(blind_review=True)
    assert api_as(reviewer).get(RUNS).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/api/projects/demo/runs/no-such-run/metrics",
        "/api/projects/demo/runs/no-such-run/agreement",
        "/api/projects/demo/compare?a=q017-r1&b=no-such-run",
    ],
)
def test_a_run_the_project_does_not_have_is_404(api_as, demo_runs, reviewer, path):
    response = api_as(reviewer).get(path)
    assert response.status_code == 404
    assert response.json() == {"error": "No such run."}


@pytest.mark.parametrize("source", ["annotator:", "alice", "majority"])
def test_a_source_of_verdicts_the_api_does_not_know_is_400(api_as, demo_runs, reviewer, source):
    response = api_as(reviewer).get(f"{METRICS}?source={source}")
    assert response.status_code == 400
    assert response.json() == {"error": "source is default, consensus or annotator:NAME."}


@pytest.mark.parametrize(
    "path",
    ["/api/projects?page=2", f"{METRICS}?annotator=alice", f"{RUNS}?source=default"],
)
def test_a_query_parameter_the_operation_does_not_have_is_400(api_as, demo_runs, reviewer, path):
    # A misspelt or misplaced parameter would otherwise answer the default, silently.
    response = api_as(reviewer).get(path)
    assert response.status_code == 400
    assert response.json()["error"].startswith("Unknown query parameter: ")


def test_a_comparison_names_both_runs(api_as, demo_runs, reviewer):
    response = api_as(reviewer).get("/api/projects/demo/compare?a=q017-r1")
    assert response.status_code == 400
    assert "both runs" in response.json()["error"]


# Each begins with the token's read and its last use (api.http), then the membership.
# The metrics read the stored figures (cards.metrics.stored_run_figures): 9 of their 15;
# so does the comparison (compare.comparison.stored_comparison): six queries, and a seventh
# for the texts of the claims it matches by text.
@pytest.mark.parametrize(
    ("path", "queries"),
    [("/api/projects", 3), (RUNS, 4), (METRICS, 15), (AGREEMENT, 7), (COMPARE, 11)],
)
def test_each_read_costs_a_bounded_number_of_queries(
    api_as, demo_runs, reviewer, django_assert_max_num_queries, path, queries
):
    api = api_as(reviewer)
    with django_assert_max_num_queries(queries):
        assert api.get(path).status_code == 200
