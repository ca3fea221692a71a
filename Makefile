# Two commands a newcomer needs: `make run` (the app with demo data) and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The Makefile is for development machines: DEBUG (and its dev-only SECRET_KEY) by default.
export DEBUG ?= 1

VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

# Django 6 needs Python >= 3.12: take the first interpreter that is new enough.
PYTHON_CANDIDATES := python3.13 python3.12 \
	$(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3) \
	$(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3) \
	$(wildcard /root/.pyenv/versions/3.13*/bin/python3) \
	$(wildcard /root/.pyenv/versions/3.12*/bin/python3) \
	python3
BASE_PYTHON ?= $(shell for p in $(PYTHON_CANDIDATES); do \
	if "$$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then \
	command -v "$$p"; break; fi; done)

.PHONY: fuzz help install run serve test lint migrate demo clean messages

help:
	@echo "make run    install, migrate, load the demo and serve it on http://$(HOST):$(PORT)/"
	@echo "make serve  the production shape: gunicorn and the worker, DEBUG=0, PostgreSQL from DATABASE_URL"
	@echo "make test   install and run the whole test suite (DATABASE_URL picks the database)"
	@echo "make lint   import layers, ruff check, ruff format --check, makemigrations --check"
	@echo "make messages   gather the interface's strings into locale/*/django.po (docs/i18n.md)"
	@echo "make fuzz   the API's fuzz test, 100 examples per operation under eight hash seeds (docs/testing.md)"

$(VENV)/.installed: pyproject.toml
	@if [ -z "$(BASE_PYTHON)" ]; then \
		echo "error: Python 3.12 or newer is required (Django 6). Install python3.12/3.13 or use pyenv." >&2; \
		exit 1; fi
	@[ -x $(PY) ] || "$(BASE_PYTHON)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

# The translations, compiled from the catalogs in git (docs/i18n.md); GNU gettext's msgfmt.
CATALOGS := $(wildcard locale/*/LC_MESSAGES/django.po)
COMPILED := $(CATALOGS:.po=.mo)

%.mo: %.po
	@command -v msgfmt >/dev/null || { echo "error: msgfmt is missing: apt-get install gettext" >&2; exit 1; }
	msgfmt --check --output-file=$@ $<

install: $(VENV)/.installed $(COMPILED)

# Gather every marked string of the templates and the code into the catalogs, keeping what
# is translated; a new string arrives untranslated, and tests/test_i18n.py says which.
messages: install
	$(PY) manage.py makemessages --all --no-location --no-obsolete \
		--ignore=.venv --ignore=var --ignore=tests --ignore=bench --ignore=mutants --ignore=build

migrate: install
	@mkdir -p var
	$(PY) manage.py migrate --no-input

demo: migrate
	$(PY) manage.py load_demo

# Beside the web server, the worker that runs queued imports and exports (jobs/). In a session
# of its own, so that Ctrl-C reaches only the web server: the worker then gets one SIGTERM,
# finishes the job it is running (queued ones wait in the database) and stops; make waits.
WITH_WORKER = setsid $(PY) manage.py db_worker --no-reload & worker=$$!; \
	trap 'kill -TERM $$worker 2>/dev/null; wait $$worker' EXIT;

run: demo
	@echo
	@echo "Evidence Review: http://$(HOST):$(PORT)/   (log in with the demo users printed above; Ctrl-C stops)"
	@$(WITH_WORKER) $(PY) manage.py runserver --noreload $(HOST):$(PORT)

# The production shape, locally: gunicorn (config/gunicorn.py: a gthread worker per core) and
# the worker, DEBUG=0, PostgreSQL from DATABASE_URL, https with a self-signed certificate
# (TLS_CERT/TLS_KEY name your own) so that secure cookies, the redirect and HSTS stay on and
# `check --deploy` is clean. SECRET_KEY from the environment, else one made once in var/.
SERVE_PORT ?= 8443
serve: export DEBUG := 0
serve: export SECRET_KEY ?= $(shell cat var/secret-key 2>/dev/null)
serve: export ALLOWED_HOSTS ?= $(HOST),localhost
serve: export TLS_CERT ?= var/tls/cert.pem
serve: export TLS_KEY ?= var/tls/key.pem
serve: export BIND ?= $(HOST):$(SERVE_PORT)
serve: install var/secret-key var/tls/cert.pem
	@case "$$DATABASE_URL" in postgres://*|postgresql://*) ;; \
		*) echo "error: make serve runs on PostgreSQL: set DATABASE_URL=postgres://user@host:port/name" >&2; exit 2;; esac
	$(PY) manage.py migrate --no-input
	$(PY) manage.py collectstatic --no-input -v0
	$(PY) manage.py check --deploy --fail-level WARNING
	@echo
	@echo "Evidence Review: https://$(BIND)/   (self-signed certificate unless TLS_CERT is yours; Ctrl-C stops)"
	@$(WITH_WORKER) $(VENV)/bin/gunicorn -c config/gunicorn.py

var/secret-key:
	@mkdir -p var
	@(umask 077; $(PY) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@)

var/tls/cert.pem:
	@mkdir -p var/tls
	@(umask 077; openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj /CN=localhost \
		-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
		-keyout var/tls/key.pem -out $@ 2>/dev/null)

# On every core (pytest-xdist); TEST_WORKERS=0 runs the suite in this one process.
TEST_WORKERS ?= auto
# PYTHONDONTWRITEBYTECODE (set on some machines) would make every test process and every
# server and command the tests start compile the apps, and pytest rewrite the test modules
# and its plugins (hypothesis, schemathesis), again: ~5 s of CPU each.
test: install
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# The API's fuzz test explores other requests under each hash seed (schemathesis's
# generation follows it): more examples under several seeds, to look for what CI might draw.
FUZZ_SEEDS ?= 1 2 3 4 5 6 7 8
fuzz: install
	@for seed in $(FUZZ_SEEDS); do echo "PYTHONHASHSEED=$$seed"; \
		PYTHONHASHSEED=$$seed FUZZ_EXAMPLES=100 $(VENV)/bin/pytest -q -p no:randomly \
		tests/api/test_api_schema.py || exit 1; done

lint: install
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
