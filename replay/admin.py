from __future__ import annotations

from django.contrib import admin

from evidence.admin import ReadOnlyAdmin
from replay.models import Response, Run


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["run_id", "project", "snapshot", "created_at", "imported_at"]
    list_filter = ["project"]
    search_fields = ["run_id", "label"]
    list_select_related = ["project", "snapshot"]


@admin.register(Response)
class ResponseAdmin(ReadOnlyAdmin):
    list_display = ["run", "case", "position", "abstained"]
    list_select_related = ["run", "case"]
