"""Generated lines, valid and broken, are judged by our checker as the reference judges them.

Hypothesis builds lines from the schema itself (so a changed schema changes the
generator too), then breaks some of them: a value replaced by another JSON
value, a near-miss string (a character inserted, removed or changed; a
date-time with a field out of range, a space for the `T`, no offset; a string
at a length limit or one past it), a field dropped or added, an item removed.
For each line our `schema_problems` must find a problem exactly when
`jsonschema` (Draft 2020-12 with its format checker) refuses it, and name a
place on the path of each problem the reference finds.

One documented difference is left out: the reference reads the schema's
patterns and rfc3339-validator's date-time with Python's `$`, which also
matches before a final newline, so it accepts `"Q-017\\n"` as an id. ECMA-262
(and so JSON Schema) does not, nor do we; `test_bundle_schema.py` and
`test_bundle_import_errors.py` pin that case.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from typing import Any

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ingest.bundle import LINE_KINDS, SCHEMA_PATH
from ingest.schema import is_rfc3339, parse_rfc3339, schema_problems

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
DEFS = SCHEMA["$defs"]
CHECKER = Draft202012Validator.FORMAT_CHECKER
REFERENCE = Draft202012Validator(SCHEMA, format_checker=CHECKER)
# One validator per kind, so that its errors carry paths (the oneOf of REFERENCE hides them).
BRANCHES = {
    kind: Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": DEFS}, format_checker=CHECKER)
    for kind in LINE_KINDS
}

# As many examples as the profile gives (tests/conftest.py): 100 by default, 1,000 with
# HYPOTHESIS_PROFILE=thorough.
PROPERTY = settings(
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def resolve(node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        node = DEFS[node["$ref"].removeprefix("#/$defs/")]
    return node


def schema_nodes(node: Any = SCHEMA) -> list[dict]:
    found = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found += schema_nodes(value)
    elif isinstance(node, list):
        for value in node:
            found += schema_nodes(value)
    return found


def no_final_newline(text: str) -> str:
    return text + "." if text.endswith("\n") else text


# --- strategies ------------------------------------------------------------------------------

# Characters that matter to the schema: blanks of several kinds (Python's `\s` takes
# \x1c, ECMA's takes \ufeff), the ref separators, the escapes of a JSON pointer,
# date-time punctuation, and text beyond ASCII and beyond the BMP.
TRICKY = " \t\n\r\x1c\u00a0\u2003\ufeff@#~/:.,-+_TtZz019aAéß中😀"
tricky_chars = st.sampled_from(TRICKY) | st.characters(codec="utf-8")
texts = st.text(tricky_chars, max_size=12).map(no_final_newline)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


# What one field of a date-time may be instead, to make a near miss.
DATE_TIME_MISSES = {
    "year": ["0000", "26", "02026"],
    "month": ["00", "13", "1"],
    "day": ["00", "29", "30", "31", "32", "1"],
    "hour": ["24", "1"],
    "minute": ["60"],
    "second": ["60", "61"],
    "separator": [" ", "_", "", "TT"],
    "fraction": [".", ",5", ".x"],
    "offset": ["", "+0200", "+02", "+24:00", "+23:60", " Z", "UTC", "Z ", "ZZ"],
}


def date_times(*, near_miss: bool) -> st.SearchStrategy[str]:
    """RFC 3339 date-times; with near_miss, one field of each is out of range or misspelt."""
    moments = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))
    fields = st.fixed_dictionaries(
        {
            "moment": moments,
            "separator": st.sampled_from("Tt"),
            "fraction": st.sampled_from(["", ".5", ".250", ".123456", ".1234567890"]),
            "offset": st.sampled_from(["Z", "z", "+02:00", "-00:00", "+23:59", "-11:30"]),
        }
    )
    texts = fields.map(
        lambda f: (
            {
                "year": f"{f['moment'].year:04d}",
                "month": f"{f['moment'].month:02d}",
                "day": f"{f['moment'].day:02d}",
                "hour": f"{f['moment'].hour:02d}",
                "minute": f"{f['moment'].minute:02d}",
                "second": f"{f['moment'].second:02d}",
            }
            | f
        )
    )
    if near_miss:
        misses = st.sampled_from(
            [(field, value) for field, values in DATE_TIME_MISSES.items() for value in values]
        )
        texts = st.builds(lambda f, miss: f | dict([miss]), texts, misses)
    return texts.map(
        lambda f: (
            f"{f['year']}-{f['month']}-{f['day']}{f['separator']}"
            f"{f['hour']}:{f['minute']}:{f['second']}{f['fraction']}{f['offset']}"
        )
    )


def valid(node: Any) -> st.SearchStrategy[Any]:
    """Values the schema node accepts (most of the time: lengths are filtered, not built)."""
    node = resolve(node)
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kind = node.get("type")
    if kind == "string":
        lo, hi = node.get("minLength", 0), node.get("maxLength", 10**9)
        if node.get("format") == "date-time":
            strings = date_times(near_miss=False)
        elif node.get("pattern", "").startswith("^"):
            strings = st.from_regex(node["pattern"], fullmatch=True)
        elif "pattern" in node:  # unanchored: let it match anywhere, between blanks too
            found = st.from_regex(node["pattern"], fullmatch=True)
            around = st.sampled_from(["", " ", "\t\n", "\u00a0"]) | texts
            strings = st.builds(lambda *parts: "".join(parts), around, found, around)
        else:
            strings = st.text(tricky_chars, min_size=lo, max_size=min(hi, lo + 20))
        return strings.map(no_final_newline).filter(lambda s: lo <= len(s) <= hi)
    if kind == "integer":
        ints = st.integers(min_value=node.get("minimum"), max_value=10**6)
        return ints | ints.map(float)  # 3.0 is an integer to JSON Schema
    if kind == "number":
        return st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        if "prefixItems" in node:
            return st.tuples(*map(valid, node["prefixItems"])).map(list)
        # Not empty: an empty list hides every rule of its items (drops make empty ones).
        return st.lists(valid(node.get("items", True)), min_size=1, max_size=3)
    if kind == "object":
        properties = node.get("properties", {})
        required = node.get("required", [])
        fixed = st.fixed_dictionaries(
            {key: valid(properties[key]) for key in required},
            optional={key: valid(sub) for key, sub in properties.items() if key not in required},
        )
        extra = node.get("additionalProperties", True)
        if extra is False:
            return fixed
        values = json_values if extra is True else valid(extra)
        others = st.dictionaries(texts.filter(lambda k: k not in properties), values, max_size=2)
        return st.builds(lambda known, more: more | known, fixed, others)
    return json_values  # a schema with no type: anything


LINES = {kind: valid({"$ref": f"#/$defs/{kind}"}) for kind in LINE_KINDS}
lines = st.sampled_from(LINE_KINDS).flatmap(LINES.__getitem__)

# Names that mean something somewhere in the schema, to add where they do not belong.
FIELD_NAMES = sorted({key for node in schema_nodes() for key in node.get("properties", {})})


def places(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path below the line (not the line itself: a line is always an object)."""
    found = []
    if isinstance(value, dict):
        children = value.items()
    elif isinstance(value, list):
        children = enumerate(value)
    else:
        return found
    for key, child in children:
        found.append((*path, key))
        found += places(child, (*path, key))
    return found


