from __future__ import annotations

from django.urls import path

from compare import views

urlpatterns = [
    path("p/<slug:slug>/compare/", views.run_compare, name="run_compare"),
    path("p/<slug:slug>/compare/summary/", views.run_compare_summary, name="run_compare_summary"),
]
