"""The tables of the CIBA authentication requests."""
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("oidc", "0003_device_authorization"),
        ("realms", "0018_identity_brokering"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="BackchannelAuthentication",
            fields=[
                ("digest", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("result_digest", models.CharField(max_length=64, unique=True)),
                ("scope", models.CharField(blank=True, max_length=1024)),
                ("binding_message", models.CharField(blank=True, max_length=64)),
                ("acr_values", models.CharField(blank=True, max_length=512)),
                ("created", models.DateTimeField(default=django.utils.timezone.now)),
                ("expires_at", models.DateTimeField()),
                ("interval", models.PositiveIntegerField(default=0)),
                ("state", models.CharField(default="pending", max_length=8)),
                ("notification_token", models.TextField(blank=True)),
                ("sealed_auth_req_id", models.TextField(blank=True)),
                ("client", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                             to="realms.client")),
                ("realm", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                            to="realms.realm")),
                ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                           to=settings.AUTH_USER_MODEL)),
                ("user_session", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                                   related_name="+", to="realms.usersession")),
            ],
            options={
                "indexes": [models.Index(fields=["expires_at"], name="oidc_backch_expires_6c5d0e_idx")],
            },
        ),
    ]
