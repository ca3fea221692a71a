from __future__ import annotations

import re

from django import forms
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext_lazy as _

from cards.models import Association, ClaimKind, Diagnosis, Relevance, Support

REASON_REQUIRED = _("A written reason is required: say what in the passage decides it.")
SPAN = re.compile(r"^\s*(\d+)\s*[-–:]\s*(\d+)\s*$")


def parse_spans(value: str) -> list[list[int]]:
    """'0-29, 36-69' (what a person types, and what the selection script writes) → [[0, 29], …]."""
    spans = []
    for part in filter(None, (p.strip() for p in value.split(","))):
        match = SPAN.match(part)
        if not match:
            raise forms.ValidationError(_("%(part)r is not a span like 12-40.") % {"part": part})
        spans.append([int(match[1]), int(match[2])])
    return spans


class SpansField(forms.CharField):
    def to_python(self, value):
        return parse_spans(super().to_python(value) or "")


class ClaimAddForm(forms.Form):
    text = forms.CharField(
        label=_("Claim"),
        max_length=5000,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={
            "required": _("The claim text is required: write it out, not only blanks.")
        },
    )
    spans = SpansField(
        label=_("Spans"), required=False, help_text=_("Offsets in the answer, e.g. 0-29, 36-69.")
    )
    kind = forms.ChoiceField(label=_("Kind"), choices=ClaimKind.choices, initial=ClaimKind.FACTUAL)
    facts = forms.MultipleChoiceField(label=_("Required facts it reports"), required=False)
    gaps = forms.MultipleChoiceField(label=_("Known gaps it is about"), required=False)

    def __init__(self, *args, fact_ids=(), gap_ids=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["facts"].choices = [(f, f) for f in fact_ids]
        self.fields["gaps"].choices = [(g, g) for g in gap_ids]


class ClaimReviseForm(ClaimAddForm):
    citations = forms.MultipleChoiceField(label=_("Attached citations"), required=False)
    withdrawn = forms.BooleanField(label=_("Withdraw this claim"), required=False)
    reason = forms.CharField(
        label=_("Reason"),
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": _("A reason for the change is required: say why.")},
    )
    seen_claim_seq = forms.IntegerField(widget=forms.HiddenInput)

    def __init__(self, *args, refs=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["citations"].choices = [(r, r) for r in refs]


# The verdict form's hidden inputs: what the card showed when it was loaded.
HIDDEN = ("seen_claim_seq", "seen_own_seq", "seen_head_seq", "adjudicate")


class SharedFields(dict):
    """A form's declared fields, shared by its instances instead of deep-copied into each.

    Django copies every field (its widget, choices and messages) into each form so that one
    form may change its own; the verdict form never changes a declared field, and two are
    made on every save (the one posted, the card's new one): the copies were 0.3 ms of
    each. The per-claim relevance fields are each instance's own (`VerdictForm.__init__`).
    A test holds the declared fields unchanged after a form is used.
    """

    def __deepcopy__(self, memo: dict) -> dict:
        return dict(self)


class VerdictForm(forms.Form):
    support = forms.ChoiceField(
        label=_("Support"), choices=Support.choices, widget=forms.RadioSelect
    )
    reason = forms.CharField(
        label=_("Reason"),
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": REASON_REQUIRED},
    )
    association = forms.ChoiceField(
        label=_("Citation"), choices=Association.choices, required=False
    )
    contradicts = forms.BooleanField(label=_("The passage contradicts the claim"), required=False)
    diagnosis = forms.ChoiceField(
        label=_("Diagnosis"), choices=[("", _("— none —")), *Diagnosis.choices], required=False
    )
    note = forms.CharField(
        label=_("Unresolved note"),
        required=False,
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 1}),
    )
    seen_claim_seq = forms.IntegerField(widget=forms.HiddenInput)
    seen_own_seq = forms.IntegerField(widget=forms.HiddenInput, required=False)
    seen_head_seq = forms.IntegerField(widget=forms.HiddenInput, required=False)
    adjudicate = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, refs=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.refs = list(refs)
        for i, ref in enumerate(self.refs):
            self.fields[f"relevance_{i}"] = forms.ChoiceField(
                label=_("Relevance of %(ref)s") % {"ref": ref},
                choices=[("", _("— not judged —")), *Relevance.choices], required=False,
            )  # fmt: skip

    def hidden_html(self) -> SafeString:
        """The four hidden inputs, as their widgets render them, written out directly: the
        form renderer's template took a tenth of a millisecond for each."""
        inputs = []
        for name in HIDDEN:
            field = self[name]
            value = field.field.widget.format_value(field.value())
            inputs.append(
                format_html('<input type="hidden" name="{}" id="{}">', name, field.auto_id)
                if value is None
                else format_html(
                    '<input type="hidden" name="{}" value="{}" id="{}">', name, value,
                    field.auto_id,
                )
            )  # fmt: skip
        return mark_safe("".join(inputs))  # each part escaped by format_html

    def relevance(self) -> dict[str, str]:
        return {
            ref: self.cleaned_data.get(f"relevance_{i}", "")
            for i, ref in enumerate(self.refs)
            if self.cleaned_data.get(f"relevance_{i}")
        }

    def relevance_fields(self):
        return [(ref, self[f"relevance_{i}"]) for i, ref in enumerate(self.refs)]


VerdictForm.base_fields = SharedFields(VerdictForm.base_fields)
