import django.db.models.deletion
from django.db import migrations, models

import realms.models

USER_STORAGE = "org.keycloak.storage.UserStorageProvider"


def link_components(apps, schema_editor):
    """``federation_link`` held a free string (a Keycloak component id). Each distinct one becomes
    a stored component without a provider, so its users stay federated: refused at sign-in until
    an administrator configures the provider, never signed in by a local password."""
    User = apps.get_model("realms", "User")
    Component = apps.get_model("realms", "Component")
    made = {}
    for user in User.objects.exclude(old_federation_link="").only("pk", "realm_id", "old_federation_link"):
        key = (user.realm_id, user.old_federation_link)
        if key not in made:
            taken = len(key[1]) > 64 or Component.objects.filter(pk=key[1]).exists()
            fields = {"realm_id": key[0], "name": key[1][:255], "provider_id": "", "provider_type": USER_STORAGE}
            made[key] = (Component.objects.create(**fields) if taken
                         else Component.objects.create(id=key[1], **fields)).pk
        User.objects.filter(pk=user.pk).update(federation_link_id=made[key])


class Migration(migrations.Migration):

    dependencies = [
        ("realms", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="Component",
            fields=[
                ("id", realms.models.IdField(default=realms.models.new_id, editable=False, max_length=64,
                                             primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=255)),
                ("provider_id", models.CharField(max_length=255)),
                ("provider_type", models.CharField(max_length=255)),
                ("parent_id", models.CharField(blank=True, max_length=64)),
                ("sub_type", models.CharField(blank=True, max_length=255)),
                ("config", models.JSONField(blank=True, default=dict)),
                ("realm", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="realms.realm")),
            ],
            options={"ordering": ["name"]},
        ),
        migrations.RenameField(model_name="user", old_name="federation_link", new_name="old_federation_link"),
        migrations.AddField(
            model_name="user",
            name="federation_link",
            field=models.ForeignKey(blank=True, help_text="The user storage provider this user comes from.",
                                    null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="users", to="realms.component"),
        ),
        migrations.RunPython(link_components, migrations.RunPython.noop),
        migrations.RemoveField(model_name="user", name="old_federation_link"),
    ]
