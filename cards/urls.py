from __future__ import annotations

from django.urls import path

from cards.views import blind, figures, review, runs, work

# run_id and case_id use the bundle's charset [A-Za-z0-9._:-], which <str:> covers.
case = "p/<slug:slug>/runs/<str:run_id>/cases/<str:case_id>/"
urlpatterns = [
    path("p/<slug:slug>/", runs.project_detail, name="project_detail"),
    path("p/<slug:slug>/drift/", runs.project_drift, name="project_drift"),
    path("p/<slug:slug>/runs/<str:run_id>/", runs.run_detail, name="run_detail"),
    path(case, review.case_detail, name="case_detail"),
    path(f"{case}claims/", review.claim_add, name="claim_add"),
    path(f"{case}claims/suggest/", review.claim_suggestions, name="claim_suggestions"),
    path(f"{case}claims/<str:key>/card/", review.card_detail, name="card_detail"),
    path(f"{case}claims/<str:key>/revise/", review.claim_change, name="claim_change"),
    path(f"{case}claims/<str:key>/verdict/", review.verdict_add, name="verdict_add"),
    path(f"{case}claims/<str:key>/attach/", review.claim_attach, name="claim_attach"),
    path(f"{case}complete/", review.review_complete, name="review_complete"),
    path(f"{case}submit/", work.case_submit, name="case_submit"),
    path("p/<slug:slug>/work/", work.my_work, name="my_work"),
    path("p/<slug:slug>/queue/", work.queue_next, name="queue_next"),
    path(f"{case}unblind/", blind.case_unblind, name="case_unblind"),
    path("p/<slug:slug>/runs/<str:run_id>/assign/", runs.run_assign, name="run_assign"),
    path(
        "p/<slug:slug>/runs/<str:run_id>/assign/deal/",
        runs.run_assign_deal,
        name="run_assign_deal",
    ),
    path("p/<slug:slug>/runs/<str:run_id>/unblind/", blind.run_unblind, name="run_unblind"),
    path("p/<slug:slug>/runs/<str:run_id>/figures/", figures.run_figures, name="run_figures"),
    path(
        "p/<slug:slug>/runs/<str:run_id>/figures/agreement/",
        figures.run_agreement,
        name="run_agreement",
    ),
    path(
        "p/<slug:slug>/runs/<str:run_id>/figures.csv",
        figures.run_figures,
        {"fmt": "csv"},
        name="run_figures_csv",
    ),
    path(
        "p/<slug:slug>/runs/<str:run_id>/figures.json",
        figures.run_figures,
        {"fmt": "json"},
        name="run_figures_json",
    ),
    path(
        "p/<slug:slug>/runs/<str:run_id>/disagreements/",
        runs.run_disagreements,
        name="run_disagreements",
    ),
]
