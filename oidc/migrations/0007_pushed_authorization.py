"""Pushed authorization requests (RFC 9126) and the DPoP key a code is bound to (RFC 9449 §10)."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("oidc", "0006_resource_indicators"), ("realms", "0018_identity_brokering")]

    operations = [
        migrations.AddField(
            model_name="authorizationcode",
            name="dpop_jkt",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.CreateModel(
            name="PushedAuthorization",
            fields=[
                ("digest", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("params", models.JSONField(default=dict)),
                ("request_object", models.JSONField(blank=True, null=True)),
                ("expires_at", models.DateTimeField()),
                ("client", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                             to="realms.client")),
                ("realm", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                            to="realms.realm")),
            ],
            options={"indexes": [models.Index(fields=["expires_at"], name="oidc_pushed_expires_23d483_idx")]},
        ),
    ]
