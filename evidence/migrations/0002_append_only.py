from django.db import migrations

from evidence.dbguards import APPEND_ONLY_TABLES, AppendOnly


class Migration(migrations.Migration):
    dependencies = [("evidence", "0001_initial")]

    operations = [AppendOnly(*APPEND_ONLY_TABLES["evidence"])]
