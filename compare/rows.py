"""How the side-by-side page lays out a comparison (pure functions over a Comparison)."""

from __future__ import annotations

from dataclasses import dataclass

from cards.figures import ClaimState, choose
from cards.verdicts import Source
from compare.comparison import Comparison, Pair
from replay.models import Run

SYSTEM_KEYS = ("model", "prompt_version", "retrieval_config", "generation_config", "app_revision")


FILTERS = ("regressions", "improvements", "not_comparable")


def is_filter(show: str) -> bool:
    """Whether `show` narrows the pairs; anything else shows them all."""
    return show in FILTERS or show.startswith("diagnosis:")


def filters_of(pair: Pair) -> set[str]:
    """The filters that show this pair: a regressed or improved fact of a comparable pair,
    not comparable, and a diagnosis in any verdict of either response's claims."""
    shown = {f"diagnosis:{code}" for code in _diagnoses(pair)}
    if not pair.comparable:
        shown.add("not_comparable")
    changes = pair.changes  # none for a pair that is not comparable
    if "regressed" in changes:
        shown.add("regressions")
    if "improved" in changes:
        shown.add("improvements")
    return shown


def filter_pairs(pairs: list[Pair], show: str) -> list[Pair]:
    if not is_filter(show):
        return pairs
    return [p for p in pairs if show in filters_of(p)]


def _diagnoses(pair: Pair) -> set[str]:
    return {code for side in (pair.a, pair.b) if side is not None for code in side.diagnoses}


@dataclass
class ClaimCell:
    key: str
    text: str
    label: str  # supported … or unreviewed


@dataclass
class AlignedRow:
    a: ClaimCell | None
    b: ClaimCell | None

    @property
    def changed(self) -> bool:
        return self.a is not None and self.b is not None and self.a.label != self.b.label


def _cell(claim: ClaimState | None, source: Source) -> ClaimCell | None:
    if claim is None:
        return None
    view = choose(claim, source)
    return ClaimCell(claim.key, claim.text, view.support if view else "unreviewed")


def pair_rows(pair: Pair, source: Source) -> dict:
    """The two answers and their claims aligned: matched pairs on one row, the rest alone."""
    a = {c.key: c for c in pair.a.claims if not c.withdrawn} if pair.a else {}
    b = {c.key: c for c in pair.b.claims if not c.withdrawn} if pair.b else {}
    rows = [AlignedRow(_cell(a.get(x), source), _cell(b.get(y), source)) for x, y in pair.matched]
    rows += [AlignedRow(_cell(a[x], source), None) for x in pair.only_a if x in a]
    rows += [AlignedRow(None, _cell(b[y], source)) for y in pair.only_b if y in b]
    return {"pair": pair, "rows": rows}


def summary_band(comparison: Comparison) -> dict:
    comparable = [p for p in comparison.pairs if p.comparable]
    reasons: dict[str, int] = {}
    for pair in comparison.pairs:
        for reason in pair.reasons:
            kind = reason.split(":", 1)[0]
            reasons[kind] = reasons.get(kind, 0) + 1
    return {
        "pairs": len(comparison.pairs),
        "comparable": len(comparable),
        "regressions": sum(1 for p in comparable if "regressed" in p.changes),
        "improvements": sum(1 for p in comparable if "improved" in p.changes),
        "unreviewed": sum(1 for p in comparable if "unreviewed" in p.changes),
        "left_out": comparison.left_out,
        "reasons": reasons,
    }


def metadata_rows(run_a: Run, run_b: Run) -> list[tuple[str, str, str, bool]]:
    rows = []
    keys = list(SYSTEM_KEYS) + sorted((set(run_a.system) | set(run_b.system)) - set(SYSTEM_KEYS))
    for key in keys:
        a, b = str(run_a.system.get(key, "—")), str(run_b.system.get(key, "—"))
        rows.append((key, a, b, a != b))
    for label, a, b in (
        ("snapshot", run_a.snapshot.name, run_b.snapshot.name),
        ("locale", run_a.locale or "—", run_b.locale or "—"),
        ("generated", run_a.created_at.isoformat(), run_b.created_at.isoformat()),
    ):
        rows.append((label, a, b, a != b))
    return rows
