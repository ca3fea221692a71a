"""The verdict form's hidden inputs, written out directly, are what Django's widgets render."""

from __future__ import annotations

import pytest

from cards.forms import HIDDEN, VerdictForm

INITIAL = {"seen_claim_seq": 3, "seen_own_seq": None, "seen_head_seq": 7, "adjudicate": False}


@pytest.mark.parametrize(
    ("data", "initial"),
    [
        (None, INITIAL),  # a fresh form
        (None, INITIAL | {"seen_own_seq": 5, "adjudicate": True}),
        (None, {}),
        ({"seen_claim_seq": "3", "seen_own_seq": "", "adjudicate": "True"}, INITIAL),  # posted
        ({"seen_claim_seq": "x<y", "seen_own_seq": '"5"'}, INITIAL),  # refused, escaped
        ({"support": "partial"}, INITIAL),  # nothing hidden posted at all
    ],
)
def test_the_hidden_inputs_are_what_their_widgets_render(data, initial):
    form = VerdictForm(data, initial=initial, refs=["D-01@v1#p1"])
    if data is not None:
        form.is_valid()
    assert form.hidden_html() == "".join(str(form[name]) for name in HIDDEN)