def schema_at(kind: str, path: tuple) -> dict | None:
    """The schema node that judges the value at `path` of a line of `kind`, if one does."""
    node: Any = DEFS[kind]
    for key in path:
        node = resolve(node)
        if not isinstance(node, dict):
            return None
        if isinstance(key, int):
            prefix = node.get("prefixItems", [])
            node = prefix[key] if key < len(prefix) else node.get("items")
        elif key in node.get("properties", {}):
            node = node["properties"][key]
        else:
            node = node.get("additionalProperties")
    node = resolve(node)
    return node if isinstance(node, dict) else None


# Values of the other JSON types, per type: the near misses of `type`.
OTHER_TYPES = {
    "string": [1, None, ["x"]],
    "integer": [True, False, 1.5, "1", None],
    "number": [True, "0.5", None],
    "boolean": [0, 1, "true", None],
    "array": [{}, "x", None],
    "object": [[], "x", None],
}
# Every string an enum or a const of the schema allows: right words in the wrong place.
CHOICES = sorted(
    {c for node in schema_nodes() for c in [*node.get("enum", []), node.get("const")] if c}
)


def boundary_values(node: dict, value: Any) -> list[Any]:
    """Values just inside and just outside each rule of `node`, made from `value`.

    Some are shared objects (OTHER_TYPES): the caller copies the one it puts in a line,
    which later changes may edit.
    """
    found: list[Any] = list(OTHER_TYPES.get(node.get("type", ""), []))
    if isinstance(value, str):
        filler = value[-1:] or "a"
        for n in (node.get("minLength"), node.get("maxLength")):
            for size in (n - 1, n, n + 1) if n is not None and n > 0 else ():
                found.append(value[:size] + filler * (size - len(value)))
    if "minimum" in node:
        low = node["minimum"]
        found += [low - 1, low, low - 0.5, float(low), low + 0.5, float(low - 1)]
    for key in ("enum", "const"):
        if key in node:
            choices = node[key] if key == "enum" else [node[key]]
            found += [c.upper() for c in choices] + [[c] for c in choices] + [True, 1, None]
    if isinstance(value, list):
        for n in (node.get("minItems"), node.get("maxItems")):
            for size in (n - 1, n, n + 1) if n is not None and n > 0 else ():
                padding = [copy.deepcopy(value[-1] if value else 0) for _ in range(size)]
                found.append((value + padding)[:size])
    return found or [None]


