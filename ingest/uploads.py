"""Receiving a bundle upload: only for a lead of the project, to a bounded temporary file.

Django parses a multipart body as soon as anything reads `request.POST` or
`request.FILES`, and the CSRF middleware does, before any view checks who is
asking: an anonymous POST carrying a CSRF cookie but no token made the server
write the whole body (163 MB and more) to /tmp before it answered 403. This
handler, the only one in FILE_UPLOAD_HANDLERS, decides from the URL and the
session before a byte of the file is read.
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler
from django.http import HttpRequest
from django.urls import Resolver404, resolve

from evidence.access import has_role
from evidence.models import Membership, Role

# The form's other fields (CSRF token, two check boxes) and the multipart framing.
FORM_OVERHEAD_BYTES = 64 * 1024


def may_upload(request: HttpRequest) -> bool:
    """Whether this request is a lead's POST to their project's upload page."""
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return False
    if match.url_name != "bundle_upload" or not request.user.is_authenticated:
        return False
    membership = Membership.objects.filter(
        user=request.user, project__slug=match.kwargs["slug"]
    ).first()
    return membership is not None and has_role(membership, Role.LEAD)


class BundleUploadHandler(TemporaryFileUploadHandler):
    """Streams a lead's bundle to a temporary file, and stops at BUNDLE_UPLOAD_MAX_BYTES.

    For anyone else reading stops where a file begins: the fields before it are
    parsed (so the CSRF check and the views work as ever), the file is never
    written. A lead's file larger than the limit is read up to the limit at most
    (not at all when Content-Length says so); `request.upload_refused` then holds
    the reason for the page to show.
    """

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self.limit = settings.BUNDLE_UPLOAD_MAX_BYTES
        self.received = 0
        self.too_large = content_length > self.limit + FORM_OVERHEAD_BYTES

    def new_file(self, *args, **kwargs) -> None:
        # Asked when a file's part begins: the fields before it (the CSRF token) are
        # parsed, the file is not, and nothing after it is read.
        if not may_upload(self.request):
            raise StopUpload(connection_reset=True)
        if self.too_large:
            self.refuse()
        super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > self.limit:
            self.file.close()
            self.refuse()
        return super().receive_data_chunk(raw_data, start)

    def refuse(self) -> None:
        self.request.upload_refused = (  # type: ignore[attr-defined]
            f"The file is larger than {self.limit:,} bytes; uploads are limited to "
            f"{self.limit:,} bytes (BUNDLE_UPLOAD_MAX_BYTES). "
            "Use `manage.py import_bundle` for larger bundles."
        )
        raise StopUpload(connection_reset=True)
