from django.db import migrations

import realms.models


class Migration(migrations.Migration):

    dependencies = [
        ("realms", "0002_component_user_federation_link"),
    ]

    operations = [
        migrations.AlterField(
            model_name="realm",
            name="smtp_server",
            field=realms.models.SmtpServerField(blank=True, default=dict),
        ),
    ]
