"""The tables of the device authorization grant (RFC 8628)."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("oidc", "0002_consentgrant")]

    operations = []
