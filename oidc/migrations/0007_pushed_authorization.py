from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("oidc", "0006_resource_indicators")]

    operations = []
