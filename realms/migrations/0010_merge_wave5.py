from django.db import migrations


class Migration(migrations.Migration):
    """Joins the migrations written side by side in one round of work."""

    dependencies = [
        ("realms", "0003_authentication_flows"),
        ("realms", "0005_selfservice"),
        ("realms", "0008_admin_permissions"),
        ("realms", "0009_realm_scim_api_enabled"),
    ]

    operations = []
