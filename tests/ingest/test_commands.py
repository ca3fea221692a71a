from __future__ import annotations

import io
import json
import sys

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from evidence.models import Membership, Project
from replay.models import Run
from tests.conftest import FIXTURES


def run_command(*args, **kwargs) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err, **kwargs)
    return out.getvalue(), err.getvalue()


def test_import_bundle_creates_the_project_and_prints_counts(db):
    out, _ = run_command("import_bundle", str(FIXTURES / "q017-r1.jsonl"), "--project", "team")
    assert "q017-r1: imported into project team" in out
    assert "responses 1, retrieved rows 2, citations 2, claims 4, verdicts 4" in out
    assert Project.objects.filter(slug="team").exists()


def test_import_bundle_defaults_to_the_only_project(project):
    out, _ = run_command("import_bundle", str(FIXTURES / "q017-r1.jsonl"))
    assert "into project demo" in out


def test_import_bundle_without_project_among_several_is_a_usage_error(project, outsider):
    with pytest.raises(CommandError, match="several projects") as caught:
        run_command("import_bundle", str(FIXTURES / "q017-r1.jsonl"))
    assert caught.value.returncode == 2


def test_import_bundle_reads_standard_input(project, monkeypatch):
    data = (FIXTURES / "q017-r2.jsonl").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    out, _ = run_command("import_bundle", "-", "--project", "demo", "--json")
    summary = json.loads(out)
    assert summary["run_id"] == "q017-r2"
    assert summary["claims"] == 4
    assert Run.objects.get(run_id="q017-r2").source_name == "<stdin>"


def test_import_bundle_dry_run_stores_nothing(project):
    out, _ = run_command("import_bundle", str(FIXTURES / "p7-answer-a.jsonl"), "--dry-run")
    assert "checked (dry run, nothing stored)" in out
    assert Run.objects.count() == 0


def test_import_bundle_reports_each_problem_on_stderr_and_exits_1(project, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes((FIXTURES / "q017-r1.jsonl").read_bytes() + b"{oops\n")
    err = io.StringIO()
    with pytest.raises(CommandError, match="refused, nothing was stored") as caught:
        call_command("import_bundle", str(bad), stdout=io.StringIO(), stderr=err)
    assert caught.value.returncode == 1
    assert "line 6: not valid JSON" in err.getvalue()
    assert Run.objects.count() == 0


def test_import_bundle_names_a_missing_file(project):
    with pytest.raises(CommandError, match="No such file"):
        run_command("import_bundle", "/nonexistent/bundle.jsonl")


def test_load_demo_is_idempotent(db, monkeypatch):
    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    out, _ = run_command("load_demo")
    assert "9 run(s) imported" in out
    assert "password: demo-password-1" in out
    out, _ = run_command("load_demo")
    assert "0 run(s) imported, 9 already there" in out
    assert Run.objects.filter(project__slug="demo").count() == 9
    assert Membership.objects.filter(project__slug="demo").count() == 3
    assert User.objects.get(username="lead").check_password("demo-password-1")
    assert Membership.objects.get(project__slug="demo", user__username="lead").role == "lead"


def test_load_demo_generates_and_prints_a_password_when_none_is_given(db, monkeypatch):
    monkeypatch.delenv("DEMO_PASSWORD", raising=False)
    out, _ = run_command("load_demo")
    password = out.rsplit("password: ", 1)[1].strip()
    assert len(password) >= 10
    assert User.objects.get(username="alice").check_password(password)
