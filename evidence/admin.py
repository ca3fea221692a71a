from __future__ import annotations

from django.contrib import admin

from evidence.models import Case, Expectation, Membership, Passage, Project, Snapshot


class ReadOnlyAdmin(admin.ModelAdmin):
    """Append-only tables: the database refuses changes, so the admin does not offer them."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "blind_review", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(Snapshot)
class SnapshotAdmin(ReadOnlyAdmin):
    list_display = ["name", "project", "created_at"]
    list_filter = ["project"]


@admin.register(Passage)
class PassageAdmin(ReadOnlyAdmin):
    list_display = ["ref", "snapshot", "version_status", "sha256"]
    list_filter = ["version_status"]
    search_fields = ["ref", "doc_id"]
    list_select_related = ["snapshot"]


@admin.register(Case)
class CaseAdmin(ReadOnlyAdmin):
    list_display = ["case_id", "project", "created_at"]
    search_fields = ["case_id"]


@admin.register(Expectation)
class ExpectationAdmin(ReadOnlyAdmin):
    list_display = ["case", "version", "sha256"]
    list_select_related = ["case"]
