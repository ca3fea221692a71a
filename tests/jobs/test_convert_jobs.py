"""An upload of another format (Ragas, ALCE, jsonl-simple) is converted by its import job."""

from __future__ import annotations

from django.urls import reverse

from ingest.forms import BundleUploadForm
from jobs.models import Job
from replay.models import Run
from tests.conftest import FIXTURES, row_counts
from tests.jobs.conftest import job_url, named, the_job, upload

SAMPLES = FIXTURES.parent / "tests" / "ingest" / "samples"


def test_the_upload_page_offers_the_formats_it_converts(
    client, lead, django_assert_max_num_queries
):
    client.force_login(lead)
    with django_assert_max_num_queries(6):
        response = client.get(reverse("bundle_upload", args=["demo"]))
    assert b'<option value="ragas">' in response.content
    assert b'<option value="bundle" selected>' in response.content


def test_a_ragas_export_is_converted_then_imported_by_its_job(client, lead):
    client.force_login(lead)
    data = (SAMPLES / "ragas-result.jsonl").read_bytes()
    response = upload(client, "eval-nov.jsonl", data, source_format="ragas")
    job = the_job()
    assert response["Location"] == job_url(job)
    assert (job.state, job.result["run_id"]) == (Job.State.DONE, "eval-nov")
    assert Run.objects.get(run_id="eval-nov").responses.count() == 3


def test_a_converted_upload_may_name_its_run(client, lead):
    client.force_login(lead)
    data = (SAMPLES / "alce-asqa.json").read_bytes()
    upload(client, "x.json", data, source_format="alce", run_id="alce-asqa-1", htmx=True)
    assert the_job().result["run_id"] == "alce-asqa-1"
    assert Run.objects.filter(run_id="alce-asqa-1").exists()


def test_a_refused_conversion_names_the_files_own_records_and_stores_nothing(client, lead):
    client.force_login(lead)
    before = row_counts()
    data = b'{"query": "q", "answer": "a", "contexts": [{"text": ""}]}\n'
    upload(client, "s.jsonl", data, source_format="jsonl-simple")
    job = the_job()
    assert job.state == Job.State.FAILED
    assert job.errors == ["line 1: /contexts/0: a context needs a non-empty text"]
    assert row_counts() == before
    assert "line 1: /contexts/0" in client.get(job_url(job)).content.decode()


def _changed(old: str, new: str) -> bytes:
    data = (SAMPLES / "ragas-result.jsonl").read_bytes()
    assert data.count(old.encode()) == 1
    return data.replace(old.encode(), new.encode())


def _refusal(client, data: bytes, name: str = "eval-dec.jsonl") -> list[str]:
    """The errors of a Ragas upload made after the sample was imported as eval-nov."""
    sample = (SAMPLES / "ragas-result.jsonl").read_bytes()
    upload(client, "eval-nov.jsonl", sample, source_format="ragas")
    upload(client, name, data, source_format="ragas")
    job = Job.objects.order_by("pk").last()
    assert job.state == Job.State.FAILED
    return job.errors


def test_a_stored_text_refusing_a_converted_upload_names_the_files_own_line(client, lead):
    client.force_login(lead)
    changed = _changed(
        '"We ship to all EU countries and to Norway.", "Items', '"We ship to the EU.", "Items'
    )
    errors = _refusal(client, changed)
    assert len(errors) == 1
    # The passage is the bundle's line 6, which the user never saw: line 2 is the record.
    assert errors[0].startswith(
        "line 2: its passage line, /text: passage shipping-policy_p02@1#1 already has another"
        " text in snapshot ragas"
    )
    job = Job.objects.order_by("pk").last()
    assert "line 2: its passage line" in client.get(job_url(job)).content.decode()


def test_a_changed_expectation_refusing_a_converted_upload_names_the_files_own_line(client, lead):
    client.force_login(lead)
    changed = _changed(
        '"reference": "Yes."', '"reference": "Yes.", "reference_contexts": ["We ship to Norway."]'
    )
    assert _refusal(client, changed) == [
        "line 2: its case line, /case_id: case q-a9ff0101c39db1eb differs from its stored"
        " expectation (version 1) in: relevant_refs; expectations are fixed before generation"
        " — import with a new expectation version if the change is intended"
    ]


def test_a_run_imported_already_is_named_as_the_run_not_line_1(client, lead):
    client.force_login(lead)
    errors = _refusal(client, (SAMPLES / "ragas-result.jsonl").read_bytes(), "eval-nov.jsonl")
    assert errors == [
        "the run: its run line, /run_id: run 'eval-nov' already exists in project 'demo'; runs"
        " are never overwritten or extended: give the replay a new run_id"
    ]


def test_a_converted_upload_may_choose_its_snapshot_so_a_changed_text_is_taken(client, lead):
    client.force_login(lead)
    upload(
        client,
        "eval-nov.jsonl",
        (SAMPLES / "ragas-result.jsonl").read_bytes(),
        source_format="ragas",
    )
    changed = _changed(
        '"We ship to all EU countries and to Norway.", "Items', '"We ship to the EU.", "Items'
    )
    upload(client, "eval-dec.jsonl", changed, source_format="ragas", snapshot="  ragas-2026-12  ")
    job = Job.objects.order_by("pk").last()
    assert (job.state, job.options["snapshot"]) == (Job.State.DONE, "ragas-2026-12")
    assert Run.objects.get(run_id="eval-dec").snapshot.name == "ragas-2026-12"
    assert Run.objects.get(run_id="eval-nov").snapshot.name == "ragas"


def test_the_upload_page_offers_a_snapshot_and_names_its_file_field_for_every_format(client, lead):
    client.force_login(lead)
    page = client.get(reverse("bundle_upload", args=["demo"])).content.decode()
    assert 'name="snapshot"' in page
    assert 'maxlength="200"' in page
    assert "Bundle file" not in page
    assert "an ALCE result: one JSON document" in page


def test_a_snapshot_with_a_control_character_is_refused_by_the_form(client, lead):
    client.force_login(lead)
    data = (SAMPLES / "ragas-result.jsonl").read_bytes()
    response = upload(client, "x.jsonl", data, source_format="ragas", snapshot="a\nb")
    assert response.status_code == 400
    assert "A snapshot name holds no control characters" in response.content.decode()
    assert not Job.objects.exists()


def test_a_snapshot_past_the_schemas_length_is_refused_by_the_form():
    form = BundleUploadForm(
        {"source_format": "ragas", "snapshot": "s" * 201},
        {"bundle": named("x.jsonl", b"{}")},
    )
    assert not form.is_valid()
    assert list(form.errors) == ["snapshot"]
