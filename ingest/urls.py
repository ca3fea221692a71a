from __future__ import annotations

from django.urls import path

from ingest import views

urlpatterns = [
    path("p/<slug:slug>/import/", views.bundle_upload, name="bundle_upload"),
]
