"""audit.revision_rows: a revision's document is encoded once, for its seal and its line."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from audit.revision_rows import _sealed_line
from evidence.canonical import canonical_json
from tests.test_canonical_properties import json_values

# Keys on both sides of "sha256", and next to it, as well as any text.
keys = st.sampled_from(["author", "seq", "sha", "sha2560", "shb", "spans", "type", ""]) | st.text()
documents = st.dictionaries(keys.filter(lambda key: key != "sha256"), json_values, max_size=8)
digests = st.binary(min_size=1).map(lambda data: hashlib.sha256(data).hexdigest())


@given(documents, digests)
def test_the_sealed_text_is_the_documents_canonical_json(document, digest):
    sealed, _ = _sealed_line(document, digest)
    assert sealed.encode("utf-8") == canonical_json(document)


@given(documents, digests)
def test_the_line_is_the_canonical_json_of_the_document_with_its_sha256(document, digest):
    _, line = _sealed_line(document, digest)
    assert line.encode("utf-8") == canonical_json({**document, "sha256": digest}) + b"\n"
