"""Benchmark of the anchors (audit.anchors): the check and the append after many exports.

    .venv/bin/python bench/anchors_bench.py                        # 400 cases, 200 exports
    .venv/bin/python bench/anchors_bench.py --n 100 --exports 20   # a quick look

A benchmark, not a test: it prints figures and asserts nothing about time.

A scratch PostgreSQL database (BENCH_DB names it; dropped at the end) gets one synthetic
run of N cases × 5 claims, each claim a chain of 3 revisions (`bundles.rated_bundle`):
2,000 chains for N = 400. Then `--exports` exports of that run, one after another, as
far as the anchors see them: before each, `--changed` claims get a new verdict (through
`verdict_save`, as a reviewer saves one), then `anchors_check` runs as every export
starts, and `audit_record` (the AuditExport row and the anchor appended) as it ends.
The package's chain heads are the run's heads, kept up to date from the verdicts saved;
the package itself (the zip) is not written: it costs the same whatever the history.

It prints, at a few points of the history, the check's and the append's wall time (each
the median of `--repeat` further calls on the same state, the file restored after each
append), and the bytes under AUDIT_ANCHOR_DIR.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bundles import project_with, rated_bundle
from harness import Postgres, code_state, django_on_scratch, log, table

NAME = os.environ.get("BENCH_DB", "evidence_anchors_bench")
RUN_ID = "anchors-bench"


def heads_of(run) -> dict[int, tuple[int, str]]:
    """claim pk → seq and sha256 of its chain's newest revision (claim or verdict)."""
    from cards.models import ClaimRevision, VerdictRevision

    heads: dict[int, tuple[int, str]] = {}
    for model in (ClaimRevision, VerdictRevision):
        rows = model.objects.filter(claim__response__run=run).values_list(
            "claim_id", "seq", "sha256"
        )
        for claim, seq, digest in rows.iterator(chunk_size=2000):
            if seq > heads.get(claim, (0, ""))[0]:
                heads[claim] = (seq, digest)
    return heads


def measure(n: int, exports: int, changed: int, repeat: int, points: set[int]) -> None:
    from django.contrib.auth.models import User

    from audit.anchors import anchors_check
    from audit.package import Package
    from audit.services import audit_record
    from cards.models import Claim
    from cards.services.verdicts import verdict_save
    from evidence.models import Role
    from evidence.services import membership_set
    from replay.models import Run

    project = project_with(rated_bundle(run_id=RUN_ID, cases=n))
    run = Run.objects.get(run_id=RUN_ID)
    reviewer = User.objects.create_user("bench-reviewer", password=None)
    membership_set(project=project, user=reviewer, role=Role.REVIEWER)
    claims = list(
        Claim.objects.filter(response__run=run).select_related("response__case").order_by("pk")
    )
    names = {c.pk: f"{project.slug}/{RUN_ID}/{c.response.case.case_id}/{c.key}" for c in claims}
    heads = heads_of(run)
    log(f"setup: {len(heads):,} chains")
    own: dict[int, int] = {}  # claim → the reviewer's newest verdict's seq
    folder = Path(os.environ["AUDIT_ANCHOR_DIR"])

    def package(number: int) -> Package:
        return Package(
            project=project,
            runs=[run],
            chain_heads={names[pk]: digest for pk, (_, digest) in sorted(heads.items())},
            package_id=hashlib.sha256(f"bench package {number}".encode()).hexdigest(),
        )

    def timed_append(number: int) -> float:
        """One check and append on a copy of the folder, thrown away after."""
        saved = Path(tempfile.mkdtemp(prefix="anchors-saved-"))
        shutil.copytree(folder, saved, dirs_exist_ok=True)
        candidate = package(number)
        anchors_check(package=candidate)
        started = time.perf_counter()
        audit_record(package=candidate, user=None)
        seconds = time.perf_counter() - started
        shutil.rmtree(folder)
        shutil.copytree(saved, folder)
        shutil.rmtree(saved)
        return seconds

    rows = []
    for number in range(1, exports + 1):
        for step in range(changed):
            claim = claims[(number * changed + step) * 7919 % len(claims)]
            saved = verdict_save(
                claim=claim, author=reviewer, support=("partial", "supported")[number % 2],
                reason=f"Read again for export {number}.", seen_claim_seq=1,
                seen_own_seq=own.get(claim.pk),
            )  # fmt: skip
            own[claim.pk] = saved.seq
            heads[claim.pk] = (saved.seq, saved.sha256)
        current = package(number)
        if number in points:
            checks = []
            for _ in range(repeat):
                started = time.perf_counter()
                anchors_check(package=package(number))
                checks.append(time.perf_counter() - started)
            appends = [timed_append(number) for _ in range(repeat)]
            size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
            rows.append(
                [
                    f"{number - 1:,}",
                    f"{statistics.median(checks) * 1000:.1f}",
                    f"{statistics.median(appends) * 1000:.1f}",
                    f"{size:,}",
                ]
            )
            log(f"export {number}: {rows[-1]}")
        anchors_check(package=current)
        before = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
        audit_record(package=current, user=None)
        after = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
        if number in points:
            rows[-1].append(f"{after - before:,}")
    print(f"{len(heads):,} chains, {changed} changed before each export; code: {code_state()}\n")
    print(
        table(
            ["prior exports", "check ms", "append ms", "anchor bytes", "bytes added"],
            rows,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400, help="cases (×5 claims): 400")
    parser.add_argument("--exports", type=int, default=200, help="exports made: 200")
    parser.add_argument("--changed", type=int, default=5, help="claims changed per export: 5")
    parser.add_argument("--repeat", type=int, default=5, help="calls per figure: 5")
    args = parser.parse_args()
    points = {1, 2, 11, 51, 101, args.exports + 1}
    log(f"code: {code_state()}")
    anchors = tempfile.mkdtemp(prefix="anchors-bench-")
    os.environ["AUDIT_ANCHOR_DIR"] = anchors
    os.environ["AUDIT_SIGNING_KEY"] = "bench-audit-signing-key-0123456789abcdef"
    pg = Postgres()
    try:
        with django_on_scratch(pg, NAME):
            measure(args.n, args.exports + 1, args.changed, args.repeat, points)
    finally:
        pg.close()
        shutil.rmtree(anchors, ignore_errors=True)


if __name__ == "__main__":
    main()
