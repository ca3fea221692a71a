from __future__ import annotations

from django import forms
from django.conf import settings


class BundleUploadForm(forms.Form):
    bundle = forms.FileField(
        label="Bundle file",
        help_text="JSON Lines (evidence-bundle/1), optionally gzip-compressed.",
    )
    dry_run = forms.BooleanField(
        label="Check only (dry run): validate everything, store nothing", required=False
    )
    new_expectation_version = forms.BooleanField(
        label="Record changed case expectations as new versions", required=False
    )

    def __init__(self, *args, refused: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.refused = refused  # why the upload handler stopped receiving the file

    def clean(self):
        if self.refused:
            self._errors.pop("bundle", None)  # not "required": the file was cut off
            self.add_error("bundle", self.refused)
        return super().clean()

    def clean_bundle(self):
        bundle = self.cleaned_data["bundle"]
        limit = settings.BUNDLE_UPLOAD_MAX_BYTES
        if bundle.size > limit:
            raise forms.ValidationError(
                f"The file is {bundle.size:,} bytes; uploads are limited to {limit:,} bytes. "
                "Use `manage.py import_bundle` for larger bundles."
            )
        return bundle
