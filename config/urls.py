from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views import defaults
from django.views.i18n import set_language

from api.http import error_view
from config.health import healthz, livez
from evidence.auth import ThrottledAdminAuthenticationForm, ThrottledAuthenticationForm

admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("livez", livez, name="livez"),
    path(
        "login/",
        auth_views.LoginView.as_view(authentication_form=ThrottledAuthenticationForm),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The header's language switch (a POST form, no JavaScript): on the login page too.
    path("language/", login_not_required(set_language), name="set_language"),
    path("admin/", admin.site.urls),
    path("", include("evidence.urls")),
    path("", include("cards.urls")),
    path("", include("compare.urls")),
    path("", include("jobs.urls")),
    path("", include("audit.urls")),
    path("", include("api.urls")),
]

# Under /api/ every error is JSON, those raised before a view runs too (api.http).
handler400 = error_view(400, defaults.bad_request)
handler403 = error_view(403, defaults.permission_denied)
handler404 = error_view(404, defaults.page_not_found)
handler500 = error_view(500, defaults.server_error)
