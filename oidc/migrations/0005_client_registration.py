"""The tables of the dynamic client registration: initial access tokens. Realms made before it
get Keycloak's default client-registration policies (as its own migration gave realms of older
versions), so anonymous registration is not left open where no policy existed: the definitions
are frozen here (a migration imports no live code)."""
import uuid

import django.db.models.deletion
from django.db import migrations, models

POLICY = "org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy"
MAPPER_TYPES = ["saml-user-attribute-mapper", "oidc-usermodel-attribute-mapper", "saml-user-property-mapper",
                "oidc-usermodel-property-mapper", "oidc-full-name-mapper", "oidc-address-mapper",
                "oidc-sha256-pairwise-sub-mapper", "saml-role-list-mapper"]
GENERIC = [("Allowed Protocol Mapper Types", "allowed-protocol-mappers", {"allowed-protocol-mapper-types": MAPPER_TYPES}),
           ("Allowed Client Scopes", "allowed-client-templates",
            {"allowed-client-scopes": [], "allow-default-scopes": ["true"]})]
DEFAULTS = [
    ("Trusted Hosts", "trusted-hosts", "anonymous", {"trusted-hosts": [], "client-uris-must-match": ["true"],
                                                     "host-sending-registration-request-must-match": ["true"]}),
    ("Consent Required", "consent-required", "anonymous", {}),
    ("Full Scope Disabled", "scope", "anonymous", {}),
    ("Max Clients Limit", "max-clients", "anonymous", {"max-clients": ["200"]}),
    *((name, provider, sub, config) for sub in ("anonymous", "authenticated") for name, provider, config in GENERIC),
]


def add_default_policies(apps, schema_editor):
    Realm, Component = apps.get_model("realms", "Realm"), apps.get_model("realms", "Component")
    having = set(Component.objects.filter(provider_type=POLICY).values_list("realm_id", flat=True))
    Component.objects.bulk_create(
        Component(id=str(uuid.uuid4()), realm_id=realm_id, name=name, provider_id=provider, provider_type=POLICY,
                  parent_id=realm_id, sub_type=sub, config=config)
        for realm_id in Realm.objects.exclude(pk__in=having).values_list("pk", flat=True)
        for name, provider, sub, config in DEFAULTS)


class Migration(migrations.Migration):
    dependencies = [("oidc", "0004_backchannel_authentication"), ("realms", "0018_identity_brokering")]

    operations = [
        migrations.CreateModel(
            name="ClientInitialAccess",
            fields=[
                ("id", models.CharField(max_length=36, primary_key=True, serialize=False)),
                ("timestamp", models.IntegerField()),
                ("expiration", models.IntegerField(default=0)),
                ("count", models.IntegerField(default=1)),
                ("remaining_count", models.IntegerField(default=1)),
                ("realm", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                            to="realms.realm")),
            ],
        ),
        migrations.RunPython(add_default_policies, migrations.RunPython.noop),
    ]
