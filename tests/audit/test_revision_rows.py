"""audit.revision_rows: a revision's document is encoded once, for its seal and its line."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from audit.revision_rows import _sealed_line
from evidence.canonical import canonical_json, is_plain
from tests.test_canonical_properties import json_values

# Keys on both sides of "sha256", and next to it, as well as any text.
keys = st.sampled_from(["author", "seq", "sha", "sha2560", "shb", "spans", "type", ""]) | st.text()
documents = st.dictionaries(keys.filter(lambda key: key != "sha256"), json_values, max_size=8)
digests = st.binary(min_size=1).map(lambda data: hashlib.sha256(data).hexdigest())


def seal(document: dict) -> str:
    return hashlib.sha256(canonical_json(document)).hexdigest()


@given(documents, st.booleans())
def test_the_line_is_the_canonical_json_of_the_document_with_its_sha256(document, plain):
    # `plain` as the rows say it, or wrongly: orjson's bytes are kept only where they hash
    # to the seal, which only the canonical bytes do.
    plain = plain or is_plain(document)
    digest = seal(document)
    line = _sealed_line(document, digest, plain=plain)
    assert line == canonical_json({**document, "sha256": digest}) + b"\n"


@given(documents, digests, st.booleans())
def test_a_document_that_does_not_hash_to_its_seal_has_no_line(document, digest, plain):
    assume(digest != seal(document))
    assert _sealed_line(document, digest, plain=plain) is None


@pytest.mark.parametrize("value", [1e-07, 1e16, 0.00001, 1.5])
def test_a_float_that_orjson_spells_otherwise_still_gets_the_canonical_line(value):
    """orjson writes 1e-7 for json.dumps's 1e-07: a document said to be plain that is not
    falls back to the reference encoder when its bytes miss the seal."""
    document = {"relevance": {"d1#p1": value}, "seq": 1}
    digest = seal(document)
    assert _sealed_line(document, digest, plain=True) == (
        canonical_json({**document, "sha256": digest}) + b"\n"
    )


def test_a_plain_document_is_written_without_the_reference_encoder(monkeypatch):
    import audit.revision_rows

    monkeypatch.setattr(audit.revision_rows, "canonical_json", _refused)
    document = {"text": "Ein Anspruch – 😀", "spans": [[0, 3]], "prev_sha256": None, "seq": 2}
    digest = seal(document)
    line = _sealed_line(document, digest, plain=True)
    assert line is not None and line.endswith(b"\n") and digest.encode() in line


def _refused(value):
    raise AssertionError("the reference encoder was used")
