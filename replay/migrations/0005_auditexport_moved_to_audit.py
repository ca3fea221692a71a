# AuditExport now belongs to the `audit` app (audit 0001); its table stays where it is.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("replay", "0004_auditexport_append_only"),
        ("audit", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="AuditExport")],
            database_operations=[],
        ),
    ]
