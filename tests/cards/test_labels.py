"""The support labels and their keys come from one list, cards.models.Support."""

from __future__ import annotations

import re

from cards.models import Support
from tests.cards.conftest import case_url


def test_the_card_form_offers_every_support_label_with_its_key_in_order(client, reviewer, claim):
    client.force_login(reviewer)
    content = client.get(case_url("q017-r3", "Q-017"), {"card": claim.key}).content.decode()
    shortcuts = re.findall(r'name="support" value="(\w+)"[^>]*aria-keyshortcuts="(\d)"', content)
    assert shortcuts == [(value, str(key)) for key, value in enumerate(Support.values, start=1)]
    # The key is shown but hidden from the accessible name: the radio is named "Supported".
    labels = re.findall(
        r'<span>([^<]+)</span><kbd class="small" aria-hidden="true">(\d)</kbd>', content
    )
    assert labels == [(label, str(key)) for key, label in enumerate(Support.labels, start=1)]
    assert "<dd>Supported, Partial, Unsupported, Not assessable</dd>" in content
