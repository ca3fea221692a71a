from __future__ import annotations

from django.urls import path

from evidence import views

urlpatterns = [
    path("", views.home, name="home"),
    path("p/<slug:slug>/members/", views.project_members, name="project_members"),
    path("p/<slug:slug>/settings/", views.project_settings, name="project_settings"),
]
