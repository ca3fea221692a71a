"""Synthetic, valid `evidence-bundle/1` bundles for the benchmarks, deterministic for a given size.

- `import_bundle_lines(n)`: the import benchmark's, sized like real runs
  (~1 KB passages and answers, 10 retrieved refs, 5 judged claims per case);
- `review_bundle()`: one case sized like the review page's worst case
  (20 × 2 KB passages, 30 claims × 5 judgements);
- `rated_bundle(...)`: `tests.factories.synthetic_bundle` with two annotators
  who disagree on about a quarter of the claims, for metrics and comparisons.
"""

from __future__ import annotations

import io
import json
import random
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from harness import log

from evidence.canonical import text_sha256
from tests.factories import synthetic_bundle

VOCABULARY = [
    "pressure", "valve", "module", "firmware", "threshold", "sensor", "warranty", "calibration",
    "ambient", "limit", "continuous", "operating", "cycle", "energy", "report", "pilot",
    "machine", "setting", "nominal", "rated", "value", "maintenance", "interval", "service",
    "manual", "revision", "section", "table", "figure", "clause", "annex", "customer",
    "contract", "renewal", "notice", "period", "invoice", "currency", "monthly", "annual",
    "plan", "seat",
]  # fmt: skip
SUPPORTS = ("supported", "partial", "unsupported", "not_assessable")


def jsonl(lines: Iterable[dict]) -> bytes:
    """A bundle's bytes: one compact JSON object per line."""
    return b"".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        for line in lines
    )


def import_lines(lines: Iterable[dict], *, project: str, **kwargs: Any) -> Any:
    """`bundle_import` of these lines into `project` (Django must be set up): its summary."""
    from ingest.services import bundle_import

    return bundle_import(stream=io.BytesIO(jsonl(lines)), project_slug=project, **kwargs)


def project_with(*bundles: list[dict], slug: str = "bench") -> Any:
    """A new project with these bundles imported, in order (Django must be set up)."""
    from evidence.services import project_create

    project = project_create(slug=slug)
    started = time.perf_counter()
    for lines in bundles:
        import_lines(lines, project=slug)
    log(f"setup: imported {len(bundles)} run(s) in {time.perf_counter() - started:.1f} s")
    return project


def stored_project(*, runs: dict[str, int], slug: str = "bench") -> Any:
    """The project a kept database holds (harness `--keep`), checked to hold these runs of
    these numbers of responses; None in a new database."""
    from evidence.models import Project
    from replay.models import Response

    project = Project.objects.filter(slug=slug).first()
    if project is None:
        return None
    for run_id, responses in runs.items():
        stored = Response.objects.filter(run__project=project, run__run_id=run_id).count()
        if stored != responses:
            raise RuntimeError(
                f"the kept database holds {stored:,} responses of {run_id}, not {responses:,}: "
                "drop it (or run without --keep)"
            )
    log(f"setup: reusing the kept project {slug!r}")
    return project


def write_jsonl(path: Path, lines: Iterable[dict]) -> Path:
    """Write a bundle line by line (a large one never sits in memory whole)."""
    started = time.perf_counter()
    with path.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
            out.write("\n")
    seconds = time.perf_counter() - started
    log(f"bundle {path.name}: {path.stat().st_size / 1e6:,.0f} MB, written in {seconds:.0f} s")
    return path


def run_line(run_id: str, snapshot: str, label: str) -> dict:
    return {
        "kind": "run", "schema": "evidence-bundle/1", "run_id": run_id, "label": label,
        "created_at": "2026-10-01T09:00:00Z", "collection_snapshot": snapshot,
        "system": {"model": "bench-generator", "prompt_version": "p1"},
    }  # fmt: skip


# --- the import benchmark's bundle -------------------------------------------------------------


def sentence_pool(size: int = 1009, seed: int = 7) -> list[str]:
    """Reusable sentences of ~100 characters; passages and answers are cut from these."""
    rng = random.Random(seed)
    pool = []
    for _ in range(size):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < 95:
            words.append(rng.choice(VOCABULARY))
        pool.append(" ".join(words).capitalize() + f" {rng.randint(1, 999)}.")
    return pool


