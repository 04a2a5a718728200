from django.db import migrations


class Migration(migrations.Migration):
    initial = True

    dependencies = [("realms", "0002_component_user_federation_link")]

    operations = [
        migrations.CreateModel(
            name="LdapComponent",
            fields=[],
            options={"verbose_name": "LDAP provider", "verbose_name_plural": "LDAP providers", "proxy": True,
                     "indexes": [], "constraints": []},
            bases=("realms.component",),
        ),
    ]
