from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("realms", "0002_component_user_federation_link")]

    operations = [
        migrations.AddField(
            model_name="realm",
            name="admin_permissions_enabled",
            field=models.BooleanField(
                default=False,
                help_text="Fine-grained admin permissions: the admin-permissions client's permissions apply."),
        ),
        migrations.AddField(
            model_name="client",
            name="authorization_settings",
            field=models.JSONField(blank=True, default=dict, editable=False),
        ),
    ]
