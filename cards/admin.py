from __future__ import annotations

from django.contrib import admin

from cards.models import Claim, ClaimRevision, VerdictRevision
from evidence.admin import ReadOnlyAdmin


@admin.register(Claim)
class ClaimAdmin(ReadOnlyAdmin):
    list_display = ["key", "response", "position"]


@admin.register(ClaimRevision)
class ClaimRevisionAdmin(ReadOnlyAdmin):
    list_display = ["claim", "seq", "annotator", "origin", "withdrawn", "created_at"]


@admin.register(VerdictRevision)
class VerdictRevisionAdmin(ReadOnlyAdmin):
    list_display = ["claim", "seq", "annotator", "origin", "support", "created_at"]
    list_filter = ["origin", "support"]
