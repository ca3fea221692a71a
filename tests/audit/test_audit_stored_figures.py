"""The package's metrics of the default source are read from the stored figures
(cards.services.tallies): the same bytes as computed from the revisions."""

from __future__ import annotations

from audit.figures import metrics_chunks
from audit.package import Package
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
