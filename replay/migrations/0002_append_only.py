from django.db import migrations

from evidence.dbguards import AppendOnly


class Migration(migrations.Migration):
    dependencies = [("replay", "0001_initial"), ("evidence", "0002_append_only")]

    operations = [AppendOnly("replay_run", "replay_response", "replay_retrieval", "replay_citation")]
