"""The resource indicators (RFC 8707) of an authorization request, kept with its code."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("oidc", "0005_client_registration")]

    operations = [
        migrations.AddField(
            model_name="authorizationcode",
            name="resource",
            field=models.TextField(blank=True, default=""),
        ),
    ]
