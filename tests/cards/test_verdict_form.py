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


def _state(field) -> tuple:
    """What a use of a form could change in a declared field, if it changed any."""
    widget = field.widget
    return (
        repr(field.__dict__.get("_choices")),
        dict(widget.attrs),
        repr(getattr(widget, "choices", None)),
        field.required,
        dict(field.error_messages),
        field.initial,
        str(field.label),
    )


def test_forms_share_the_declared_fields_and_no_use_changes_them():
    # The declared fields are shared, not deep-copied into each form (cards.forms.SharedFields):
    # that holds only while nothing a form does changes them.
    before = {name: _state(field) for name, field in VerdictForm.base_fields.items()}
    posted = VerdictForm({"support": "bogus", "reason": " "}, initial=INITIAL, refs=["D-01"])
    assert not posted.is_valid()
    str(posted["support"]) + str(posted["diagnosis"]) + posted.hidden_html()
    fresh = VerdictForm(initial=INITIAL | {"support": "partial"}, refs=["D-01", "D-02"])
    str(fresh["support"]) + str(fresh["relevance_1"])
    assert {name: _state(field) for name, field in VerdictForm.base_fields.items()} == before
    shared = VerdictForm.base_fields["support"]
    assert posted.fields["support"] is fresh.fields["support"] is shared
    # The per-claim relevance fields stay each form's own.
    assert "relevance_0" not in VerdictForm.base_fields
    assert "relevance_1" not in posted.fields and "relevance_1" in fresh.fields
