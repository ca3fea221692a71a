"""Our compiled schema checker agrees with the reference validator, line by line.

`ingest.bundle.schema_problems` compiles the spec's schema into closures
for speed and readable messages. `jsonschema` (Draft 2020-12) walks the same
file as written. Every fixture line and a systematic set of broken lines
(derived from the schema itself: each required field dropped, each field
given a wrong type, each pattern, length, minimum, enum and const violated)
must be judged the same way by both.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ingest.bundle import SCHEMA_PATH, schema_problems
from tests.conftest import FIXTURES, ROOT

SHARED_SCHEMA = ROOT.parent / "shared" / "spec" / "bundle.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
DEFS = SCHEMA["$defs"]
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)

# Values of another JSON type, per declared type. True is here for "integer" and
# "number" because JSON Schema, like our checker, does not count booleans as numbers.
WRONG_TYPES: dict[str, list[Any]] = {
    "string": [5, None],
    "integer": ["1", True, 1.5],
    "number": ["0.5", True],
    "boolean": [0, "true"],
    "object": [[], "x"],
    "array": [{}, "x"],
}
# Strings that break the schema's patterns; the first one a pattern refuses is used.
PATTERN_BREAKERS = ["has space", "   ", "no-separators", "UPPER"]


def fixture_lines() -> list[tuple[str, dict]]:
    lines = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if text.strip():
                lines.append((f"{path.stem}:{number}", json.loads(text)))
    return lines


def fixture_line(name: str, number: int) -> dict:
    text = (FIXTURES / name).read_text(encoding="utf-8").splitlines()[number - 1]
    return json.loads(text)


def full_lines() -> dict[str, dict]:
    """One line of each kind with every optional field of the schema present."""
    run = fixture_line("q017-r2.jsonl", 1) | {
        "locale": "en-GB",
        "notes": "Replay with the new prompt.",
    }
    run["system"] |= {
        "retrieval_config": "bm25+rerank",
        "generation_config": "t=0",
        "app_revision": "abc123",
        "temperature": 0,  # other keys are kept verbatim
    }
    passage = fixture_line("q017-r1.jsonl", 2) | {
        "context_before": "Returns.",
        "context_after": "Refunds.",
        "superseded_by": "D-01@returns-v5#p04",
    }
    case = fixture_line("q017-r1.jsonl", 4)
    response = fixture_line("q017-r1.jsonl", 5) | {
        "abstained": False,
        "trace": {"latency_ms": 812, "tools": ["search"]},
    }
    response["retrieved"][0]["filters"] = {"lang": "en"}
    claim = response["claims"][0]
    claim |= {"kind": "factual", "gaps": []}
    claim["judgements"][0] |= {
        "association": "attached",
        "note": "Seen twice.",
        "at": "2026-09-29T10:00:00Z",
    }
    return {"run": run, "passage": passage, "case": case, "response": response}


def resolve(node: dict) -> dict:
    while "$ref" in node:
        node = DEFS[node["$ref"].removeprefix("#/$defs/")]
    return node


def bad_values(node: dict) -> Iterator[tuple[str, Any]]:
    """(what is violated, a value violating it) for one schema node, format aside."""
    node = resolve(node)
    for value in WRONG_TYPES.get(node.get("type", ""), []):
        yield f"type={json.dumps(value)}", value
    if "const" in node:
        yield "const", f"{node['const']}-other"
    if "enum" in node:
        yield "enum", "not-a-choice"
        yield "enum=true", True
    if "minLength" in node:
        yield "minLength", "x" * (node["minLength"] - 1)
    if "maxLength" in node:
        yield "maxLength", "a" * (node["maxLength"] + 1)
    if "pattern" in node:
        pattern = re.compile(node["pattern"])
        yield "pattern", next(s for s in PATTERN_BREAKERS if not pattern.search(s))
    if "minimum" in node:
        yield "minimum", node["minimum"] - 1
    if "minItems" in node:
        yield "minItems", [0] * (node["minItems"] - 1)
    if "maxItems" in node:
        yield "maxItems", [0] * (node["maxItems"] + 1)


def pointer(path: list[str | int]) -> str:
    return "".join(f"/{str(part).replace('~', '~0').replace('/', '~1')}" for part in path)


def put(line: dict, path: list[str | int], value: Any) -> dict:
    changed = copy.deepcopy(line)
    target = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return changed


def drop(line: dict, path: list[str | int]) -> dict:
    changed = copy.deepcopy(line)
    target = changed
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return changed


def mutations(node: dict, line: dict, value: Any, path: list) -> Iterator[tuple[str, dict, str]]:
    """(id, broken line, where our checker must complain) for every rule under `node`."""
    node = resolve(node)
    # A line that is not an object never reaches the checker (parse_line refuses it).
    for label, bad in bad_values(node) if path else ():
        yield f"{pointer(path)} {label}", put(line, path, bad), pointer(path)
    if isinstance(value, dict):
        for key in node.get("required", []):
            yield f"{pointer(path)}/{key} dropped", drop(line, [*path, key]), pointer([*path, key])
        extra = node.get("additionalProperties", True)
        if extra is False:
            where = [*path, "unexpected/field"]
            yield f"{pointer(path)} additional", put(line, where, 1), pointer(where)
        elif isinstance(extra, dict):
            for key, item in value.items():
                yield from mutations(extra, line, item, [*path, key])
        for key, sub in node.get("properties", {}).items():
            if key in value:
                yield from mutations(sub, line, value[key], [*path, key])
    if isinstance(value, list) and value:
        if "prefixItems" in node:
            for i, sub in enumerate(node["prefixItems"]):
                yield from mutations(sub, line, value[i], [*path, i])
        elif "items" in node:
            yield from mutations(node["items"], line, value[0], [*path, 0])


def optional_drops(node: dict, line: dict, value: Any, path: list) -> Iterator[tuple[str, dict]]:
    """Lines with one optional field left out: still valid for both."""
    node = resolve(node)
    if isinstance(value, dict):
        required = set(node.get("required", []))
        for key, sub in node.get("properties", {}).items():
            if key in value:
                if key not in required:
                    yield f"{pointer([*path, key])} omitted", drop(line, [*path, key])
                yield from optional_drops(sub, line, value[key], [*path, key])
    if isinstance(value, list) and value and "items" in node:
        yield from optional_drops(node["items"], line, value[0], [*path, 0])


def all_mutations() -> list[tuple[str, dict, str]]:
    found = []
    for kind, line in full_lines().items():
        for name, broken, where in mutations({"$ref": f"#/$defs/{kind}"}, line, line, []):
            found.append((f"{kind}{name}", broken, where))
    return found


def all_optional_drops() -> list[tuple[str, dict]]:
    found = []
    for kind, line in full_lines().items():
        for name, smaller in optional_drops({"$ref": f"#/$defs/{kind}"}, line, line, []):
            found.append((f"{kind}{name}", smaller))
    return found


MUTATIONS = all_mutations()
OPTIONAL_DROPS = all_optional_drops()
FIXTURE_LINES = fixture_lines()


def ours_valid(line: dict) -> bool:
    return not schema_problems(1, line)


def reference_valid(line: dict) -> bool:
    return VALIDATOR.is_valid(line)


# --- the schema file ------------------------------------------------------------------------


def test_the_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.skipif(not SHARED_SCHEMA.exists(), reason="no shared spec beside the project")
def test_our_schema_is_byte_identical_to_the_spec():
    assert SCHEMA_PATH.read_bytes() == SHARED_SCHEMA.read_bytes()


def test_the_generator_covers_every_kind_and_keyword():
    assert len(MUTATIONS) > 150
    labels = " ".join(name for name, _, _ in MUTATIONS)
    for keyword in (
        "dropped",
        "additional",
        "type=",
        "const",
        "enum",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "minItems",
        "maxItems",
    ):
        assert keyword in labels
    for kind in ("run", "passage", "case", "response"):
        assert any(name.startswith(f"{kind}/") for name, _, _ in MUTATIONS)


# --- agreement ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "line"), FIXTURE_LINES, ids=[n for n, _ in FIXTURE_LINES])
def test_every_fixture_line_is_valid_for_both(name, line):
    assert schema_problems(1, line) == []
    assert reference_valid(line), list(VALIDATOR.iter_errors(line))


@pytest.mark.parametrize("kind", ["run", "passage", "case", "response"])
def test_a_line_with_every_optional_field_is_valid_for_both(kind):
    line = full_lines()[kind]
    assert schema_problems(1, line) == []
    assert reference_valid(line)


@pytest.mark.parametrize(("name", "line"), OPTIONAL_DROPS, ids=[n for n, _ in OPTIONAL_DROPS])
def test_leaving_out_an_optional_field_is_valid_for_both(name, line):
    assert ours_valid(line)
    assert reference_valid(line)


@pytest.mark.parametrize(
    ("name", "line", "where"), MUTATIONS, ids=[name for name, _, _ in MUTATIONS]
)
def test_a_broken_line_is_invalid_for_both_and_we_say_where(name, line, where):
    assert not reference_valid(line), "the generator made a line the reference accepts"
    problems = schema_problems(1, line)
    assert problems, "our checker accepts a line the reference refuses"
    assert where in [problem.path for problem in problems]


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ({"case_id": "Q-017"}, "/kind"),
        ({"kind": "answer"}, "/kind"),
        ({"kind": 5}, "/kind"),
        ({"kind": None}, "/kind"),
        ({"kind": ["run"]}, "/kind"),
    ],
)
def test_a_line_without_a_known_kind_is_invalid_for_both(line, where):
    assert not reference_valid(line)
    assert [problem.path for problem in schema_problems(1, line)] == [where]


def test_a_line_of_one_kind_with_the_fields_of_another_is_invalid_for_both():
    line = full_lines()["passage"] | {"kind": "case"}
    assert not reference_valid(line)
    assert not ours_valid(line)


@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_is_not_an_integer_for_either(value):
    line = put(full_lines()["response"], ["retrieved", 0, "rank"], value)
    assert not reference_valid(line)
    assert not ours_valid(line)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["retrieved", 0, "rank"], 1.0),
        (["citations", 0, "start"], 67.0),
        (["claims", 0, "spans", 0, 0], 0.0),
    ],
    ids=["rank", "start", "span"],
)
def test_an_integral_float_is_judged_alike(path, value):
    line = put(full_lines()["response"], path, value)
    assert ours_valid(line) == reference_valid(line)


@pytest.mark.parametrize(
    "value",
    ["2026-09-28", "28/09/2026 09:00", "2026-09-28T09:00:00", "2026-13-01T00:00:00Z"],
)
def test_a_created_at_that_is_not_a_date_time_is_refused(value):
    line = full_lines()["run"] | {"created_at": value}
    assert [p.path for p in schema_problems(1, line)] == ["/created_at"]
    if "date-time" not in VALIDATOR.format_checker.checkers:
        pytest.skip("jsonschema asserts date-time only with rfc3339-validator installed")
    assert not reference_valid(line)


@pytest.mark.parametrize(
    "value", ["2026-09-28T09:00:00Z", "2026-09-28T09:00:00.123456+02:00", "2026-09-28t09:00:00z"]
)
def test_an_rfc3339_created_at_is_accepted(value):
    line = full_lines()["run"] | {"created_at": value}
    assert ours_valid(line)
    assert reference_valid(line)


def test_the_schema_file_is_the_one_the_checker_compiles():
    assert Path(SCHEMA_PATH).name == "bundle.schema.json"
    assert SCHEMA["$id"] == "evidence-bundle/1"
    assert {branch["$ref"] for branch in SCHEMA["oneOf"]} == {
        "#/$defs/run",
        "#/$defs/passage",
        "#/$defs/case",
        "#/$defs/response",
    }
