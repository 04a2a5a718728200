"""The Admin API of dynamic client registration (``clients-initial-access``, the policies on
``components`` and ``client-registration-policy/providers``), Keycloak's default policies of a new
realm, and the policies of two Keycloak exports imported and exported back unchanged."""
import copy
import importlib
import json
import pathlib

import pytest

from realms.models import Component, Event, Realm
from realms.representation import export_realm, import_realm
from realms.representation.components import DEFAULT_POLICIES, REGISTRATION_POLICY

from .conftest import OIDC, call, created_id, policy, realm_admin

pytestmark = pytest.mark.django_db
DATA = pathlib.Path(__file__).parents[2] / "data" / "keycloak"


def test_initial_access_tokens_through_the_admin_api(admin, acme):
    resp = admin("post", "acme/clients-initial-access", {"expiration": 3600, "count": 3})
    assert resp.status_code == 201 and resp["Cache-Control"] == "no-store"
    made = resp.json()
    assert made["count"] == made["remainingCount"] == 3 and made["expiration"] == 3600 and made["token"]
    listed = admin("get", "acme/clients-initial-access").json()
    assert listed == [{k: v for k, v in made.items() if k != "token"}]  # the token is shown once
    assert call("post", acme, OIDC, {"redirect_uris": ["https://a.example/cb"]}, bearer=made["token"]).status_code == 201
    assert admin("get", "acme/clients-initial-access").json()[0]["remainingCount"] == 2
    assert admin("post", "acme/clients-initial-access", {}).json()["count"] == 1  # Keycloak's defaults
    event = Event.objects.get(realm=acme, kind=Event.ADMIN, resource_type="CLIENT_INITIAL_ACCESS_MODEL",
                              resource_path=f"clients-initial-access/{made['id']}")
    assert event.type == "CREATE" and json.loads(event.representation) == {"expiration": 3600, "count": 3}
    assert made["token"] not in event.representation
    assert admin("delete", f"acme/clients-initial-access/{made['id']}").status_code == 204
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, type="DELETE",
                                resource_type="CLIENT_INITIAL_ACCESS_MODEL").exists()
    assert call("post", acme, OIDC, {"redirect_uris": ["https://a.example/cb"]}, bearer=made["token"]).json()[
        "error_description"] == "Initial Access Token not found"


@pytest.mark.parametrize("body, message", [({"count": -1}, "Invalid value for count"),
                                           ({"expiration": -5}, "Invalid value for expiration"),
                                           ({"expiration": "soon"}, "Invalid value for expiration")])
def test_initial_access_token_values_are_checked(admin, acme, body, message):
    assert admin("post", "acme/clients-initial-access", body).json() == {"errorMessage": message}


def test_initial_access_token_roles(acme):
    viewer = realm_admin(acme, "viewer", "view-clients")
    assert viewer("get", "acme/clients-initial-access").status_code == 200
    assert viewer("post", "acme/clients-initial-access", {}).status_code == 403
    manager = realm_admin(acme, "manager", "manage-clients")
    assert manager("post", "acme/clients-initial-access", {}).status_code == 201


def test_a_new_realm_gets_keycloaks_default_policies(acme):
    rows = Component.objects.filter(realm=acme, provider_type=REGISTRATION_POLICY)
    assert sorted((c.name, c.provider_id, c.sub_type) for c in rows) == sorted(
        (n, p, s) for n, p, s, _ in DEFAULT_POLICIES)
    assert policy(acme, "max-clients").config == {"max-clients": ["200"]}
    assert policy(acme, "trusted-hosts").config["host-sending-registration-request-must-match"] == ["true"]


