from __future__ import annotations

from django.urls import path

from api import account, job_views, views

# No trailing slashes: the paths of the OpenAPI document, as clients write them.
run = "api/projects/<slug:slug>/runs/<str:run_id>/"
job = "api/projects/<slug:slug>/jobs/<uuid:code>"
urlpatterns = [
    path("api/openapi.json", views.openapi, name="api_openapi"),
    path("api/projects", views.projects, name="api_projects"),
    path("api/projects/<slug:slug>/runs", views.runs, name="api_runs"),
    path(f"{run}metrics", views.run_metrics, name="api_run_metrics"),
    path(f"{run}agreement", views.run_agreement, name="api_run_agreement"),
    path("api/projects/<slug:slug>/compare", views.compare, name="api_compare"),
    path("api/projects/<slug:slug>/imports", job_views.imports, name="api_imports"),
    path(
        "api/projects/<slug:slug>/audit-packages",
        job_views.audit_packages,
        name="api_audit_packages",
    ),
    path(job, job_views.job_status, name="api_job"),
    path(f"{job}/package", job_views.job_download, name="api_job_package"),
    path("account/", account.account, name="account"),
    path("account/tokens/", account.token_add, name="token_add"),
    path("account/tokens/<str:prefix>/revoke/", account.token_remove, name="token_revoke"),
]
