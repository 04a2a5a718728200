from django.db import migrations, models

# Room on each page for the new versions of a row's claim, so that the claim's update, which
# changes no indexed column, stays on the row's page (HOT: no index entry). PostgreSQL only.
_FILLFACTOR = 70


def _mark_finished(apps, schema_editor):
    schema_editor.execute("UPDATE webhooks_delivery SET finished = %s WHERE state IN ('delivered', 'failed')",
                          [True])
    if schema_editor.connection.vendor == "postgresql":  # SQLite (development) has no fillfactor
        schema_editor.execute(f"ALTER TABLE webhooks_delivery SET (fillfactor = {_FILLFACTOR})")


def _reset(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE webhooks_delivery RESET (fillfactor)")


class Migration(migrations.Migration):
    """The queue's partial indexes keyed on ``finished`` (set only when a delivery ends), not on
    ``state`` or ``lease_until``, which the claim changes; a fillfactor for the claim's HOT update
    (decision 0124)."""

    dependencies = [
        ('webhooks', '0008_no_foreign_key_constraints'),
    ]

    operations = [
        migrations.AddField(
            model_name='delivery',
            name='finished',
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.RunPython(_mark_finished, _reset, elidable=False),
        migrations.RemoveIndex(model_name='delivery', name='wh_delivery_due'),
        migrations.RemoveIndex(model_name='delivery', name='wh_delivery_lease'),
        migrations.RemoveIndex(model_name='delivery', name='wh_delivery_ep_due'),
        migrations.RemoveIndex(model_name='delivery', name='wh_delivery_ordered'),
        migrations.AddIndex(
            model_name='delivery',
            index=models.Index(condition=models.Q(('finished', False)), fields=['next_attempt_at'],
                               name='wh_delivery_open_due'),
        ),
        migrations.AddIndex(
            model_name='delivery',
            index=models.Index(condition=models.Q(('finished', False)), fields=['endpoint', 'next_attempt_at'],
                               name='wh_delivery_open_ep'),
        ),
        migrations.AddIndex(
            model_name='delivery',
            index=models.Index(condition=models.Q(('finished', False), models.Q(('subject', ''), _negated=True)),
                               fields=['endpoint', 'subject', 'id'], name='wh_delivery_open_ordered'),
        ),
    ]
