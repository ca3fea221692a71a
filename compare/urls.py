from __future__ import annotations

from django.urls import path

from compare import views

urlpatterns = [
    path("p/<slug:slug>/compare/", views.run_compare, name="run_compare"),
]
