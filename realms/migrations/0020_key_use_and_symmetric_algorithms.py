from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("realms", "0019_key_algorithms")]

    operations = [
        migrations.AlterField(
            model_name="realmkey",
            name="algorithm",
            field=models.CharField(choices=[(a, a) for a in (
                "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
                "HS256", "HS384", "HS512", "RSA-OAEP", "RSA-OAEP-256", "AES")], default="RS256", max_length=16),
        ),
        migrations.AlterField(
            model_name="realmkey",
            name="use",
            field=models.CharField(choices=[("sig", "sig"), ("enc", "enc")], default="sig", max_length=8),
        ),
    ]
