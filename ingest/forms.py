from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.formats import number_format
from django.utils.translation import gettext_lazy as _

from ingest.convert import SNAPSHOT_CHARS, snapshot_name

BUNDLE = "bundle"
FORMAT_CHOICES = [
    (BUNDLE, _("Evidence bundle (evidence-bundle/1)")),
    ("ragas", _("Ragas evaluation export (JSONL), converted first")),
    ("alce", _("ALCE result file (JSON), converted first")),
    ("jsonl-simple", _("Minimal JSONL (query, answer, contexts), converted first")),
]


class BundleUploadForm(forms.Form):
    source_format = forms.ChoiceField(
        label=_("File format"), choices=FORMAT_CHOICES, initial=BUNDLE, required=False
    )
    run_id = forms.RegexField(
        label=_("Run id (converted files; default: the file's name)"),
        regex=r"^[A-Za-z0-9._:-]{1,100}$",
        required=False,
        max_length=100,
    )
    snapshot = forms.CharField(
        label=_("Collection snapshot (converted files; default: the format's name)"),
        max_length=SNAPSHOT_CHARS,
        required=False,
    )
    bundle = forms.FileField(
        label=_("File"),
        help_text=_(
            "A bundle or a Ragas export: JSON Lines; an ALCE result: one JSON document; "
            "minimal JSONL: one answer a line. Any of them may be gzip-compressed."
        ),
    )
    dry_run = forms.BooleanField(
        label=_("Check only (dry run): validate everything, store nothing"), required=False
    )
    new_expectation_version = forms.BooleanField(
        label=_("Record changed case expectations as new versions"), required=False
    )

    def __init__(self, *args, refused: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.refused = refused  # why the upload handler stopped receiving the file

    def clean(self):
        if self.refused:
            self._errors.pop("bundle", None)  # not "required": the file was cut off
            self.add_error("bundle", self.refused)
        return super().clean()

    def clean_source_format(self) -> str:
        return self.cleaned_data["source_format"] or BUNDLE

    def clean_snapshot(self) -> str:
        try:
            return snapshot_name(self.cleaned_data["snapshot"])
        except ValueError:
            raise forms.ValidationError(
                _("A snapshot name holds no control characters (tabs, line breaks).")
            ) from None

    def clean_bundle(self):
        bundle = self.cleaned_data["bundle"]
        limit = settings.BUNDLE_UPLOAD_MAX_BYTES
        if bundle.size > limit:
            raise forms.ValidationError(
                _(
                    "The file is %(size)s bytes; uploads are limited to %(limit)s bytes. "
                    "Use `manage.py import_bundle` for larger bundles."
                )
                % {
                    "size": number_format(bundle.size, force_grouping=True),
                    "limit": number_format(limit, force_grouping=True),
                }
            )
        return bundle