def test_policies_on_the_components_resource(admin, acme):
    listed = admin("get", "acme/components", type=REGISTRATION_POLICY).json()
    assert len(listed) == len(DEFAULT_POLICIES)
    assert all(c["providerType"] == REGISTRATION_POLICY and c["parentId"] == acme.pk for c in listed)
    hosts = next(c for c in listed if c["providerId"] == "trusted-hosts")
    assert admin("get", f"acme/components/{hosts['id']}").json() == hosts
    hosts["config"]["trusted-hosts"] = ["localhost"]
    assert admin("put", f"acme/components/{hosts['id']}", hosts).status_code == 204
    assert call("post", acme, OIDC, {"redirect_uris": ["https://localhost/cb"]}).status_code == 201

    new = {"name": "Only phone", "providerId": "allowed-client-templates", "providerType": REGISTRATION_POLICY,
           "subType": "authenticated", "config": {"allow-default-scopes": ["false"]}}
    component_id = created_id(admin("post", "acme/components", new))
    assert Component.objects.get(pk=component_id).sub_type == "authenticated"
    assert admin("post", "acme/components", {**new, "subType": "other"}).json() == {
        "errorMessage": "subType must be anonymous or authenticated"}
    assert admin("post", "acme/components", {**new, "config": {"allow-default-scopes": ["maybe"]}}).json() == {
        "errorMessage": "'Allow Default Scopes' should be 'true' or 'false'"}
    assert admin("put", f"acme/components/{policy(acme, 'max-clients').pk}",
                 {"config": {"max-clients": ["many"]}}).json() == {"errorMessage": "'Max Clients Per Realm' should be a number"}
    assert admin("post", "acme/components", {**new, "providerId": "nope"}).status_code == 400
    assert admin("delete", f"acme/components/{component_id}").status_code == 204
    assert not Component.objects.filter(pk=component_id).exists()
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, resource_type="COMPONENT").count() == 3


def test_policy_providers(admin, acme):
    providers = {p["id"]: p for p in admin("get", "acme/client-registration-policy/providers").json()}
    assert set(providers) == {"trusted-hosts", "allowed-client-templates", "allowed-protocol-mappers", "max-clients",
                              "consent-required", "scope"}
    props = {p["name"]: p for p in providers["trusted-hosts"]["properties"]}
    assert props["client-uris-must-match"]["defaultValue"] == "true"
    scopes = {p["name"]: p for p in providers["allowed-client-templates"]["properties"]}["allowed-client-scopes"]
    assert "profile" in scopes["options"]
    assert realm_admin(acme, "nobody")("get", "acme/client-registration-policy/providers").status_code == 403


@pytest.mark.parametrize("name", ["keycloak-fgap-realm-kc26-full-export.json", "quickstarts-kc9-full-export-realm-b.json"])
def test_keycloak_exports_policies_round_trip(db, name):
    rep = json.loads((DATA / name).read_text())
    rep = rep[0] if isinstance(rep, list) else rep
    given = rep["components"][REGISTRATION_POLICY]
    Realm.objects.filter(name=rep["realm"]).delete()
    realm = import_realm(copy.deepcopy(rep)).realm
    exported = export_realm(realm)["components"][REGISTRATION_POLICY]

    def key(c):
        return c["id"]
    assert sorted(({k: c[k] for k in ("id", "name", "providerId", "subType", "config")} for c in given), key=key) == \
        sorted(({k: c[k] for k in ("id", "name", "providerId", "subType", "config")} for c in exported), key=key)
    # and imported again under another name, the policies come along
    again = import_realm({**export_realm(realm), "realm": realm.name + "-copy"}).realm
    assert Component.objects.filter(realm=again, provider_type=REGISTRATION_POLICY).count() == len(given)


def test_the_migration_gives_realms_without_policies_keycloaks_defaults(acme):
    from django.apps import apps
    migration = importlib.import_module("oidc.migrations.0005_client_registration")
    Component.objects.filter(realm=acme, provider_type=REGISTRATION_POLICY).delete()
    kept = Component.objects.create(realm=Realm.objects.get(name="master"), name="Mine", provider_id="scope",
                                    provider_type=REGISTRATION_POLICY, parent_id="x", sub_type="anonymous")
    before = Component.objects.filter(provider_type=REGISTRATION_POLICY).exclude(realm=acme).count()
    migration.add_default_policies(apps, None)
    rows = Component.objects.filter(realm=acme, provider_type=REGISTRATION_POLICY)
    assert sorted((c.name, c.provider_id, c.sub_type, json.dumps(c.config, sort_keys=True)) for c in rows) == sorted(
        (n, p, s, json.dumps(c, sort_keys=True)) for n, p, s, c in DEFAULT_POLICIES)  # the frozen copy is Keycloak's
    # a realm that has policies keeps them as they are
    assert Component.objects.filter(provider_type=REGISTRATION_POLICY).exclude(realm=acme).count() == before
    assert Component.objects.filter(pk=kept.pk).exists()
