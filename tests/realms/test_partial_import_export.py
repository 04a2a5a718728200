"""``partialImport`` and ``partial-export`` of the Admin REST API (Keycloak's RealmAdminResource):
the PartialImportResults, the three ``ifResourceExists`` policies, FAIL changing nothing, pre-hashed
passwords, an admin event per resource written, and an export without users or secrets."""
import base64
import hashlib
import json

import pytest

from realms.models import Client as ClientModel
from realms.models import Event, Group, Role, User
from realms.users.accounts import create_user
from tests.passwords import holds_password
from tests.realms.test_admin_rest_api import acme, master_api, realm_admin  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

MASK = "**********"


def _pbkdf2_credential(password):
    salt = b"0123456789abcdef"
    value = base64.b64encode(hashlib.pbkdf2_hmac("sha512", password.encode(), salt, 1000, dklen=64)).decode()
    return {"type": "password",
            "secretData": json.dumps({"value": value, "salt": base64.b64encode(salt).decode()}),
            "credentialData": json.dumps({"hashIterations": 1000, "algorithm": "pbkdf2-sha512"})}


BODY = {
    "ifResourceExists": "FAIL",
    "clients": [{"clientId": "billing", "publicClient": False, "secret": "billing-secret-1"}],
    "roles": {"realm": [{"name": "auditor", "composite": True, "composites": {"client": {"billing": ["payer"]}}}],
              "client": {"billing": [{"name": "payer"}]}},
    "groups": [{"name": "finance", "realmRoles": ["auditor"], "subGroups": [{"name": "ap"}]}],
    "users": [{"username": "fay", "email": "fay@example.org", "enabled": True, "groups": ["/finance/ap"],
               "clientRoles": {"billing": ["payer"]}, "credentials": [_pbkdf2_credential("fay-password-1")]}],
}


def _partial_import(api, body):
    return api("post", "acme/partialImport", body)


def test_partial_import_adds_every_kind_and_answers_keycloaks_results(acme, master_api):
    resp = _partial_import(master_api, BODY)
    assert resp.status_code == 200, resp.content
    answer = resp.json()
    assert (answer["added"], answer["skipped"], answer["overwritten"]) == (5, 0, 0)
    got = {(r["action"], r["resourceType"], r["resourceName"]) for r in answer["results"]}
    assert got == {("ADDED", "CLIENT", "billing"), ("ADDED", "REALM_ROLE", "auditor"),
                   ("ADDED", "CLIENT_ROLE", "payer"), ("ADDED", "GROUP", "finance"), ("ADDED", "USER", "fay")}
    fay = User.objects.get(realm=acme, username="fay")
    assert next(r["id"] for r in answer["results"] if r["resourceType"] == "USER") == fay.pk
    assert holds_password(fay, "fay-password-1")  # the pre-hashed credential, as in realm import
    assert [g.path for g in fay.groups.all()] == ["/finance/ap"]
    billing = ClientModel.objects.get(realm=acme, client_id="billing")
    assert billing.get_secret() == "billing-secret-1"
    payer = Role.objects.get(realm=acme, client=billing, name="payer")
    assert list(fay.roles.all()) == [payer]
    auditor = Role.objects.get(realm=acme, client=None, name="auditor")
    assert list(auditor.composites.all()) == [payer]
    assert list(Group.objects.get(realm=acme, name="finance").roles.all()) == [auditor]
    assert billing.scope_links.filter(client_scope__name="profile").exists()  # the realm's default scopes
    events = {(e.type, e.resource_type, e.resource_path)
              for e in Event.objects.filter(realm=acme, kind=Event.ADMIN)}
    # Keycloak's: events of the realm (its admin resource) at the partial import's resource paths
    assert ("CREATE", "REALM", f"users/{fay.pk}") in events
    assert ("CREATE", "REALM", f"clients/{billing.pk}") in events
    assert ("CREATE", "REALM", f"realms/{auditor.pk}") in events
    assert len(events) == 5


def test_fail_answers_409_and_changes_nothing(acme, master_api):
    create_user(acme, "fay")
    body = {**BODY, "users": [{"username": "gus"}, {"username": "fay"}]}
    resp = _partial_import(master_api, body)
    assert resp.status_code == 409
    assert resp.json() == {"errorMessage": "User with user name fay already exists."}
    assert not User.objects.filter(realm=acme, username="gus").exists()
    assert not ClientModel.objects.filter(realm=acme, client_id="billing").exists()
    assert not Event.objects.filter(realm=acme, kind=Event.ADMIN).exists()
    # the default policy is FAIL; a taken email is an existing user too (duplicate emails off)
    create_user(acme, "hal", email="hal@example.org")
    resp = _partial_import(master_api, {"users": [{"username": "other", "email": "hal@example.org"}]})
    assert resp.status_code == 409
    acme.duplicate_emails_allowed = True
    acme.save()
    same_email = {"users": [{"username": "hal2", "email": "hal@example.org"}]}
    assert _partial_import(master_api, same_email).json()["added"] == 1
    assert _partial_import(master_api, {"users": [{"username": "hal", "email": "h@example.org"}]}).json() == {
        "errorMessage": "User with user name hal or with email h@example.org already exists."}  # Keycloak's wording
    assert _partial_import(master_api, {"clients": [{"clientId": "account"}]}).json() == {
        "errorMessage": "Client id 'account' already exists"}
    assert _partial_import(master_api, {"roles": {"realm": [{"name": "offline_access"}]}}).json() == {
        "errorMessage": "Realm role 'offline_access' already exists."}


