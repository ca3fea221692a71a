from __future__ import annotations

from django.urls import path

from api import account, views

# No trailing slashes: the paths of the OpenAPI document, as clients write them.
run = "api/projects/<slug:slug>/runs/<str:run_id>/"
urlpatterns = [
    path("api/openapi.json", views.openapi, name="api_openapi"),
    path("api/projects", views.projects, name="api_projects"),
    path("api/projects/<slug:slug>/runs", views.runs, name="api_runs"),
    path(f"{run}metrics", views.run_metrics, name="api_run_metrics"),
    path(f"{run}agreement", views.run_agreement, name="api_run_agreement"),
    path("api/projects/<slug:slug>/compare", views.compare, name="api_compare"),
    path("account/", account.account, name="account"),
    path("account/tokens/", account.token_add, name="token_add"),
    path("account/tokens/<str:prefix>/revoke/", account.token_remove, name="token_revoke"),
]
