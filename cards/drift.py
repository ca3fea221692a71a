"""The drift page: refs with several texts across a project's snapshots (evidence.drift), their
word diffs, and the claims whose current citations rest on an older text."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from cards.models import ClaimRevision
from evidence.drift import project_drifted_refs
from evidence.models import Passage, Project


@dataclass
class Version:
    snapshot: str
    sha256: str
    text: str


@dataclass
class DriftedRef:
    ref: str
    versions: list[Version]  # oldest snapshot first
    claims: list[dict]  # claims whose current citations rest on an older text

    def diff(self, old: Version, new: Version) -> SafeString:
        """A word diff, every piece escaped: passage text is untrusted."""
        a, b = old.text.split(" "), new.text.split(" ")
        out = []
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
            if op == "equal":
                out.append(escape(" ".join(a[i1:i2])))
            if op in ("delete", "replace"):
                out.append(f"<del>{escape(' '.join(a[i1:i2]))}</del>")
            if op in ("insert", "replace"):
                out.append(f"<ins>{escape(' '.join(b[j1:j2]))}</ins>")
        return mark_safe(" ".join(out))  # noqa: S308 - built from escaped pieces

    @property
    def diffs(self) -> list[tuple[Version, Version, SafeString]]:
        return [
            (o, n, self.diff(o, n)) for o, n in zip(self.versions, self.versions[1:], strict=False)
        ]


def drifted_refs(*, project: Project) -> list[DriftedRef]:
    """Every ref with more than one text across the project's snapshots, and the claims at risk."""
    refs = project_drifted_refs(project_id=project.pk)
    versions: dict[str, list[Version]] = {}
    seen: dict[str, set[str]] = {}
    snapshot_sha: dict[tuple[int, str], str] = {}
    for ref, snapshot_id, snapshot, digest, text in (
        Passage.objects.filter(snapshot__project=project, ref__in=refs)
        .order_by("ref", "snapshot__created_at", "snapshot_id")
        .values_list("ref", "snapshot_id", "snapshot__name", "sha256", "text")
    ):
        snapshot_sha[(snapshot_id, ref)] = digest
        if digest not in seen.setdefault(ref, set()):
            seen[ref].add(digest)
            versions.setdefault(ref, []).append(Version(snapshot, digest, text))
    result = {ref: DriftedRef(ref, v, []) for ref, v in versions.items()}
    if not result:
        return []
    newest = {ref: d.versions[-1].sha256 for ref, d in result.items()}
    latest = ClaimRevision.objects.filter(claim__response__run__project=project).order_by(
        "claim_id", "-seq"
    )
    current: dict[int, tuple] = {}
    query = Q()
    for ref in result:
        # PostgreSQL tests JSON containment; SQLite stores the list as text (checked below).
        if connection.vendor == "postgresql":
            query |= Q(citations__contains=[ref])
        else:
            query |= Q(citations__icontains=ref)
    at_risk = latest.filter(query).values("claim_id")  # a claim that ever cited a drifted ref
    for row in latest.filter(claim_id__in=at_risk).values_list(
        "claim_id", "claim__key", "claim__response__run__run_id", "claim__response__case__case_id",
        "claim__response__run__snapshot_id", "citations", "withdrawn", "text",
    ):  # fmt: skip
        current.setdefault(row[0], row)
    for _, key, run_id, case_id, snapshot_id, citations, withdrawn, text in current.values():
        if withdrawn:
            continue
        for ref in citations:
            if ref in result and snapshot_sha.get((snapshot_id, ref)) not in (None, newest[ref]):
                result[ref].claims.append(
                    {"run_id": run_id, "case_id": case_id, "claim_id": key, "text": text}
                )
    return sorted(result.values(), key=lambda d: d.ref)
