from django.db import migrations


def resum(apps, schema_editor):
    """Each run's retrieval totals summed again from its responses' stored rows: their
    macro means are now summed exactly and rounded a half up (`cards.figures.mean`), as
    every other figure is computed from now on. Only a mean on a rounding tie changes.

    Uses the current models, not the historical ones, as 0004 does: the rule is
    `cards.services.tallies`, and there is only one.
    """
    from cards.services.tallies import retrieval_totals_store
    from replay.models import Run

    for run in Run.objects.order_by("pk"):
        retrieval_totals_store(run=run)


class Migration(migrations.Migration):
    dependencies = [
        ("cards", "0005_no_index_where_a_unique_one_leads"),
    ]

    operations = [
        migrations.RunPython(resum, migrations.RunPython.noop, elidable=True),
    ]
