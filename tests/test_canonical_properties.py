"""Canonical JSON and the revision hashes (audit-package.md, "Rules"), pinned and by property.

"Canonical JSON: keys sorted, separators `,` and `:` without spaces, non-ASCII kept as
UTF-8, times in UTC RFC 3339 with microseconds."
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cards.chain import claim_revision_document, seal, verdict_revision_document
from evidence.canonical import (
    canonical_json,
    canonical_lines,
    canonical_str,
    canonical_text,
    compact_str,
    rfc3339,
    sha256_hex,
    text_sha256,
    unchecked_json,
)

MOMENT = datetime(2026, 10, 1, 12, 0, 0, 123456, tzinfo=UTC)
TEXT = "Rückgabe binnen 14 Tagen – außer Sale 📦"  # ü, en dash, ß, and a character beyond the BMP

# The bytes written by hand: keys in order, no space, `"` and newline escaped as JSON does,
# ü = c3 bc, – = e2 80 93, ß = c3 9f, 📦 = f0 9f 93 a6, ë = c3 ab (UTF-8, no \u escapes).
CANONICAL = (
    b'{"author":"zo\xc3\xab","case_id":"Q-017","citations":["D-01@returns-v4#p04"],'
    b'"claim_id":"c1","created_at":"2026-10-01T12:00:00.123456Z","facts":["G1"],"gaps":[],'
    b'"kind":"factual","origin":"review","prev_sha256":null,"project":"demo",'
    b'"reason":"Says \\"14\\"\\n","run_id":"q017-r1","seq":1,"spans":[[0,36]],'
    b'"text":"R\xc3\xbcckgabe binnen 14 Tagen \xe2\x80\x93 au\xc3\x9fer Sale \xf0\x9f\x93\xa6",'
    b'"type":"claim_revision","withdrawn":false}'
)
# The SHA-256 of those bytes, computed outside Python (printf … | sha256sum).
PINNED = "e96222ab292fe6bb3e6c73afa8458a41086c3db10ca62e7b622e48ef3b3b4119"


def document(**changes) -> dict:
    fields = {
        "project": "demo", "run_id": "q017-r1", "case_id": "Q-017", "claim_id": "c1", "seq": 1,
        "text": TEXT, "kind": "factual", "spans": [(0, 36)], "citations": ["D-01@returns-v4#p04"],
        "facts": ["G1"], "gaps": [], "withdrawn": False, "reason": 'Says "14"\n',
        "annotator": "zoë", "origin": "review", "created_at": MOMENT, "prev_sha256": None,
    }  # fmt: skip
    return claim_revision_document(**fields | changes)


def test_a_revision_with_non_ascii_text_has_the_pinned_canonical_bytes_and_hash():
    assert canonical_json(document()) == CANONICAL
    assert hashlib.sha256(CANONICAL).hexdigest() == PINNED
    assert seal(document()) == PINNED


def test_a_time_in_another_zone_is_written_in_utc_with_microseconds():
    berlin = MOMENT.astimezone(timezone(timedelta(hours=2)))
    assert seal(document(created_at=berlin)) == PINNED
    assert rfc3339(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05.000000Z"
    assert rfc3339(None) is None


@pytest.fixture
def server_in_berlin(monkeypatch):
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_time_is_written_in_utc_whatever_the_servers_time_zone(server_in_berlin):
    assert rfc3339(MOMENT) == "2026-10-01T12:00:00.123456Z"
    assert seal(document()) == PINNED


@pytest.mark.parametrize(
    "change",
    [
        {"text": TEXT + " "},
        {"seq": 2},
        {"withdrawn": True},
        {"prev_sha256": "0" * 64},
        {"annotator": "zoe"},
        {"spans": [(0, 35)]},
        {"gaps": ["X1"]},
        {"reason": "Says 14"},
        {"created_at": MOMENT + timedelta(microseconds=1)},
        {"kind": "abstention"},
    ],
    ids=lambda change: next(iter(change)),
)
def test_any_change_to_a_revision_changes_its_hash(change):
    assert seal(document(**change)) != PINNED


VERDICT_CANONICAL = (
    b'{"association":"attached","author":"zo\xc3\xab","case_id":"Q-017",'
    b'"citation_relevance":{"a":"irrelevant","b":"necessary"},"claim_id":"c1",'
    b'"contradicts":false,"created_at":"2026-10-01T12:00:00.123456Z",'
    b'"diagnosis":"qualifier_dropped","note":"","origin":"review",'
    b'"prev_sha256":"' + PINNED.encode() + b'","project":"demo",'
    b'"reason":"Gr\xc3\xb6\xc3\x9fe fehlt.","run_id":"q017-r1","seq":2,'
    b'"stated_at":"2026-09-30T08:00:00.000000Z","supersedes":1,"support":"partial",'
    b'"type":"verdict_revision"}'
)
VERDICT_PINNED = "7913d90e1d0f4ef04970cd33155d66b97b354b84f972965c21eab9b40ab320a8"


def verdict(**changes) -> dict:
    fields = {
        "project": "demo", "run_id": "q017-r1", "case_id": "Q-017", "claim_id": "c1", "seq": 2,
        "annotator": "zoë", "origin": "review", "association": "attached", "support": "partial",
        "contradicts": False, "reason": "Größe fehlt.", "diagnosis": "qualifier_dropped",
        "citation_relevance": {"b": "necessary", "a": "irrelevant"}, "note": "",
        "stated_at": datetime(2026, 9, 30, 8, tzinfo=UTC), "supersedes": 1,
        "created_at": MOMENT, "prev_sha256": PINNED,
    }  # fmt: skip
    return verdict_revision_document(**fields | changes)


def test_a_verdict_revision_has_the_pinned_canonical_bytes_and_hash():
    assert canonical_json(verdict()) == VERDICT_CANONICAL
    assert hashlib.sha256(VERDICT_CANONICAL).hexdigest() == VERDICT_PINNED
    assert seal(verdict()) == VERDICT_PINNED


def test_a_verdict_without_diagnosis_or_statement_time_writes_null():
    document = verdict(diagnosis="", stated_at=None, supersedes=None)
    assert (document["diagnosis"], document["stated_at"], document["supersedes"]) == (
        None, None, None,
    )  # fmt: skip


def test_a_passage_hash_is_of_its_utf8_bytes_without_normalisation():
    composed, decomposed = "é", "e\u0301"
    assert text_sha256(composed) == hashlib.sha256(b"\xc3\xa9").hexdigest()
    assert text_sha256(decomposed) == hashlib.sha256(b"e\xcc\x81").hexdigest()
    assert sha256_hex(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_canonical_json_refuses_what_json_cannot_spell(value):
    with pytest.raises(ValueError):
        canonical_json({"x": value})


# --- properties ---------------------------------------------------------------------------

scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)
STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


@given(json_values)
def test_canonical_json_round_trips(value):
    encoded = canonical_json(value)
    assert json.loads(encoded.decode("utf-8")) == value
    assert canonical_json(json.loads(encoded)) == encoded


@given(json_values)
def test_canonical_json_has_no_space_outside_strings(value):
    outside = STRING.sub(b"", canonical_json(value))
    assert not re.search(rb"\s", outside)


def sorted_pairs(pairs: list[tuple[str, object]]) -> dict:
    keys = [key for key, _ in pairs]
    assert keys == sorted(keys)
    return dict(pairs)


@given(json_values)
def test_canonical_json_sorts_keys_at_every_level(value):
    json.loads(canonical_json(value), object_pairs_hook=sorted_pairs)


@given(st.dictionaries(st.text(), st.integers(), min_size=2), st.randoms())
def test_canonical_json_does_not_depend_on_insertion_order(mapping, random):
    items = list(mapping.items())
    random.shuffle(items)
    assert canonical_json(dict(items)) == canonical_json(mapping)


@given(st.text(st.characters(min_codepoint=0x80, codec="utf-8")))
def test_non_ascii_is_kept_as_utf8(text):
    assert canonical_json(text) == b'"' + text.encode("utf-8") + b'"'


@given(st.text())
def test_a_text_is_written_with_json_escapes_only_where_json_requires_them(text):
    encoded = canonical_json({"t": text})
    assert encoded.startswith(b'{"t":"') and encoded.endswith(b'"}')
    body = encoded[6:-2]
    unescaped = re.sub(rb'\\(["\\/bfnrt]|u[0-9a-f]{4})', b"", body)
    assert b"\\" not in unescaped and b'"' not in unescaped
    # Only the characters JSON cannot carry raw (quote, backslash, controls) are escaped.
    raw = [c for c in text if c not in '"\\' and ord(c) >= 0x20]
    assert all(c.encode("utf-8") in body for c in raw)


def dumps(value) -> bytes:
    """The definition audit-package.md gives, spelled out: what canonical_json must equal."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


