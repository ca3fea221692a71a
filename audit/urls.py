from __future__ import annotations

from django.urls import path

from audit import views

urlpatterns = [
    path("p/<slug:slug>/audit/", views.audit_export, name="audit_export"),
]
