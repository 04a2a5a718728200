"""The tables of the dynamic client registration: initial access tokens."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("oidc", "0004_backchannel_authentication")]

    operations = []