@given(json_values)
def test_canonical_json_is_the_documented_json_dumps(value):
    assert canonical_json(value) == dumps(value)


@given(st.lists(json_values, max_size=5))
def test_lines_encoded_together_are_each_values_canonical_json_and_a_newline(values):
    assert canonical_lines(values) == b"".join(dumps(value) + b"\n" for value in values)


@given(st.datetimes(timezones=st.timezones()))
def test_a_kept_time_is_spelled_as_a_fresh_one(moment):
    fresh = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert rfc3339(moment) == rfc3339(moment) == fresh


# --- the fast path (orjson) against the definition ------------------------------------------
# canonical_json writes values of plain types with orjson and everything else with json.dumps;
# these compare it with the definition where orjson is taken, and where it must not be.

any_text = st.text(st.characters(codec="utf-8"))  # non-ASCII, controls, beyond the BMP
plain_values = st.recursive(
    st.none() | st.booleans() | st.integers() | any_text,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(any_text, children, max_size=5)
    ),
    max_leaves=40,
)


@given(plain_values)
def test_a_value_without_floats_is_written_as_the_documented_json_dumps(value):
    assert canonical_json(value) == dumps(value)


@given(st.dictionaries(any_text, plain_values | json_values, max_size=6))
def test_a_nested_document_with_floats_and_big_integers_is_the_documented_json_dumps(value):
    assert canonical_json(value) == dumps(value)


