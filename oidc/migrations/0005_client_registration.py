"""The tables of the dynamic client registration: initial access tokens."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("oidc", "0004_backchannel_authentication"), ("realms", "0018_identity_brokering")]

    operations = [
        migrations.CreateModel(
            name="ClientInitialAccess",
            fields=[
                ("id", models.CharField(max_length=36, primary_key=True, serialize=False)),
                ("timestamp", models.IntegerField()),
                ("expiration", models.IntegerField(default=0)),
                ("count", models.IntegerField(default=1)),
                ("remaining_count", models.IntegerField(default=1)),
                ("realm", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                            to="realms.realm")),
            ],
        ),
    ]
