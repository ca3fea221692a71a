from __future__ import annotations

from django.urls import path

from replay import views

# run_id and case_id use the bundle's charset [A-Za-z0-9._:-], which <str:> covers.
urlpatterns = [
    path("p/<slug:slug>/runs/<str:run_id>/", views.run_detail, name="run_detail"),
    path("p/<slug:slug>/compare/", views.run_compare, name="run_compare"),
    path("p/<slug:slug>/drift/", views.project_drift, name="project_drift"),
    path("p/<slug:slug>/audit/", views.audit_export, name="audit_export"),
]
