"""Settings for Evidence Review, read from the environment in one place.

Every value that can come from the environment goes through a helper that
fails loudly on a value it does not understand, so a typo in a deployment
stops the process instead of silently falling back to a default.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no).")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_from_url(url: str | None) -> dict:
    """Unset → the embedded SQLite file; postgres://user:pass@host:port/name → PostgreSQL."""
    if not url:
        # Every manage.py command on a fresh clone should work, not only `make run`.
        (BASE_DIR / "var").mkdir(exist_ok=True)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": BASE_DIR / "var" / "evidence.sqlite3",
            "OPTIONS": {
                # Take the write lock when a transaction starts, so an import that
                # reserves primary keys cannot race another writer.
                "transaction_mode": "IMMEDIATE",
                "init_command": (
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000;"
                ),
            },
            "TEST": {"NAME": None},
        }
    parts = urlsplit(url)
    if parts.scheme in {"sqlite", "sqlite3"}:
        path = unquote(parts.path)
        if not path or path == "/":
            raise ImproperlyConfigured(f"DATABASE_URL={url!r} names no SQLite file.")
        return database_from_url(None) | {"NAME": path[1:] if path.startswith("//") else path}
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ImproperlyConfigured(
            f"DATABASE_URL scheme {parts.scheme!r} is not supported "
            "(use postgres://… or leave it unset for SQLite)."
        )
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} names no database.")
    options = dict(parse_qsl(parts.query))
    try:
        port = str(parts.port or 5432)
    except ValueError:
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} has an invalid port.") from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": port,
        # Opening a PostgreSQL connection costs more than a whole simple view:
        # keep connections open across requests and check them before reuse.
        "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 600),
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": options,
    }


DEBUG = env_bool("DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG and not os.environ.get("PYTEST_VERSION"):
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "dev-only-insecure-key-never-use-in-production"  # noqa: S105

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "django_tasks_db",
    # The apps, bottom layer first (docs/architecture.md; import-linter enforces it).
    "evidence",
    "replay",
    "cards",
    "compare",
    "ingest",
    "audit",
    "jobs",
    "api",
]

MIDDLEWARE = [
    # The request's id, for every log line written for it and in the response (LOG_FORMAT).
    "evidence.middleware.RequestId",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language: the one chosen in the header (a cookie, set_language), else the
    # browser's Accept-Language, else LANGUAGE_CODE. After sessions, before CommonMiddleware.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, so that its form check parses no body the CSRF or login checks refuse.
    "evidence.middleware.RefuseUnstorableText",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "django.template.context_processors.i18n",
            ],
        },
    },
]

DATABASES = {"default": database_from_url(os.environ.get("DATABASE_URL"))}
# The review pages' hand-written statements are prepared on PostgreSQL, planned once per
# connection (evidence.rows.prepared_cursor). Off behind a pooler that cannot keep a
# connection's prepared statements (PgBouncer in transaction mode before 1.21).
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", True)
# Rendered fragments of the case page each process keeps (cards.views.card_cache): one per
# compact card, verdict, history entry and form, keyed by content hashes. A case of 30
# claims judged a few times each needs several hundred; Django's default cache, where they
# were, holds 300 and dropped a third when full, so every save rendered its card's rows again.
FRAGMENT_CACHE_ENTRIES = env_int("FRAGMENT_CACHE_ENTRIES", 20_000)
# Responses whose frozen rows (retrieved passages, citations) a process keeps: ~60 KB each.
FROZEN_ROWS_ENTRIES = env_int("FROZEN_ROWS_ENTRIES", 500)
# Pairs up to which the side-by-side page's first view compares the runs before it answers
# (compare.pages): about 45 ms of comparing at 500. Above, it shows its pairs at once and
# loads the summary after.
COMPARE_INLINE_PAIRS = env_int("COMPARE_INLINE_PAIRS", 500)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's ModelBackend but for the read of the logged-in user on each request (SQL, not
# the ORM). Only this one: a second backend would check a wrong password twice.
AUTHENTICATION_BACKENDS = ["evidence.auth.UserBackend"]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Failed logins before the form asks to wait (evidence/auth.py), counted per username
# and per client address, and how long the wait is. The counts live in the cache: with
# several worker processes, CACHES must name a shared one for the limit to be shared.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
LOGIN_FAILURE_WINDOW_SECONDS = env_int("LOGIN_FAILURE_WINDOW_SECONDS", 15 * 60)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# English is the default (and the language of the tests, the commands and the exports);
# Italian when chosen in the header or asked for by the browser (docs/i18n.md). The catalog
# is locale/<lang>/LC_MESSAGES/django.po; `make install` compiles it (the .mo is not in git).
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("it", "Italiano")]
LOCALE_PATHS = [BASE_DIR / "locale"]
# Dates per language: the templates name a format (SHORT_DATETIME_FORMAT …), these define it.
FORMAT_MODULE_PATH = ["config.formats"]
# The header's switch stores the choice in this cookie (Django's set_language view).
LANGUAGE_COOKIE_HTTPONLY = True
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if env_bool("STATIC_MANIFEST", not DEBUG and not os.environ.get("PYTEST_VERSION"))
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = True
# Development and tests serve files as they change and need no collectstatic.
WHITENOISE_AUTOREFRESH = DEBUG or bool(os.environ.get("PYTEST_VERSION"))

