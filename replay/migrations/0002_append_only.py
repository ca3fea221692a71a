from django.db import migrations

from evidence.dbguards import APPEND_ONLY_TABLES, AppendOnly


class Migration(migrations.Migration):
    dependencies = [("replay", "0001_initial"), ("evidence", "0002_append_only")]

    operations = [AppendOnly(*APPEND_ONLY_TABLES["replay"])]
