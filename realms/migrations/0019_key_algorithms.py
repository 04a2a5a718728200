from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("realms", "0018_identity_brokering")]

    operations = []
