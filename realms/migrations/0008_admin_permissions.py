import json
from pathlib import Path

from django.db import migrations, models

REALM_MANAGEMENT = "realm-management"
# The realm-management client's roles as this migration was written (frozen, as live code may change).
CLIENT_ROLES = {REALM_MANAGEMENT: json.loads((Path(__file__).parent / "data" / "0008_realm_management_roles.json").read_text())}


def add_delegated_clients(apps, schema_editor):
    """Realms created before delegated admins existed get their master ``<realm>-realm`` client
    (realms.administration.admin_permissions.ensure_delegated_client does this for every new realm)."""
    Realm = apps.get_model("realms", "Realm")
    Client = apps.get_model("realms", "Client")
    Role = apps.get_model("realms", "Role")
    master = Realm.objects.filter(name="master").first()
    if master is None:
        return
    admin_role = Role.objects.filter(realm=master, client=None, name="admin").first()
    for realm in Realm.objects.exclude(pk=master.pk):
        client, _ = Client.objects.get_or_create(
            realm=master, client_id=f"{realm.name}-realm",
            defaults={"name": f"{realm.name} Realm", "bearer_only": True, "attributes": {"realm_client": "true"}})
        roles = {rep["name"]: Role.objects.get_or_create(realm=master, client=client, name=rep["name"],
                                                         defaults={"description": rep["description"]})[0]
                 for rep in CLIENT_ROLES[REALM_MANAGEMENT]}
        for rep in CLIENT_ROLES[REALM_MANAGEMENT]:
            inside = rep.get("composites", {}).get("client", {}).get(REALM_MANAGEMENT, [])
            roles[rep["name"]].composites.add(*(roles[name] for name in inside))
        if admin_role is not None:
            admin_role.composites.add(*roles.values())


class Migration(migrations.Migration):
    dependencies = [("realms", "0002_component_user_federation_link")]

    operations = [
        migrations.AddField(
            model_name="realm",
            name="admin_permissions_enabled",
            field=models.BooleanField(
                default=False,
                help_text="Fine-grained admin permissions: the admin-permissions client's permissions apply."),
        ),
        migrations.AddField(
            model_name="client",
            name="authorization_settings",
            field=models.JSONField(blank=True, default=dict, editable=False),
        ),
        migrations.RunPython(add_delegated_clients, migrations.RunPython.noop),
    ]
