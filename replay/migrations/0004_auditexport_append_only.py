from django.db import migrations

from evidence.dbguards import AppendOnly


class Migration(migrations.Migration):
    dependencies = [("replay", "0003_auditexport")]

    operations = [AppendOnly("replay_auditexport")]
