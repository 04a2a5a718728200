"""The tables of the CIBA authentication requests."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("oidc", "0003_device_authorization")]

    operations = []
