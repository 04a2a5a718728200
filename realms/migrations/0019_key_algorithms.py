from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("realms", "0018_identity_brokering")]

    operations = [
        migrations.AlterField(
            model_name="realmkey",
            name="algorithm",
            field=models.CharField(choices=[(a, a) for a in (
                "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "HS512")],
                default="RS256", max_length=16),
        ),
    ]