def passage_text(pool: list[str], i: int, j: int) -> str:
    head = f"Document {i}, chunk {j}. "
    body = " ".join(pool[(i * 31 + j * 17 + k * 13) % len(pool)] for k in range(10))
    return head + body  # ~1,050 characters


def answer_parts(pool: list[str], i: int, refs: list[str]) -> tuple[str, list[dict], list[list]]:
    """A ~1 KB answer of 5 sentences; the first two end with a citation marker."""
    sentences, citations, spans = [], [], []
    pos = 0
    for k in range(5):
        body = f"Finding {k + 1} for case {i}: " + pool[(i * 7 + k * 101) % len(pool)][:-1]
        body += " and " + pool[(i * 11 + k * 53) % len(pool)][:-1].lower()
        if k < 2:
            marker = f"[{k + 1}]"
            start = pos + len(body) + 1
            citations.append({"marker": marker, "ref": refs[k], "start": start, "end": start + 3})
            sentence = f"{body} {marker}."
        else:
            sentence = body + "."
        spans.append([pos, pos + len(sentence)])
        sentences.append(sentence)
        pos += len(sentence) + 1
    return " ".join(sentences), citations, spans


def import_bundle_lines(
    n: int, run_id: str = "bench-r1", snapshot: str = "bench-snapshot"
) -> Iterator[dict]:
    """n cases, each with 10 passages of ~1 KB, a case with 2 required facts, and a response
    with a ~1 KB answer, 10 retrieved refs, 2 citations with offsets and 5 judged claims."""
    pool = sentence_pool()
    yield run_line(run_id, snapshot, f"Import benchmark, {n} cases")
    for i in range(n):
        refs = [f"doc{i}@v1#c{j}" for j in range(1, 11)]
        for j, ref in enumerate(refs, start=1):
            text = passage_text(pool, i, j)
            yield {
                "kind": "passage", "ref": ref, "doc_id": f"doc{i}", "version": "v1",
                "chunk_id": f"c{j}", "text": text, "sha256": text_sha256(text),
                "title": f"Document {i}", "version_status": "current",
            }  # fmt: skip
        case_id, topic = f"case-{i:06d}", VOCABULARY[i % len(VOCABULARY)]
        yield {
            "kind": "case",
            "case_id": case_id,
            "query": f"Question {i}: what do the documents say about {topic}?",
            "required_facts": [
                {"fact_id": "F1", "text": f"First fact of case {i}.", "evidence": [refs[0]]},
                {"fact_id": "F2", "text": f"Second fact of case {i}.", "evidence": [refs[1]]},
            ],
            "relevant_refs": refs[:3],
        }
        text, citations, spans = answer_parts(pool, i, refs)
        yield {
            "kind": "response",
            "case_id": case_id,
            "answer_id": f"a{i}",
            "text": text,
            "retrieved": [
                {"ref": ref, "rank": r, "score": round(1 - r / 20, 3)}
                for r, ref in enumerate(refs, start=1)
            ],
            "citations": citations,
            "claims": [
                {
                    "claim_id": f"c{k + 1}",
                    "text": f"Claim {k + 1} of case {i}: {pool[(i + k * 97) % len(pool)]}",
                    "spans": [spans[k]],
                    "citations": [refs[k]],
                    "facts": ["F1"] if k == 0 else ["F2"] if k == 1 else [],
                    "judgements": [
                        {
                            "annotator": "bench-judge",
                            "support": SUPPORTS[(i + k) % 4],
                            "reason": f"Passage {refs[k]} was read against claim {k + 1}.",
                        }
                    ],
                }
                for k in range(5)
            ],
        }


# --- the review benchmark's case ---------------------------------------------------------------

REVIEW_RUN_ID, REVIEW_CASE_ID = "bench-review-r1", "case-1"
REVIEW_PASSAGES, REVIEW_PASSAGE_CHARS, REVIEW_CLAIMS, REVIEW_JUDGEMENTS = 20, 2048, 30, 5
REVIEW_REASON = (
    "Passage {ref} states the figure in its second sentence, with the same unit and scope."
)


