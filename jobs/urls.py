from __future__ import annotations

from django.urls import path

from jobs import views

urlpatterns = [
    path("p/<slug:slug>/import/", views.bundle_upload, name="bundle_upload"),
    path("p/<slug:slug>/audit/export/", views.export_start, name="export_start"),
    path("p/<slug:slug>/jobs/", views.job_list, name="job_list"),
    path("p/<slug:slug>/jobs/<uuid:code>/", views.job_detail, name="job_detail"),
    path("p/<slug:slug>/jobs/<uuid:code>/package.zip", views.job_download, name="job_download"),
]
