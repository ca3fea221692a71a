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

.PHONY: help install run test lint migrate demo clean messages

help:
	@echo "make run    install, migrate, load the demo and serve it on http://$(HOST):$(PORT)/"
	@echo "make test   install and run the whole test suite (DATABASE_URL picks the database)"
	@echo "make lint   import layers, ruff check, ruff format --check, makemigrations --check"
	@echo "make messages   gather the interface's strings into locale/*/django.po (docs/i18n.md)"

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

run: demo
	@echo
	@echo "Evidence Review: http://$(HOST):$(PORT)/   (log in with the demo users printed above; Ctrl-C stops)"
	$(PY) manage.py runserver --noreload $(HOST):$(PORT)

# On every core (pytest-xdist); TEST_WORKERS=0 runs the suite in this one process.
TEST_WORKERS ?= auto
test: install
	$(VENV)/bin/pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
