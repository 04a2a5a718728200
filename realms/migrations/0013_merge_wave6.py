from django.db import migrations


class Migration(migrations.Migration):
    """Joins the user-query indexes and the organizations, written side by side."""

    dependencies = [
        ("realms", "0011_user_query_indexes"),
        ("realms", "0012_organizations"),
    ]

    operations = []
