# The AuditExport model moved here from `replay` (replay 0003/0004 created its table and
# triggers). Only Django's state moves: the table, its constraint and triggers stay as they are.

import django.db.models.deletion
import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("evidence", "0002_append_only"),
        ("replay", "0004_auditexport_append_only"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AuditExport",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("package_id", models.CharField(max_length=64)),
                        ("runs", models.JSONField(default=list)),
                        ("compare", models.JSONField(default=list)),
                        ("exported_at", models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                        ("exported_by", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to=settings.AUTH_USER_MODEL)),
                        ("project", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="audit_exports", to="evidence.project")),
                    ],
                    options={
                        "db_table": "replay_auditexport",
                        "ordering": ["-exported_at", "-pk"],
                        "constraints": [models.CheckConstraint(condition=models.Q(("package_id__regex", "^[0-9a-f]{64}$")), name="replay_auditexport_package_id_hex")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
