"""A bundle line's JSON is read the same by the quick decoder (orjson) and the strict one.

`quick_decode` must give exactly what `strict_decode` gives (the same values, of the same
types, keys in the same order) or None, which sends the line to `strict_decode`; it must
never accept a line the strict one refuses: duplicate keys, NaN, numbers too large.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.bundle import parse_line, quick_decode, strict_decode

texts = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    [":", '":', '\\":', "a:b", "::", '"', "\\"]
)
numbers = (
    st.integers()
    | st.integers(min_value=2**62, max_value=2**66)
    | st.integers(min_value=-(2**66), max_value=-(2**62))
    | st.floats(allow_nan=False, allow_infinity=False)
)
values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=25,
)


def same(a, b) -> bool:
    """Equal values of equal types (1 is not 1.0, -0.0 is not 0.0), keys in equal order."""
    return json.dumps(a) == json.dumps(b)


def spelled(value, *, ascii_only: bool, spaced: bool) -> str:
    separators = (", ", " : ") if spaced else (",", ":")
    return json.dumps(value, ensure_ascii=ascii_only, separators=separators)


@given(values, st.booleans(), st.booleans())
def test_a_valid_line_is_read_as_the_strict_decoder_reads_it(value, ascii_only, spaced):
    text = spelled(value, ascii_only=ascii_only, spaced=spaced)
    quick = quick_decode(text)
    assert quick is None or same(quick, strict_decode(text))


def with_a_duplicate(value: dict, key: str, first, second) -> str:
    """The object's text with `key` written twice (`first`, then `second`)."""
    body = json.dumps(value, ensure_ascii=False)[1:-1]
    pair = f"{json.dumps(key, ensure_ascii=False)}:{json.dumps(first, ensure_ascii=False)}"
    again = f"{json.dumps(key, ensure_ascii=False)}:{json.dumps(second, ensure_ascii=False)}"
    return "{" + ",".join(part for part in (pair, body, again) if part) + "}"


@given(st.dictionaries(texts, values, max_size=4), texts, values, values)
def test_a_duplicate_key_is_never_read_quickly(value, key, first, second):
    value.pop(key, None)
    text = with_a_duplicate(value, key, first, second)
    assert quick_decode(text) is None
    with pytest.raises(ValueError, match="duplicate key"):
        strict_decode(text)


@given(st.dictionaries(texts, values, min_size=1, max_size=4), texts, values, st.data())
def test_a_duplicate_key_deep_inside_a_line_is_never_read_quickly(outer, key, first, data):
    inner = data.draw(st.dictionaries(texts, values, max_size=3))
    inner.pop(key, None)
    nested = with_a_duplicate(inner, key, first, first)  # even with the same value twice
    where = data.draw(st.sampled_from(sorted(outer)))
    marker = "a placeholder longer than any generated text"
    text = json.dumps({**outer, where: marker}, ensure_ascii=False).replace(
        json.dumps(marker), f"[1,{nested}]"
    )
    assert quick_decode(text) is None
    with pytest.raises(ValueError, match="duplicate key"):
        strict_decode(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"a":2}',
        '{"a":{"b":1,"b":1}}',
        '{"x:y":1,"a":1,"a":"::"}',  # the dropped member's colon made up by colons in strings
        '{"a":1,"a":"\\u003a"}',  # …or by one spelled as an escape
        '{"a":18446744073709551616}',  # past 64 bits: orjson makes it a float
        '{"a":-9223372036854775809}',
        '{"a":1e400}',
        '{"a":NaN}',
        '{"a":"\\u0000"}',
        '{"a":"\\ud800"}',
    ],
)
def test_lines_the_quick_decoder_leaves_to_the_strict_one(text):
    assert quick_decode(text) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '{"kind":"passage","ref":"a","ref":"b"}',
            "not valid JSON: duplicate key 'ref' in one object",
        ),
        ('{"n":123456789012345678901234567890}', None),
        ('{"n":1e400}', "not valid JSON: number 1e400 is too large"),
        ('{"n":NaN}', "not valid JSON: NaN is not a JSON number (NaN and Infinity are refused)"),
        ('{"a":"tab\there"}', "not valid JSON: Invalid control character at (column 10)"),
    ],
)
def test_a_line_is_refused_with_the_strict_decoders_words(text, problem):
    value, found = parse_line(3, text.encode())
    if problem is None:
        assert found is None and value == {"n": 123456789012345678901234567890}
    else:
        assert value is None and found.message == problem
