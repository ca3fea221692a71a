"""The row writer puts values in the columns their field names say, on either database."""

from __future__ import annotations

import pytest
from django.core.exceptions import FieldDoesNotExist
from django.db import transaction

from evidence.models import Case
from ingest.bulk import RowWriter


def test_it_writes_each_value_into_the_column_its_field_name_names(project):
    writer = RowWriter()
    with transaction.atomic():
        first, second = writer.reserve_ids(Case, 2)
        # Names in another order than the table's columns: the order of `names` decides.
        writer.write(
            Case,
            ("case_id", "project_id", "id"),
            [("q-1", project.pk, first), ("q-2", project.pk, second)],
        )
    stored = Case.objects.order_by("pk").values_list("pk", "project_id", "case_id")
    assert list(stored) == [(first, project.pk, "q-1"), (second, project.pk, "q-2")]


def test_it_refuses_a_name_that_is_no_field_of_the_model(project):
    with pytest.raises(FieldDoesNotExist), transaction.atomic():
        RowWriter().write(Case, ("id", "project_id", "name"), [(1, project.pk, "q-1")])


def test_it_writes_nothing_and_asks_nothing_for_no_rows(project, django_assert_num_queries):
    with django_assert_num_queries(0):
        RowWriter().write(Case, ("id", "project_id", "case_id"), [])