def near_miss_string(draw: st.DrawFn, text: str) -> str:
    how = draw(st.sampled_from(["insert", "replace", "delete", "space-for-T", "other"]))
    at = draw(st.integers(0, len(text)))
    char = draw(tricky_chars)
    if how == "insert":
        return text[:at] + char + text[at:]
    if how == "replace":
        return text[:at] + char + text[at + 1 :]
    if how == "delete":
        return text[:at] + text[at + 1 :]
    if how == "space-for-T":
        return text.replace("T", " ", 1)
    return draw(date_times(near_miss=True) | st.sampled_from(CHOICES))


CHANGES = ("boundary", "near-miss", "replace", "drop", "add")


@st.composite
def changed_lines(
    draw: st.DrawFn, *, hows: tuple[str, ...] = CHANGES, counts: tuple[int, ...] = (1, 2, 3)
) -> dict:
    """A generated line with a few changes, each a `how` at a random place."""
    line = copy.deepcopy(draw(lines))
    kind = line["kind"]
    for _ in range(draw(st.sampled_from(counts))):
        # Places grouped by the field they are (/claims/*/spans/*/*): a field deep in a
        # list is picked as often as a top-level one, not once per instance.
        fields: dict[tuple, list[tuple]] = {}
        for path in places(line):
            fields.setdefault(tuple("*" if isinstance(k, int) else k for k in path), []).append(
                path
            )
        how = draw(st.sampled_from(hows))
        if how == "add" or not fields:
            holders = [()] + [p for p in places(line) if isinstance(get(line, p), dict | list)]
            holder = get(line, draw(st.sampled_from(holders)))
            if isinstance(holder, dict):
                holder[draw(st.sampled_from(FIELD_NAMES) | texts)] = draw(json_values)
            else:
                holder.append(draw(json_values))
            continue
        path = draw(st.sampled_from(fields[draw(st.sampled_from(sorted(fields, key=str)))]))
        parent, key, node = get(line, path[:-1]), path[-1], schema_at(kind, path)
        if how == "drop":
            del parent[key]
        elif how == "replace" or (how == "boundary" and node is None):
            parent[key] = draw(json_values)
        elif how == "boundary":
            parent[key] = copy.deepcopy(draw(st.sampled_from(boundary_values(node, parent[key]))))
        elif isinstance(parent[key], str):
            parent[key] = near_miss_string(draw, parent[key])
        elif isinstance(parent[key], int | float) and not isinstance(parent[key], bool):
            number = parent[key]
            parent[key] = draw(st.sampled_from([number - 1, number + 1, -number, number + 0.5]))
        else:
            parent[key] = draw(st.sampled_from([0, 1, "true", None, [], {}]))
    return line


def get(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def strings_end_with_a_newline(value: Any) -> bool:
    if isinstance(value, str):
        return value.endswith("\n")
    if isinstance(value, dict):
        return any(map(strings_end_with_a_newline, value.values()))
    if isinstance(value, list):
        return any(map(strings_end_with_a_newline, value))
    return False


def on_one_path(ours: str, theirs: str) -> bool:
    """The same place, or one inside the other (the reference names the object for a
    missing or extra field, we name the field; we stop at a wrong item count, it goes on)."""
    return ours == theirs or ours.startswith(theirs + "/") or theirs.startswith(ours + "/")


def pointer(path: Any) -> str:
    return "".join(f"/{str(part).replace('~', '~0').replace('/', '~1')}" for part in path)


def assert_judged_alike(line: dict) -> None:
    assume(not strings_end_with_a_newline(line))
    problems = schema_problems(1, line)
    event("refused" if problems else "accepted")
    assert (not problems) == REFERENCE.is_valid(line), (
        problems,
        [error.message[:200] for error in REFERENCE.iter_errors(line)],
    )
    kind = line.get("kind")
    if problems and isinstance(kind, str) and kind in BRANCHES:
        for error in BRANCHES[kind].iter_errors(line):
            where = pointer(error.absolute_path)
            assert any(on_one_path(p.path, where) for p in problems), (where, error.message)


# --- the properties --------------------------------------------------------------------------


@PROPERTY
@given(lines)
def test_a_generated_line_is_valid_for_both(line):
    assume(not strings_end_with_a_newline(line))
    assert REFERENCE.is_valid(line), [e.message for e in REFERENCE.iter_errors(line)]
    assert schema_problems(1, line) == []


@PROPERTY
@given(changed_lines(hows=("boundary",), counts=(1,)))
def test_a_line_with_one_value_at_or_past_a_limit_is_judged_as_the_reference_judges_it(line):
    assert_judged_alike(line)


@PROPERTY
@given(changed_lines())
def test_a_line_broken_anyhow_is_judged_as_the_reference_judges_it(line):
    assert_judged_alike(line)


@PROPERTY
@given(date_times(near_miss=True) | date_times(near_miss=False) | texts)
def test_a_date_time_is_judged_as_the_reference_judges_it(value):
    assume(not value.endswith("\n"))
    assert is_rfc3339(value) == CHECKER.conforms(value, "date-time")
    if is_rfc3339(value):
        moment = parse_rfc3339(value)
        assert moment.tzinfo is not None
        assert (moment.year, moment.month, moment.day) == tuple(map(int, value[:10].split("-")))
