from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("realms", "0002_component_user_federation_link"),
    ]

    operations = [
        migrations.AddField(
            model_name="realm",
            name="scim_api_enabled",
            field=models.BooleanField(default=False,
                                      help_text="SCIM 2.0 provisioning below /realms/<realm>/scim/v2."),
        ),
    ]
