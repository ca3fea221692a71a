"""Per-line schema validation: our compiled checker against fastjsonschema and jsonschema.

    .venv/bin/python bench/schema_bench.py            # 200 generated cases, 5 repeats
    .venv/bin/python bench/schema_bench.py --cases 50 --repeats 3 --messages

A benchmark, not a test: it prints lines per second of CPU time (best of the
repeats, the options taken in turns) and, with
`--messages`, what each option says about a few broken lines. It needs the
optional `fastjsonschema` (`.venv/bin/pip install fastjsonschema`).

The data:

- every line of `fixtures/*.jsonl` (57 short lines);
- a generated bundle: per case 20 passages of ~1 KB, a case line with 2–4
  required facts and a known gap, and a response with 10–20 retrieved items,
  2–4 citations with offsets and 3–8 claims, each with 1–2 judgements (some
  with association, citation relevance, time and note);
- broken copies of the generated responses and passages: one error each, and
  four errors each, for the refusal path;
- the bundle of `import_bench.py` (10 passages, a 1 KB answer, 10 retrieved
  and 5 claims per case), whose import times are in docs/performance.md.

The options, each compiled once before timing:

- `ours`: `ingest.schema.schema_problems` (every problem, with pointers);
- `fastjsonschema`: one validator per kind, with `prefixItems` rewritten to
  draft 7's `items: [...]` (fastjsonschema ignores `prefixItems`) and our
  date-time test as a custom format (its own accepts `+0200` and second 60).
  The whole schema cannot be used as written: its relative `$id` sends
  fastjsonschema's resolver to fetch a URL, and its `oneOf` would make every
  refusal "data must be valid exactly by one definition". `$refs kept` is the
  kind's `$ref` to `$defs`; the others have every `$ref` inlined (see
  `inlined`). Stops at the first error, or with `fast_fail=False` goes on;
- `jsonschema`: a `Draft202012Validator` per kind with the format checker;
  `is_valid` for the accept path, `iter_errors` to list every problem;
- `hybrid`: fastjsonschema first, ours only for a line it refuses.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bundles import VOCABULARY as WORDS  # noqa: E402
from bench.bundles import import_bundle_lines as bundle_lines  # noqa: E402
from bench.bundles import passage_text, sentence_pool  # noqa: E402
from ingest.bundle import LINE_KINDS, SCHEMA_PATH, parse_line  # noqa: E402
from ingest.schema import is_rfc3339, schema_problems  # noqa: E402

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
SUPPORTS = ("supported", "partial", "unsupported", "not_assessable")


# --- data ------------------------------------------------------------------------------------


def fixture_lines() -> list[dict]:
    lines = []
    for path in sorted((ROOT / "fixtures").glob("*.jsonl")):
        lines += [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines() if t]
    return lines


def generated_lines(cases: int, seed: int = 11) -> list[dict]:
    """A run line, then per case 20 passages, the case and its response (see the docstring)."""
    rng = random.Random(seed)
    pool = sentence_pool()
    lines: list[dict] = [
        {
            "kind": "run", "schema": "evidence-bundle/1", "run_id": "schema-bench",
            "created_at": "2026-10-01T12:00:00Z", "collection_snapshot": "kb@1",
            "system": {"model": "m", "prompt_version": "p1"},
        }
    ]  # fmt: skip
    for i in range(cases):
        refs = [f"doc{i}@v1#c{j}" for j in range(1, 21)]
        for j, ref in enumerate(refs, start=1):
            text = passage_text(pool, i, j)
            lines.append(
                {
                    "kind": "passage", "ref": ref, "doc_id": f"doc{i}", "version": "v1",
                    "chunk_id": f"c{j}", "text": text,
                    "sha256": hashlib.sha256(text.encode()).hexdigest(),
                    "title": f"Document {i}", "url": f"https://kb.example/doc{i}#c{j}",
                    "version_status": "current",
                }
            )  # fmt: skip
        facts = [
            {"fact_id": f"F{k}", "text": pool[(i + k) % len(pool)], "evidence": [refs[k]]}
            for k in range(1, rng.randint(2, 4) + 1)
        ]
        lines.append(
            {
                "kind": "case", "case_id": f"case-{i:05d}",
                "query": f"Question {i}: what about {WORDS[i % len(WORDS)]}?",
                "required_facts": facts, "relevant_refs": refs[:4],
                "known_gaps": [{"gap_id": "X1", "text": "Nothing about prices."}],
            }
        )  # fmt: skip
        sentences = [pool[(i * 7 + k * 101) % len(pool)] for k in range(10)]
        text = " ".join(sentences)
        citations, claims = [], []
        for k in range(rng.randint(2, 4)):
            marker = f"[{k + 1}]"
            start = len(text)
            text += f" {marker}"
            citations.append(
                {"marker": marker, "ref": refs[k], "start": start + 1, "end": start + 4}
            )
        for k in range(rng.randint(3, 8)):
            cited = [refs[k % len(citations)]] if k % 3 else []
            judgements = []
            for r in range(rng.randint(1, 2)):
                judgement = {
                    "annotator": f"judge-{r}",
                    "support": SUPPORTS[(i + k + r) % 4],
                    "reason": f"Passage {refs[k % 4]} was read against claim {k + 1}.",
                }
                if r:
                    judgement |= {
                        "association": "attached" if cited else "missing",
                        "at": "2026-10-01T12:30:00.250+02:00",
                        "note": "Second opinion.",
                    }
                if cited:
                    judgement["citation_relevance"] = {cited[0]: "necessary"}
                judgements.append(judgement)
            claims.append(
                {
                    "claim_id": f"c{k + 1}", "text": sentences[k],
                    "spans": [[k * 100, k * 100 + 90]], "citations": cited,
                    "facts": ["F1"] if k == 0 else [], "judgements": judgements,
                }
            )  # fmt: skip
        retrieved = [
            {"ref": refs[r], "rank": r + 1, "score": round(1 - r / 25, 3)}
            for r in range(rng.randint(10, 20))
        ]
        lines.append(
            {
                "kind": "response", "case_id": f"case-{i:05d}", "answer_id": f"a{i}",
                "text": text, "retrieved": retrieved, "citations": citations, "claims": claims,
                "trace": {"latency_ms": rng.randint(300, 3000)},
            }
        )  # fmt: skip
    return lines


BREAKS: list[Callable[[dict], None]] = [
    lambda r: r["claims"][0]["judgements"][0].update(support="mostly"),
    lambda r: r["retrieved"][3].update(rank=0),
    lambda r: r.update(confidence=0.9),
    lambda r: r["citations"][0].pop("ref"),
    lambda r: r["claims"][1]["judgements"][0].update(reason="  "),
    lambda r: r["claims"][2].update(spans=[[-1, "x"]]),
]
PASSAGE_BREAKS: list[Callable[[dict], None]] = [
    lambda p: p.update(sha256=p["sha256"].upper()),
    lambda p: p.pop("chunk_id"),
    lambda p: p.update(version_status="old"),
    lambda p: p.update(doc_id="doc 1"),
]


def broken_lines(lines: list[dict], errors: int) -> list[dict]:
    """Copies of the responses and passages with `errors` distinct errors each."""
    broken = []
    for n, line in enumerate(lines):
        if line["kind"] not in ("response", "passage"):
            continue
        changes = BREAKS if line["kind"] == "response" else PASSAGE_BREAKS
        line = copy.deepcopy(line)
        for k in range(errors):
            changes[(n + k) % len(changes)](line)
        broken.append(line)
    return broken


# --- the options -----------------------------------------------------------------------------


def draft7_tuples(node: Any) -> Any:
    """`prefixItems` (2020-12) as `items: [...]` (draft 7): fastjsonschema ignores the former."""
    if isinstance(node, list):
        return [draft7_tuples(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: draft7_tuples(value) for key, value in node.items()}
    if "prefixItems" in node:
        node["items"] = node.pop("prefixItems")
    return node


def inlined(node: Any, defs: dict) -> Any:
    """Every `$ref` replaced by its definition (ours are not recursive).

    fastjsonschema calls a function per `$ref` and formats the path of the value
    for it, error or not (`"...[{x}].ref".format(**locals())`): a third of its time.
    """
    if isinstance(node, list):
        return [inlined(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return inlined(defs[node["$ref"].removeprefix("#/$defs/")], defs)
    return {key: inlined(value, defs) for key, value in node.items()}


def fastjsonschema_validators(
    *, fast_fail: bool = True, inline: bool = True
) -> dict[str, Callable[[dict], Any]]:
    import fastjsonschema

    defs = draft7_tuples(SCHEMA["$defs"])
    return {
        kind: fastjsonschema.compile(
            inlined(defs[kind], defs) if inline else {"$ref": f"#/$defs/{kind}", "$defs": defs},
            formats={"date-time": is_rfc3339},
            use_default=False,
            fast_fail=fast_fail,
        )
        for kind in LINE_KINDS
    }


def jsonschema_validators() -> dict[str, Any]:
    from jsonschema import Draft202012Validator

    checker = Draft202012Validator.FORMAT_CHECKER
    return {
        kind: Draft202012Validator(
            {"$ref": f"#/$defs/{kind}", "$defs": SCHEMA["$defs"]}, format_checker=checker
        )
        for kind in LINE_KINDS
    }


def options() -> dict[str, Callable[[dict], Any]]:
    from fastjsonschema import JsonSchemaException

    fast = fastjsonschema_validators()
    fast_refs = fastjsonschema_validators(inline=False)
    fast_all = fastjsonschema_validators(fast_fail=False)
    reference = jsonschema_validators()

    def ours(line: dict) -> Any:
        return schema_problems(1, line)

    def fastjsonschema_first(line: dict) -> Any:
        try:
            fast[line["kind"]](line)
        except JsonSchemaException as error:
            return [error]
        return []

    def fastjsonschema_refs(line: dict) -> Any:
        try:
            fast_refs[line["kind"]](line)
        except JsonSchemaException as error:
            return [error]
        return []

    def fastjsonschema_all(line: dict) -> Any:
        try:
            fast_all[line["kind"]](line)
        except JsonSchemaException as error:
            return getattr(error, "errors", [error])
        return []

    def jsonschema_valid(line: dict) -> Any:
        return reference[line["kind"]].is_valid(line)

    def jsonschema_all(line: dict) -> Any:
        return list(reference[line["kind"]].iter_errors(line))

    def hybrid(line: dict) -> Any:
        try:
            fast[line["kind"]](line)
        except JsonSchemaException:
            return schema_problems(1, line)
        return []

    return {
        "ours (all problems)": ours,
        "fastjsonschema, $refs kept": fastjsonschema_refs,
        "fastjsonschema (first error)": fastjsonschema_first,
        "fastjsonschema fast_fail=False": fastjsonschema_all,
        "jsonschema is_valid": jsonschema_valid,
        "jsonschema iter_errors (all)": jsonschema_all,
        "hybrid: fastjsonschema, then ours": hybrid,
    }


# --- measuring -------------------------------------------------------------------------------


def lines_per_second(
    checks: dict[str, Callable[[dict], Any]], lines: list[dict], repeats: int
) -> dict[str, float]:
    """Best of `repeats` for each check, in CPU time of this process, taken in turns so
    that a busy moment of a shared machine does not fall on one option only."""
    best = dict.fromkeys(checks, float("inf"))
    for _ in range(repeats):
        for name, check in checks.items():
            started = time.process_time()
            for line in lines:
                check(line)
            best[name] = min(best[name], time.process_time() - started)
    return {name: len(lines) / seconds for name, seconds in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--messages", action="store_true", help="show messages for bad lines")
    args = parser.parse_args()

    generated = generated_lines(args.cases)
    responses = [line for line in generated if line["kind"] == "response"]
    passages = [line for line in generated if line["kind"] == "passage"]
    data = {
        "fixtures (57 lines)": fixture_lines(),
        f"generated bundle ({len(generated):,} lines)": generated,
        "  of which passages": passages,
        "  of which responses": responses,
        "import_bench.py's bundle (100 cases)": list(bundle_lines(100)),
        "broken, 1 error each": broken_lines(generated, 1),
        "broken, 4 errors each": broken_lines(generated, 4),
    }
    size = sum(len(json.dumps(line)) for line in responses) / len(responses)
    print(f"generated: {args.cases} cases, response lines {size / 1000:.1f} KB on average")
    checks = options()
    for name, check in checks.items():
        for line in data["fixtures (57 lines)"] + generated:
            assert not check(line) or name.startswith("jsonschema is_valid"), (name, line)
    width = max(map(len, data))
    print(f"{'lines/s, best of ' + str(args.repeats):<{width}}", *checks, sep=" | ")
    for label, lines in data.items():
        rates = lines_per_second(checks, lines, args.repeats)
        figures = [f"{rate:>{len(name)},.0f}" for name, rate in rates.items()]
        print(f"{label:<{width}}", *figures, sep=" | ")
    for label, lines in (("generated bundle", generated), ("generated responses", responses)):
        raw = [json.dumps(line, ensure_ascii=False).encode() for line in lines]
        best = float("inf")
        for _ in range(args.repeats):
            started = time.process_time()
            for number, text in enumerate(raw, start=1):
                parse_line(number, text)
            best = min(best, time.process_time() - started)
        print(f"for scale, parse_line on the {label}: {len(raw) / best:,.0f} lines/s")
    if args.messages:
        broken = data["broken, 4 errors each"]
        samples = [
            next(line for line in broken if line["kind"] == kind)
            for kind in ("passage", "response")
        ]
        show_messages(checks, samples)


def show_messages(checks: dict[str, Callable[[dict], Any]], lines: list[dict]) -> None:
    for line in lines:
        print(f"\n--- a broken {line['kind']} line")
        for name in (
            "ours (all problems)",
            "fastjsonschema (first error)",
            "fastjsonschema fast_fail=False",
            "jsonschema iter_errors (all)",
        ):
            print(f"  {name}:")
            for found in checks[name](line):
                if hasattr(found, "message") and hasattr(found, "absolute_path"):
                    where = "".join(f"/{part}" for part in found.absolute_path)
                    print(f"    {where}: {found.message[:150]}")
                elif hasattr(found, "rule"):
                    print(f"    {found.name}: {found.message[:150]}")
                else:
                    print(f"    {found.path}: {found.message}")


if __name__ == "__main__":
    main()
