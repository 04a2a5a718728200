from django.db import migrations, models

import realms.models

# The providerId of the keys already stored: each was generated here (an import's key material
# came as Keycloak's "rsa" provider only for RS256, which cannot be told apart now; as generated
# it shows the same algorithm, priority and status).
_GENERATED = {"RS256": "rsa-generated", "ES256": "ecdsa-generated", "EdDSA": "eddsa-generated"}


def set_provider_ids(apps, schema_editor):
    RealmKey = apps.get_model("realms", "RealmKey")
    for algorithm, provider_id in _GENERATED.items():
        RealmKey.objects.filter(algorithm=algorithm).update(provider_id=provider_id)


def log_events(apps, schema_editor):
    """Realms whose eventsListeners were stored empty logged their events all the same: they keep
    Keycloak's jboss-logging now that the list is read."""
    Realm = apps.get_model("realms", "Realm")
    for realm in Realm.objects.only("pk", "events_listeners"):
        if not realm.events_listeners:
            Realm.objects.filter(pk=realm.pk).update(events_listeners=["jboss-logging"])


def builtin_client_flow(apps, schema_editor):
    """Another flow bound for client authentication was never run: the binding is the built-in one."""
    Realm = apps.get_model("realms", "Realm")
    Realm.objects.exclude(client_authentication_flow="clients").update(client_authentication_flow="clients")


class Migration(migrations.Migration):

    dependencies = [
        ("realms", "0015_console_jobs"),
    ]

    operations = [
        migrations.AddField(
            model_name="realmkey",
            name="provider_id",
            field=models.CharField(default="rsa-generated", max_length=64),
        ),
        migrations.RunPython(set_provider_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="realm",
            name="events_listeners",
            field=models.JSONField(blank=True, default=realms.models.realm.default_events_listeners),
        ),
        migrations.RunPython(log_events, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="realm",
            name="client_authentication_flow",
            field=models.CharField(choices=[("clients", "clients")], default="clients", max_length=255),
        ),
        migrations.RunPython(builtin_client_flow, migrations.RunPython.noop),
    ]