# Untrusted text (answers, passages, reasons) is rendered on every page: no
# inline script or style may run, only our own files and htmx's.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Sessions in the database, as Django's own engine keeps them (logout and deletion end a
# session at once), read with a statement written as SQL: every request reads one.
SESSION_ENGINE = "evidence.sessions"
# Production (DEBUG off, outside the tests, whose client speaks plain http) is HTTPS
# only by default: secure cookies, a redirect to https and HSTS. Each is switchable, for
# a server run over plain http on a private address (the browser tests, benchmarks).
# Behind a proxy that terminates TLS, keep them on and set SECURE_PROXY_SSL_HEADER=1
# so that Django sees the request was https (the proxy must set X-Forwarded-Proto).
_PRODUCTION = not DEBUG and not os.environ.get("PYTEST_VERSION")
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", _PRODUCTION)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", _PRODUCTION)
# A load balancer's or supervisor's probe asks over plain http, on the machine's own network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^livez$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if _PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SILENCED_SYSTEM_CHECKS = [
    # HSTS preload lists a domain in browsers for good: the domain's owner decides that
    # (SECURE_HSTS_PRELOAD=1), not a default.
    "security.W021",
]

# Bundles are uploaded as files and streamed from a temporary file, never
# held whole in memory, and only for a lead of the project: anyone else's body is
# not parsed at all (ingest/uploads.py). The import reads the file once it is whole,
# so no transaction is open while the body arrives.
FILE_UPLOAD_HANDLERS = ["ingest.uploads.BundleUploadHandler"]
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# Form fields that are not files (Django's defaults, stated): 2.5 MB, 1,000 fields.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000
DATA_UPLOAD_MAX_NUMBER_FILES = 1  # the upload page sends one bundle
BUNDLE_UPLOAD_MAX_BYTES = env_int("BUNDLE_UPLOAD_MAX_BYTES", 512 * 1024 * 1024)
# What one import may read, however it arrives, so that it costs at most a small
# multiple of what it stores (docs/decisions.md, "Limits of an import"). Each is
# refused as `line N: … (SETTING)` and nothing is stored.
BUNDLE_MAX_INFLATED_BYTES = env_int("BUNDLE_MAX_INFLATED_BYTES", 4 * 1024**3)
BUNDLE_MAX_LINES = env_int("BUNDLE_MAX_LINES", 5_000_000)
BUNDLE_MAX_LINE_BYTES = env_int("BUNDLE_MAX_LINE_BYTES", 8 * 1024**2)
BUNDLE_MAX_VERBATIM_BYTES = env_int("BUNDLE_MAX_VERBATIM_BYTES", 2 * 1024**2)
BUNDLE_MAX_PASSAGE_CHARS = env_int("BUNDLE_MAX_PASSAGE_CHARS", 200_000)

# Audit anchors (docs/security.md, "Anchors outside the database"): every package's id and
# chain heads are signed with a key the database does not hold (HMAC-SHA256); its id and the
# heads that changed go to the project's log under AUDIT_ANCHOR_DIR (with a signed
# checkpoint), so an export refuses a chain that a table owner truncated, shortened or
# edited and re-sealed. AUDIT_SIGNING_KEY (the key itself) or
# AUDIT_SIGNING_KEY_FILE (a file holding it); with neither, development gets a key generated
# once in var/audit-signing.key. Production sets the file and a directory of its own.
AUDIT_SIGNING_KEY = os.environ.get("AUDIT_SIGNING_KEY", "")
AUDIT_SIGNING_KEY_FILE = os.environ.get("AUDIT_SIGNING_KEY_FILE", "")
AUDIT_ANCHOR_DIR = os.environ.get("AUDIT_ANCHOR_DIR", "") or str(BASE_DIR / "var" / "anchors")

# Imports and audit exports run as tasks (jobs/), queued in the database and run by
# `manage.py db_worker` (django-tasks-db): no broker to install. The tests run each task
# as it is queued; TASKS_BACKEND can name another backend.
_IMMEDIATE = "django.tasks.backends.immediate.ImmediateBackend"
TASKS = {
    "default": {
        "BACKEND": os.environ.get(
            "TASKS_BACKEND",
            _IMMEDIATE if os.environ.get("PYTEST_VERSION") else "django_tasks_db.DatabaseBackend",
        ),
    }
}
# Where a queued import keeps its upload, and an export its package, until the job is over
# (a package: until it is downloaded, and after). The web server and the worker share it.
JOBS_DIR = os.environ.get("JOBS_DIR", "") or str(BASE_DIR / "var" / "jobs")
# A running job's worker writes its counters this often (jobs.progress); a job that has not
# for JOB_STALE_SECONDS is given up as failed (its worker was killed: nothing was stored).
JOB_HEARTBEAT_SECONDS = env_int("JOB_HEARTBEAT_SECONDS", 5)
JOB_STALE_SECONDS = env_int("JOB_STALE_SECONDS", 60)

# Plain text by default; LOG_FORMAT=json writes one JSON object a line, each with the id of
# its request (evidence/logs.py), as gunicorn's lines then are too (config/gunicorn.py).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "text")
if LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r}: text or json.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "evidence.logs.JsonFormatter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"}
        | ({"formatter": "json"} if LOG_FORMAT == "json" else {})
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
if LOG_FORMAT == "json":
    logging.captureWarnings(True)  # a warning as a record of `py.warnings`, not a text line
