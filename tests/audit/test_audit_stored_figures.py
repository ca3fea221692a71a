"""The package's metrics of the default source are read from the stored figures
(cards.services.tallies): the same bytes as computed from the revisions."""

from __future__ import annotations

from audit.figures import metrics_chunks
from audit.package import Package
from cards.annotators import roster_of
from cards.figures import to_json
from cards.metrics import streamed_run_metrics
from cards.verdicts import Source
from evidence.canonical import canonical_json
from evidence.models import Project
from replay.models import Run


def test_the_default_figures_of_every_demo_run_are_the_bytes_computed_afresh(demo_runs):
    project = Project.objects.get(slug="demo")
    for run in Run.objects.filter(project=project):
        package = Package(project=project, runs=[run])
        exported = b"".join(metrics_chunks(package=package, run=run))
        computed = streamed_run_metrics(run=run, source=Source())
        assert exported == canonical_json(to_json(computed.as_json())) + b"\n", run.run_id


def test_another_sources_figures_read_the_stored_retrieval_and_prechecks(demo_runs, monkeypatch):
    """An annotator's figures: the claim figures computed, the rest read from the stored
    rows, as `run_metrics` does; the bytes of the streamed reference, which reads every
    passage the responses name (here: refused)."""
    import cards.metrics

    project = Project.objects.get(slug="demo")
    source = Source.parse(
        "annotator:seed-protocol", roster=roster_of(runs=list(Run.objects.filter(project=project)))
    )
    for run in Run.objects.filter(project=project):
        computed = streamed_run_metrics(run=run, source=source)
        package = Package(project=project, runs=[run], source=source)
        with monkeypatch.context() as patch:
            patch.setattr(cards.metrics, "_batch_passages", _refused)
            exported = b"".join(metrics_chunks(package=package, run=run))
        assert exported == canonical_json(to_json(computed.as_json())) + b"\n", run.run_id


def _refused(*args, **kwargs):
    raise AssertionError("the streamed pass read the passages")


def test_the_collector_runs_while_the_caller_holds_a_chunk_of_the_figures(demo_runs):
    """Paused while a batch of figures is made, not across the chunks handed out: the zip,
    a download's socket and a web worker's other threads run meanwhile."""
    import gc

    project = Project.objects.get(slug="demo")
    run = Run.objects.filter(project=project).first()
    source = Source.parse("annotator:seed-protocol", roster=roster_of(runs=[run]))
    chunks = metrics_chunks(package=Package(project=project, runs=[run], source=source), run=run)
    enabled = []
    for _ in chunks:
        enabled.append(gc.isenabled())
    assert len(enabled) >= 3 and all(enabled), enabled
