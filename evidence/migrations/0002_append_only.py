from django.db import migrations

from evidence.dbguards import AppendOnly


class Migration(migrations.Migration):
    dependencies = [("evidence", "0001_initial")]

    operations = [AppendOnly("evidence_passage", "evidence_case", "evidence_expectation")]