@given(plain_values | json_values)
def test_the_canonical_text_is_the_documented_json_dumps_before_utf8(value):
    assert canonical_text(value) == canonical_str(value)
    assert canonical_text(value).encode("utf-8") == dumps(value)


@given(st.lists(plain_values | json_values, max_size=5))
def test_lines_of_plain_and_other_values_are_each_values_documented_json(values):
    # An audit package's members go through canonical_lines: orjson for some lines, the
    # reference encoder for others, in one batch.
    assert canonical_lines(values) == b"".join(dumps(value) + b"\n" for value in values)


@pytest.mark.parametrize(
    "value",
    [
        {"small": 1e-07, "tiny": 1.0067458831102272e-05, "big": 1e16, "one": 1.0},
        {"past_64_bits": 2**64, "negative": -(2**63) - 1, "huge": 10**30},
        {"nested": [{"deep": [0.5, {"x": 3e-9}]}]},
        {"a tuple": (1, "two")},
        {"é": "ü", "😀": "\u2028\u007f\u001f", "": ""},
    ],
)
def test_floats_big_integers_and_tuples_are_written_as_the_documented_json_dumps(value):
    assert canonical_json(value) == dumps(value)


@pytest.mark.parametrize(
    "value",
    [
        1e-4, -1e-4, 9.999999999999999e-05, 1.0000000000000001e-04, 0.0, -0.0, 5e-324,
        2.5e-4, 0.1 + 0.2, 1e15, 1e16, 1.5e17, 9007199254740993.0, 1.7976931348623157e308,
    ],
)  # fmt: skip
def test_a_float_on_either_side_of_the_fast_paths_edge_is_the_documented_json_dumps(value):
    assert canonical_json({"x": value, "in": [value]}) == dumps({"x": value, "in": [value]})


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_any_finite_float_is_the_documented_json_dumps(value):
    assert canonical_json([value]) == dumps([value])


def test_the_figures_floats_are_written_without_the_reference_encoder(monkeypatch):
    """A figure's value and interval are rounded to 4 places: zero or at least 1e-4, which
    orjson writes as json.dumps does (an audit package writes some 240,000 of them)."""
    import evidence.canonical

    monkeypatch.setattr(evidence.canonical, "canonical_str", _refused)
    figures = {"k": 3, "n": 7, "value": 0.4286, "low": 0.1582, "high": 0.7495, "zero": 0.0}
    assert canonical_json(figures) == dumps(figures)
    assert canonical_json({"score": 0.0001}) == b'{"score":0.0001}'


def _refused(value):
    raise AssertionError("the reference encoder was used")


@given(st.lists(plain_values.filter(lambda value: unchecked_json(value) is not None), max_size=5))
def test_lines_said_plain_are_each_values_documented_json_without_the_walk(values):
    with pytest.MonkeyPatch.context() as patch:
        import evidence.canonical

        patch.setattr(evidence.canonical, "is_plain", _refused)
        assert canonical_lines(values, plain=True) == b"".join(
            dumps(value) + b"\n" for value in values
        )


def test_a_line_said_plain_that_orjson_refuses_is_refused_as_before():
    with pytest.raises(UnicodeEncodeError):
        canonical_lines([{"t": "half a pair \ud800"}], plain=True)
    assert canonical_lines([{"n": 2**64}], plain=True) == b'{"n":18446744073709551616}\n'


def test_a_lone_surrogate_is_refused_as_before():
    with pytest.raises(UnicodeEncodeError):
        canonical_json({"t": "half a pair \ud800"})


def test_a_key_that_is_not_a_text_is_written_as_json_dumps_writes_it():
    assert canonical_json({2: "a", 1: True}) == dumps({2: "a", 1: True}) == b'{"1":true,"2":"a"}'


revision_fields = st.fixed_dictionaries(
    {
        "project": any_text, "run_id": any_text, "case_id": any_text, "claim_id": any_text,
        "seq": st.integers(min_value=1, max_value=2**40), "text": any_text,
        "kind": st.sampled_from(["factual", "abstention"]),
        "spans": st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=3),
        "citations": st.lists(any_text, max_size=3), "facts": st.lists(any_text, max_size=3),
        "gaps": st.lists(any_text, max_size=3), "withdrawn": st.booleans(),
        "reason": any_text, "annotator": any_text,
        "origin": st.sampled_from(["review", "imported"]),
        "created_at": st.datetimes(timezones=st.just(UTC)),
        "prev_sha256": st.none() | st.text("0123456789abcdef", min_size=64, max_size=64),
    }
)  # fmt: skip


@given(revision_fields)
def test_a_revision_is_sealed_with_the_hash_of_its_documented_json(fields):
    document = claim_revision_document(**fields)
    assert seal(document) == hashlib.sha256(dumps(document)).hexdigest()


def compact_dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@given(plain_values | json_values)
def test_a_json_column_is_written_as_compact_json_dumps(value):
    assert compact_str(value) == compact_dumps(value)
