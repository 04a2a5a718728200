import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """The deliveries' and the delivery log's foreign-key constraints dropped, their indexes kept
    (decision 0116)."""

    dependencies = [
        ('webhooks', '0007_endpoint_ordered'),
    ]

    operations = [
        migrations.AlterField(
            model_name='delivery',
            name='message',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name='deliveries', to='webhooks.message'),
        ),
        migrations.AlterField(
            model_name='delivery',
            name='endpoint',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name='deliveries', to='webhooks.endpoint'),
        ),
        migrations.AlterField(
            model_name='deliveryattempt',
            name='delivery',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name='log', to='webhooks.delivery'),
        ),
        migrations.AlterField(
            model_name='deliveryattempt',
            name='endpoint',
            field=models.ForeignKey(db_constraint=False, db_index=False,
                                    on_delete=django.db.models.deletion.CASCADE, related_name='attempts',
                                    to='webhooks.endpoint'),
        ),
    ]