def test_skip_keeps_and_overwrite_replaces(acme, master_api):
    old = create_user(acme, "fay", email="old@example.org")
    Group.objects.create(realm=acme, name="finance", description="old")
    body = {"ifResourceExists": "SKIP", "users": [{"username": "gus"}, {"username": "fay", "firstName": "New"}],
            "groups": [{"name": "finance", "description": "new"}]}
    answer = _partial_import(master_api, body).json()
    assert (answer["added"], answer["skipped"], answer["overwritten"]) == (1, 2, 0)
    assert [r["action"] for r in answer["results"]] == ["SKIPPED", "SKIPPED", "ADDED"]  # groups, then users
    assert {"action": "SKIPPED", "resourceType": "USER", "resourceName": "fay", "id": old.pk} in answer["results"]
    assert User.objects.get(pk=old.pk).first_name == ""
    answer = _partial_import(master_api, {**body, "ifResourceExists": "OVERWRITE"}).json()
    assert (answer["added"], answer["skipped"], answer["overwritten"]) == (0, 0, 3)
    fay = User.objects.get(realm=acme, username="fay")
    assert fay.first_name == "New" and fay.email == ""
    assert Group.objects.get(realm=acme, name="finance").description == "new"
    updates = Event.objects.filter(realm=acme, kind=Event.ADMIN, type="UPDATE").count()
    assert updates == 3


def test_bad_bodies_are_refused(acme, master_api):
    assert _partial_import(master_api, {"ifResourceExists": "MERGE"}).status_code == 400
    resp = _partial_import(master_api, {"identityProviders": [{"alias": "x", "providerId": "no-such-type"}]})
    assert resp.json() == {"errorMessage": "identityProviders[0]: Invalid identity provider id [no-such-type]"}
    resp = _partial_import(master_api, {"users": [{"username": "x", "groups": ["/none"]}]})
    assert resp.status_code == 400 and not User.objects.filter(realm=acme, username="x").exists()


def test_partial_import_needs_manage_realm(acme):
    assert _partial_import(realm_admin(acme, "users-admin", "manage-users"), {}).status_code == 403
    assert _partial_import(realm_admin(acme, "realm-manager", "manage-realm"), {"users": [{"username": "ivy"}]}
                           ).status_code == 200


def test_partial_export_leaves_out_users_and_masks_secrets(acme, master_api):
    assert _partial_import(master_api, BODY).status_code == 200
    acme.smtp_server = {"host": "smtp.example.org", "password": "smtp-password-1"}
    acme.save()
    resp = master_api("post", "acme/partial-export?exportClients=true&exportGroupsAndRoles=true")
    assert resp.status_code == 200
    rep = resp.json()
    text = json.dumps(rep)
    assert "users" not in rep  # no service account among its clients
    assert "billing-secret-1" not in text and "smtp-password-1" not in text
    assert next(c for c in rep["clients"] if c["clientId"] == "billing")["secret"] == MASK
    assert rep["smtpServer"]["password"] == MASK
    assert {k for k in rep["components"]["org.keycloak.keys.KeyProvider"][0]["config"] if "rivate" in k}
    assert all(v == [MASK] for c in rep["components"]["org.keycloak.keys.KeyProvider"]
               for k, v in c["config"].items() if "rivate" in k)
    assert "auditor" in [r["name"] for r in rep["roles"]["realm"]]
    assert [g["name"] for g in rep["groups"]] == ["finance"]
    bare = master_api("post", "acme/partial-export").json()
    assert not {"clients", "roles", "groups", "users"} & bare.keys()
    assert bare["realm"] == "acme"


def test_partial_export_needs_manage_realm_and_the_roles_of_what_it_exports(acme, master_api):
    billing = {"clientId": "billing", "publicClient": False, "serviceAccountsEnabled": True}
    assert _partial_import(master_api, {"clients": [billing]}).status_code == 200
    create_user(acme, "kim")
    path = "acme/partial-export"
    assert realm_admin(acme, "viewer", "view-realm")("post", path).status_code == 403
    manager = realm_admin(acme, "manager", "manage-realm")
    assert manager("post", path).status_code == 200
    assert manager("post", f"{path}?exportClients=true").status_code == 403
    assert manager("post", f"{path}?exportGroupsAndRoles=true").status_code == 403
    rep = realm_admin(acme, "both", "manage-realm", "view-clients")("post", f"{path}?exportClients=true").json()
    assert [u["username"] for u in rep["users"]] == ["service-account-billing"]  # never kim
    assert "credentials" not in rep["users"][0]


def test_overwriting_a_client_and_its_roles_together(acme, master_api):
    body = {"clients": [{"clientId": "billing"}], "roles": {"client": {"billing": [{"name": "payer"}]}}}
    assert _partial_import(master_api, body).status_code == 200
    body = {"ifResourceExists": "OVERWRITE", "clients": [{"clientId": "billing", "description": "new"}],
            "roles": {"client": {"billing": [{"name": "payer", "description": "pays"}]}}}
    answer = _partial_import(master_api, body).json()
    assert answer["overwritten"] == 2, answer
    billing = ClientModel.objects.get(realm=acme, client_id="billing")
    assert billing.description == "new"
    assert Role.objects.get(client=billing, name="payer").description == "pays"
