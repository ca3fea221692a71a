from __future__ import annotations

from django.urls import path

from cards import views

case = "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/"
urlpatterns = [
    path(case, views.case_detail, name="case_detail"),
    path(f"{case}claims/", views.claim_add, name="claim_add"),
    path(f"{case}claims/suggest/", views.claim_suggestions, name="claim_suggestions"),
    path(f"{case}claims/<str:key>/revise/", views.claim_change, name="claim_change"),
    path(f"{case}claims/<str:key>/verdict/", views.verdict_add, name="verdict_add"),
    path(f"{case}complete/", views.review_complete, name="review_complete"),
    path("p/<slug:slug>/queue/", views.queue_next, name="queue_next"),
    path("p/<slug:slug>/runs/<str:run_id>/assign/", views.run_assign, name="run_assign"),
    path("p/<slug:slug>/runs/<str:run_id>/figures/", views.run_figures, name="run_figures"),
    path(
        "p/<slug:slug>/runs/<str:run_id>/figures.csv",
        views.run_figures,
        {"fmt": "csv"},
        name="run_figures_csv",
    ),
    path(
        "p/<slug:slug>/runs/<str:run_id>/figures.json",
        views.run_figures,
        {"fmt": "json"},
        name="run_figures_json",
    ),
    path(
        "p/<slug:slug>/runs/<str:run_id>/disagreements/",
        views.run_disagreements,
        name="run_disagreements",
    ),
]