def review_bundle() -> list[dict]:
    """One case sized like the issue's: 20 × 2 KB passages, 30 claims × 5 judgements."""
    rng = random.Random(20)

    def sentence() -> str:
        picked = [rng.choice(VOCABULARY) for _ in range(rng.randint(10, 16))]
        return " ".join(picked).capitalize() + f" {rng.randint(1, 999)}."

    refs = [f"manual@v3#c{j:02d}" for j in range(1, REVIEW_PASSAGES + 1)]
    lines = [run_line(REVIEW_RUN_ID, "bench-review-snapshot", "Review benchmark")]
    for j, ref in enumerate(refs, start=1):
        text = f"Section {j}. "
        while len(text) < REVIEW_PASSAGE_CHARS:
            text += sentence() + " "
        text = text[:REVIEW_PASSAGE_CHARS].rstrip() + "."
        doc_id, rest = ref.split("@")
        version, chunk_id = rest.split("#")
        lines.append(
            {
                "kind": "passage", "ref": ref, "doc_id": doc_id, "version": version,
                "chunk_id": chunk_id, "text": text, "sha256": text_sha256(text),
                "title": f"Service manual, section {j}", "url": f"https://example.com/manual#s{j}",
                "version_status": "current",
            }
        )  # fmt: skip
    lines.append(
        {
            "kind": "case", "case_id": REVIEW_CASE_ID,
            "query": "What are the rated limits and service intervals of the P7 machine?",
            "required_facts": [
                {"fact_id": f"G{k}", "text": f"Rated limit {k}.", "evidence": [refs[k - 1]]}
                for k in range(1, 4)
            ],
            "known_gaps": [{"gap_id": "X1", "text": "The manual says nothing about costs."}],
        }
    )  # fmt: skip
    text, citations, claims = "", [], []
    for k in range(REVIEW_CLAIMS):
        ref = refs[k % REVIEW_PASSAGES]
        body = f"Finding {k + 1}: {sentence()[:-1]}"
        marker = f"[{k % REVIEW_PASSAGES + 1}]"
        start = len(text)
        marker_start = start + len(body) + 1
        text += f"{body} {marker}. "
        end = marker_start + len(marker)
        citations.append({"marker": marker, "ref": ref, "start": marker_start, "end": end})
        claims.append(
            {
                "claim_id": f"c{k + 1}", "text": body, "spans": [[start, start + len(body)]],
                "citations": [ref], "facts": [f"G{k + 1}"] if k < 3 else [],
                "judgements": [
                    {
                        "annotator": f"judge-{r}", "support": SUPPORTS[(k + r) % 3],
                        "reason": REVIEW_REASON.format(ref=ref) + f" (judge {r}, pass {k}).",
                    }
                    for r in range(1, REVIEW_JUDGEMENTS + 1)
                ],
            }
        )  # fmt: skip
    lines.append(
        {
            "kind": "response", "case_id": REVIEW_CASE_ID, "text": text.rstrip(),
            "retrieved": [
                {"ref": ref, "rank": i + 1, "score": round(1 - i / 40, 3)}
                for i, ref in enumerate(refs)
            ],
            "citations": citations, "claims": claims,
        }
    )  # fmt: skip
    return lines


# --- two annotators, for metrics and comparisons -----------------------------------------------


def rated_bundle(*, run_id: str, cases: int, snapshot: str = "synthetic@1") -> list[dict]:
    """Cases of 5 passages and 5 claims; each claim judged by `rater-1` and `rater-2`, who
    disagree (supported / partial) on about one claim in four, the same ones every time."""
    lines = synthetic_bundle(
        run_id=run_id, cases=cases, passages=5, claims=5, revisions=2, snapshot=snapshot
    )
    for line in lines:
        for claim in line.get("claims", ()):
            split = zlib.crc32(f"{line['case_id']}/{claim['claim_id']}".encode()) % 4 == 0
            labels = ("supported", "partial") if split else ("supported", "supported")
            for judgement, annotator, label in zip(
                claim["judgements"], ("rater-1", "rater-2"), labels, strict=True
            ):
                judgement["annotator"] = annotator
                judgement["support"] = label
    return lines
