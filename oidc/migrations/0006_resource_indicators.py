"""The tables of the resource indicators (RFC 8707) on authorization codes."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("oidc", "0005_client_registration")]

    operations = []
