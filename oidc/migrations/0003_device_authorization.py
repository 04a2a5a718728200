"""The tables of the device authorization grant (RFC 8628)."""
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("oidc", "0002_consentgrant"),
        ("realms", "0018_identity_brokering"),
    ]

    operations = [
        migrations.CreateModel(
            name="DeviceAuthorization",
            fields=[
                ("digest", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("user_code_digest", models.CharField(max_length=64)),
                ("scope", models.CharField(blank=True, max_length=1024)),
                ("nonce", models.CharField(blank=True, max_length=512)),
                ("code_challenge", models.CharField(blank=True, max_length=128)),
                ("code_challenge_method", models.CharField(blank=True, max_length=8)),
                ("created", models.DateTimeField(default=django.utils.timezone.now)),
                ("expires_at", models.DateTimeField()),
                ("interval", models.PositiveIntegerField(default=5)),
                ("state", models.CharField(default="pending", max_length=8)),
                ("client", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                             to="realms.client")),
                ("realm", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                            to="realms.realm")),
                ("user_session", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                                   related_name="+", to="realms.usersession")),
            ],
            options={
                "indexes": [models.Index(fields=["expires_at"], name="oidc_device_expires_2a6e2e_idx")],
                "constraints": [models.UniqueConstraint(fields=("realm", "user_code_digest"),
                                                        name="uniq_device_user_code_per_realm")],
            },
        ),
    ]
