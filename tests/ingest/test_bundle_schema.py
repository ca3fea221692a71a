"""Our compiled schema checker agrees with the reference validator, line by line.

`ingest.schema.schema_problems` compiles the spec's schema into closures
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

from ingest.bundle import SCHEMA_PATH
from ingest.schema import SchemaError, compile_bundle_schema, compile_schema, schema_problems
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


def stretched(value: str, size: int) -> str:
    """`value` cut or padded with its own last character to `size` characters."""
    return value[:size] + value[-1:] * (size - len(value))


def at_limits(node: dict, line: dict, value: Any, path: list) -> Iterator[tuple[str, dict]]:
    """Lines with one value exactly at a limit of its rule: still valid for both."""
    node = resolve(node)
    if isinstance(value, str):
        pattern = re.compile(node.get("pattern", ""))
        for key in ("minLength", "maxLength"):
            if key in node:
                candidate = stretched(value, node[key])
                if candidate and pattern.search(candidate):
                    yield f"{pointer(path)} {key}", put(line, path, candidate)
    if "minimum" in node and isinstance(value, int | float):
        yield f"{pointer(path)} minimum", put(line, path, node["minimum"])
    if isinstance(value, list):
        for key in ("minItems", "maxItems"):
            if key in node and value:
                yield f"{pointer(path)} {key}", put(line, path, stretch_list(value, node[key]))
        if "prefixItems" in node:
            for i, sub in enumerate(node["prefixItems"]):
                yield from at_limits(sub, line, value[i], [*path, i])
        elif "items" in node and value:
            yield from at_limits(node["items"], line, value[0], [*path, 0])
    if isinstance(value, dict):
        for key, sub in node.get("properties", {}).items():
            if key in value:
                yield from at_limits(sub, line, value[key], [*path, key])


def stretch_list(value: list, size: int) -> list:
    return (value + value[-1:] * size)[:size]


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


def all_at_limits() -> list[tuple[str, dict]]:
    found = []
    for kind, line in full_lines().items():
        for name, edge in at_limits({"$ref": f"#/$defs/{kind}"}, line, line, []):
            found.append((f"{kind}{name}", edge))
    return found


MUTATIONS = all_mutations()
OPTIONAL_DROPS = all_optional_drops()
AT_LIMITS = all_at_limits()
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


@pytest.mark.parametrize(("name", "line"), AT_LIMITS, ids=[n for n, _ in AT_LIMITS])
def test_a_value_exactly_at_a_limit_is_valid_for_both(name, line):
    assert reference_valid(line), "the generator made a line the reference refuses"
    assert schema_problems(1, line) == []


def test_the_limit_generator_covers_every_kind_of_limit():
    labels = " ".join(name for name, _ in AT_LIMITS)
    for keyword in ("minLength", "maxLength", "minimum", "minItems", "maxItems"):
        assert keyword in labels


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
    [
        "2026-09-28",
        "28/09/2026 09:00",
        "2026-09-28T09:00:00",
        "2026-13-01T00:00:00Z",
        "2026-10-01 12:00:00Z",
        "2026-10-01_12:00:00Z",
        "2026-09-28T09:00:00+0200",
        "2026-09-28T09:00:00+02",
        "2026-09-28T24:00:00Z",
        "2026-09-28T09:00:60Z",
        "2026-02-29T09:00:00Z",
        "2026-04-31T09:00:00Z",
        "0000-01-01T00:00:00Z",
        "2026-09-28T09:00:00.Z",
        " 2026-09-28T09:00:00Z",
    ],
)
def test_a_created_at_that_is_not_a_date_time_is_refused(value):
    line = full_lines()["run"] | {"created_at": value}
    assert [p.path for p in schema_problems(1, line)] == ["/created_at"]
    if "date-time" not in VALIDATOR.format_checker.checkers:
        pytest.skip("jsonschema asserts date-time only with rfc3339-validator installed")
    assert not reference_valid(line)


@pytest.mark.parametrize(
    "value",
    [
        "2026-09-28T09:00:00Z",
        "2026-09-28T09:00:00.123456+02:00",
        "2026-09-28t09:00:00z",
        "2024-02-29T23:59:59.5-00:00",
        "0001-01-01T00:00:00.1234567890+23:59",
    ],
)
def test_an_rfc3339_created_at_is_accepted(value):
    line = full_lines()["run"] | {"created_at": value}
    assert ours_valid(line)
    assert reference_valid(line)


def test_a_date_time_with_a_final_newline_is_refused_though_the_reference_accepts_it():
    # rfc3339-validator matches with Python's `$`, which also matches before a final
    # newline. RFC 3339 has no newline in a date-time, and we store what we accept.
    line = full_lines()["run"] | {"created_at": "2026-09-28T09:00:00Z\n"}
    assert [p.path for p in schema_problems(1, line)] == ["/created_at"]
    assert reference_valid(line)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "2026-10-01 12:00:00Z",
            '"2026-10-01 12:00:00Z" is not an RFC 3339 date-time: '
            'put "T" between date and time, not a space',
        ),
        (
            "2026-10-01T12:00:00",
            '"2026-10-01T12:00:00" is not an RFC 3339 date-time: '
            "it needs Z (UTC) or an offset like +02:00",
        ),
        ("2026-02-30T12:00:00Z", '"2026-02-30T12:00:00Z" is not an RFC 3339 date-time'),
    ],
    ids=["space", "no-offset", "no-such-day"],
)
def test_a_refused_date_time_says_what_to_fix_when_it_can(value, message):
    line = full_lines()["run"] | {"created_at": value}
    assert [(p.path, p.message) for p in schema_problems(1, line)] == [("/created_at", message)]


# --- what the checker does not implement, it refuses to compile --------------------------------


def schema_with(path: list[str], **keywords: Any) -> dict:
    """A copy of the schema with `keywords` added to the node at `path`."""
    schema = copy.deepcopy(SCHEMA)
    node = schema
    for part in path:
        node = node[part]
    node.update(keywords)
    return schema


RANK = ["$defs", "response", "properties", "retrieved", "items", "properties", "rank"]


def test_the_schema_compiles():
    assert set(compile_bundle_schema(SCHEMA)) == {"run", "passage", "case", "response"}


@pytest.mark.parametrize(
    ("path", "keywords", "message"),
    [
        (RANK, {"maximum": 50}, "#/$defs/response/properties/retrieved/items/properties/rank: "
         "the bundle checker does not implement maximum"),
        (["$defs", "id"], {"maxlength": 5}, "#/$defs/id: the bundle checker does not "
         "implement maxlength"),
        (["$defs", "run"], {"anyOf": [{"required": ["label"]}]}, "#/$defs/run: the bundle "
         "checker does not implement anyOf"),
        (["$defs", "run", "properties", "system"], {"patternProperties": {"^x": {}}},
         "#/$defs/run/properties/system: the bundle checker does not implement "
         "patternProperties"),
        (["$defs", "case", "properties", "relevant_refs"], {"uniqueItems": True},
         "#/$defs/case/properties/relevant_refs: the bundle checker does not implement "
         "uniqueItems"),
        (["$defs"], {"unused": {"type": "string", "minimum": 1, "multipleOf": 2}},
         "#/$defs/unused: the bundle checker does not implement multipleOf"),
        ([], {"if": {"required": ["kind"]}}, "#: the bundle checker does not implement if"),
        (["$defs", "passage", "properties", "url"], {"format": "uri"},
         "#/$defs/passage/properties/url/format: must be one the checker asserts (date-time)"),
        (["$defs", "response", "properties", "claims", "items", "properties", "spans", "items"],
         {"items": [{"type": "integer"}]}, "/spans/items/items: must be one schema (a list of "
         "item schemas is draft 7; use prefixItems)"),
        (["$defs", "ref"], {"maxLength": "600"}, "#/$defs/ref/maxLength: must be a "
         "non-negative integer"),
        (["$defs", "run", "properties", "run_id"], {"minLength": 1}, "#/$defs/run/properties/"
         "run_id: $ref beside minLength is not supported"),
        (["$defs", "run", "properties", "baseline_run_id"], {"$ref": "#/$defs/run_id"},
         "$ref '#/$defs/run_id' does not name an entry of $defs"),
        (["$defs", "text"], {"type": "str"}, "#/$defs/text/type: must be one of object, array"),
        (["$defs", "id"], {"pattern": "^[A-Z"}, "#/$defs/id/pattern: does not compile"),
        ([], {"$schema": "http://json-schema.org/draft-07/schema#"}, "#/$schema: the bundle "
         "checker reads https://json-schema.org/draft/2020-12/schema only"),
        (["$defs", "case", "properties", "kind"], {"const": "run"}, "#/$defs/case: must "
         "require `kind` with const \"case\""),
    ],
    ids=[
        "maximum", "misspelt", "anyOf", "patternProperties", "uniqueItems", "unused-def", "root",
        "format", "draft-7-items", "bad-value", "ref-sibling", "dangling-ref", "unknown-type",
        "bad-pattern", "other-draft", "kind-not-pinned",
    ],
)  # fmt: skip
def test_compiling_refuses_what_the_checker_does_not_implement(path, keywords, message):
    with pytest.raises(SchemaError) as info:
        compile_bundle_schema(schema_with(path, **keywords))
    assert message in str(info.value)


def test_annotations_change_nothing_and_compile():
    schema = schema_with(["$defs", "id"], description="An id.", examples=["Q-017"])
    assert set(compile_bundle_schema(schema)) == {"run", "passage", "case", "response"}


# --- keywords the spec's schema does not use yet, as JSON Schema defines them ------------------


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"maxLength": 2}, 12345),  # a string rule says nothing about a number
        ({"maxLength": 2}, "abc"),
        ({"minimum": 3}, "a string"),
        ({"minimum": 3}, 2),
        ({"minItems": 1}, {}),
        ({"minItems": 1}, []),
        ({"required": ["a"]}, ["a"]),
        ({"required": ["a"]}, {}),
        ({"enum": [1, "x"]}, True),
        ({"enum": [1, "x"]}, 1.0),
        ({"enum": [True]}, 1),
        ({"enum": [[1, 2]]}, [1, 2]),
        ({"const": 0}, False),
        ({"const": {"a": [1]}}, {"a": [1.0]}),
        ({"const": None}, None),
        ({"type": ["string", "null"]}, None),
        ({"type": ["string", "null"]}, 0),
        ({"type": "null"}, False),
        ({"prefixItems": [{"type": "integer"}], "items": False}, [1]),
        ({"prefixItems": [{"type": "integer"}], "items": False}, [1, 2]),
        ({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, [1, "a", 2]),
        ({"properties": {"a": False}}, {"a": 1}),
        ({"properties": {"a": False}}, {"b": 1}),
        ({"additionalProperties": {"type": "integer"}}, {"a/b": "x"}),
        ({"pattern": "^a$"}, "a\n"),
        ({"pattern": "^a$|^b$"}, "a\n"),
        ({"pattern": "[$]"}, "$"),
    ],
)
def test_a_keyword_used_as_json_schema_defines_it(schema, value):
    found: list = []
    compile_schema(schema)(value, "", found)
    expected = Draft202012Validator(schema).is_valid(value)
    if isinstance(value, str) and value.endswith("\n") and "$" in schema.get("pattern", ""):
        expected = False  # ECMA-262's `$` is the end of the input (see _ecma_pattern)
    assert (not found) == expected, found


def test_a_recursive_definition_is_checked_all_the_way_down():
    kids = {"type": "array", "items": {"$ref": "#/$defs/tree"}}
    defs = {"tree": {"type": "object", "properties": {"kids": kids}}}
    check = compile_schema({"$ref": "#/$defs/tree"}, defs)
    found: list = []
    check({"kids": [{"kids": [{"kids": 5}]}]}, "", found)
    assert found == [("/kids/0/kids/0/kids", "must be an array, not a number")]


def test_the_schema_file_is_the_one_the_checker_compiles():
    assert Path(SCHEMA_PATH).name == "bundle.schema.json"
    assert SCHEMA["$id"] == "evidence-bundle/1"
    assert {branch["$ref"] for branch in SCHEMA["oneOf"]} == {
        "#/$defs/run",
        "#/$defs/passage",
        "#/$defs/case",
        "#/$defs/response",
    }
