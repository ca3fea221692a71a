"""Forms of the evidence app."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from evidence.models import MAX_REVIEWERS_PER_CASE, AssignmentMode, Project


class ProjectSettingsForm(forms.Form):
    blind_review = forms.BooleanField(label=_("Blind review"), required=False)
    reviewers_per_case = forms.IntegerField(
        label=_("Reviewers per case"), min_value=1, max_value=MAX_REVIEWERS_PER_CASE
    )
    assignment = forms.ChoiceField(label=_("Assignment"), choices=AssignmentMode.choices)
    rotation = forms.MultipleChoiceField(label=_("Reviewers to deal cases to"), required=False)

    def __init__(self, *args, project: Project, members: list, **kwargs):
        kwargs.setdefault(
            "initial",
            {
                "blind_review": project.blind_review,
                "reviewers_per_case": project.reviewers_per_case,
                "assignment": project.assignment,
                "rotation": [m.user.get_username() for m in members if m.in_rotation],
            },
        )
        super().__init__(*args, **kwargs)
        names = [m.user.get_username() for m in members]
        self.fields["rotation"].choices = [(name, name) for name in names]
