from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("realms", "0019_key_algorithms")]

    operations = []
