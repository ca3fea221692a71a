"""The pre-check hints of cards.jsonl are those of the case page and the figures."""

from __future__ import annotations

from tests.audit.test_audit_zip import export, members, rows
from tests.cards.conftest import aside_bundle
from tests.conftest import bundle_bytes, import_bytes


def test_a_card_citing_a_passage_its_response_never_retrieved_has_its_hints(project, tmp_path):
    import_bytes(bundle_bytes(*aside_bundle()))
    out = tmp_path / "package.zip"
    export("--run", "aside-r1", out=out)
    (card,) = rows(members(out)["cards/cards.jsonl"])
    # The superseded passage it cites says 30 days, as the claim does.
    assert card["prechecks"] == ["cites_superseded_version", "citation_not_retrieved"]
