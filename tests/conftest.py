"""Personas and helpers shared by the whole suite.

A reviewer, a second reviewer and a lead of project `demo`, and an outsider
who belongs only to project `elsewhere` and must get 404 on everything of
`demo`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from evidence.models import Project, Role
from evidence.services import membership_set, project_create
from ingest.services import bundle_import

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
# The known answers: ../shared's original when it is beside the checkout, else our copy
# (tests/test_fixture_copies.py keeps the two equal).
KNOWN_ANSWERS = (
    SHARED_FIXTURES / "expected.json"
    if (SHARED_FIXTURES / "expected.json").exists()
    else FIXTURES / "expected.json"
)
PASSWORD = "correct horse battery staple"


def row_counts() -> dict[str, int]:
    """Rows of every table an import can write, by model name: "nothing stored" is no change."""
    from cards.models import Claim, ClaimRevision, ResponseReview, VerdictRevision
    from evidence.models import Case, Expectation, Passage, Project, Snapshot
    from replay.models import Citation, Response, Retrieval, Run

    models = (
        Passage, Case, Expectation, Snapshot, Project, Run, Response, Retrieval, Citation, Claim,
        ClaimRevision, VerdictRevision, ResponseReview,
    )  # fmt: skip
    return {model.__name__: model.objects.count() for model in models}


def bundle_bytes(*lines: dict | str) -> bytes:
    """JSONL bytes from dicts (or raw strings, written as they are)."""
    out = [
        line if isinstance(line, str) else json.dumps(line, ensure_ascii=False) for line in lines
    ]
    return ("\n".join(out) + "\n").encode("utf-8")


def import_bytes(data: bytes, *, project: str = "demo", **kwargs):
    return bundle_import(stream=io.BytesIO(data), project_slug=project, **kwargs)


def import_fixture(name: str, *, project: str = "demo", **kwargs):
    with (FIXTURES / name).open("rb") as stream:
        return bundle_import(stream=stream, project_slug=project, source_name=name, **kwargs)


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing() -> Iterator[None]:
    # Personas and demo users are created with a password; the default hasher costs
    # ~0.3 s a user, more than most tests.
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture
def project(db) -> Project:
    return project_create(slug="demo", name="Demo")


def _member(project: Project, username: str, role: str) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD)
    membership_set(project=project, user=user, role=role)
    return user


@pytest.fixture
def reviewer(project) -> User:
    return _member(project, "alice", Role.REVIEWER)


@pytest.fixture
def second_reviewer(project) -> User:
    return _member(project, "bob", Role.REVIEWER)


@pytest.fixture
def lead(project) -> User:
    return _member(project, "lead", Role.LEAD)


@pytest.fixture
def outsider(db) -> User:
    elsewhere = project_create(slug="elsewhere", name="Elsewhere")
    return _member(elsewhere, "mallory", Role.LEAD)


@pytest.fixture
def demo_runs(project) -> None:
    """Every fixture bundle imported into `demo`, as load_demo does."""
    for path in sorted(FIXTURES.glob("*.jsonl")):
        import_fixture(path.name)
