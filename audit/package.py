"""What one audit package holds, and what its export finds along the way."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from cards.verdicts import Source
from evidence.models import Project
from replay.models import Run

# Rows fetched per database round trip by every streamed query of the export.
CHUNK = 2000


class AuditExportError(Exception):
    """The database no longer matches its own hashes; no package was produced."""


def anchored_head_gone(chain: str, head: str, package_id: str) -> AuditExportError:
    """An anchored head the chain no longer holds (audit.anchors, audit.revision_rows)."""
    return AuditExportError(
        f"claim {chain}: revision {head[:12]}… exported in package {package_id[:12]}… is "
        f"no longer in its chain (truncated, shortened or edited since)"
    )


@dataclass
class Package:
    """The runs exported, and what writing their files collects for the manifest and later files.

    The members are written in a fixed order, and some read what earlier ones collected:
    the passages are those the runs' files named, the cards take the pre-check hints the
    figures computed, the manifest takes everything.
    """

    project: Project
    runs: list[Run]
    compare: tuple[Run, Run] | None = None
    # Whose verdicts the cards show and the figures count: one story (docs/decisions.md).
    source: Source = Source()  # frozen: one default instance is safe to share
    # Collected while writing:
    missing: list[str] = field(default_factory=list)
    # Passages only a claim cites (no response of the runs retrieved or cited them).
    claim_passage_ids: set[int] = field(default_factory=set)
    hints: dict[int, dict[str, dict]] = field(default_factory=dict)  # run → case → claim hints
    chain_heads: dict[str, str] = field(default_factory=dict)
    newest: datetime | None = None
    # Known once the manifest is written:
    package_id: str = ""
    manifest_bytes: bytes = b""
    # Set once the anchors were checked (audit.anchors): the view checks before it streams.
    anchors_checked: bool = False
    # The anchors' line the check read up to, and chain → anchored head → package id: the
    # heads each exported chain must meet as it is re-read (ticked off by revision_rows).
    anchored_at: int = 0
    anchored_heads: dict[str, dict[str, str]] = field(default_factory=dict)
