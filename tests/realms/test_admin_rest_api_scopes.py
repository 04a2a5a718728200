"""The Admin REST API's client scopes, protocol mappers and scope mappings (docs/decisions/0023):
Keycloak's ``/client-scopes``, ``protocol-mappers`` and ``scope-mappings`` paths, a client's
default and optional scopes, the realm's default scopes; each answer is the export's JSON, each
write an admin event."""
import base64
import datetime
import time

import pytest
from cryptography.hazmat.primitives import serialization

from realms.data import keys
from realms.models import Client as ClientModel
from realms.models import (
    ClientScope,
    ClientScopeLink,
    Event,
    ProtocolMapper,
    Realm,
    RealmDefaultClientScope,
    RealmKey,
    Role,
    UserSession,
)
from realms.representation import export_realm
from realms.signin import bruteforce
from realms.sso.sessions import create_user_session, get_or_create_client_session
from realms.users.accounts import create_user

from .test_admin_rest_api import acme, created_id, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

MAPPER = {"name": "tenant", "protocol": "openid-connect", "protocolMapper": "oidc-hardcoded-claim-mapper",
          "config": {"claim.name": "tenant", "claim.value": "acme", "access.token.claim": "true"}}


def test_client_scope_crud_as_keycloak(master_api, acme):
    resp = master_api("post", "acme/client-scopes", {"name": "api.read", "description": "read the API",
                                                     "attributes": {"include.in.token.scope": "true"},
                                                     "protocolMappers": [MAPPER]})
    scope_id = created_id(resp)
    assert resp["Location"].endswith(f"/admin/realms/acme/client-scopes/{scope_id}")
    rep = master_api("get", f"acme/client-scopes/{scope_id}").json()
    assert rep == next(s for s in export_realm(acme)["clientScopes"] if s["name"] == "api.read")
    assert rep["protocolMappers"][0]["config"]["claim.value"] == "acme"
    listed = master_api("get", "acme/client-scopes").json()
    assert {"api.read", "profile", "email"} <= {s["name"] for s in listed}

    assert master_api("post", "acme/client-scopes", {"name": "api.read"}).json() == {
        "errorMessage": "Client Scope api.read already exists"}
    assert master_api("post", "acme/client-scopes", {"name": "api.read"}).status_code == 409
    bad = master_api("post", "acme/client-scopes", {"name": "two words"})
    assert (bad.status_code, bad.json()) == (400, {"errorMessage": 'Unexpected name "two words" for ClientScope'})
    assert master_api("post", "acme/client-scopes", {"description": "no name"}).status_code == 400
    assert master_api("put", f"acme/client-scopes/{scope_id}", {"name": "profile"}).status_code == 409

    assert master_api("put", f"acme/client-scopes/{scope_id}", {"description": "changed"}).status_code == 204
    scope = ClientScope.objects.get(pk=scope_id)
    assert (scope.name, scope.description, scope.protocol_mappers.count()) == ("api.read", "changed", 1)
    ops = list(Event.objects.filter(realm=acme, resource_type="CLIENT_SCOPE").values_list("type", "resource_path"))
    assert sorted(ops) == [("CREATE", f"client-scopes/{scope_id}"), ("UPDATE", f"client-scopes/{scope_id}")]

    assert master_api("delete", f"acme/client-scopes/{scope_id}").status_code == 204
    missing = master_api("get", f"acme/client-scopes/{scope_id}")
    assert (missing.status_code, missing.json()) == (404, {"error": "Could not find client scope"})
    assert not ProtocolMapper.objects.filter(client_scope_id=scope_id).exists()


@pytest.mark.parametrize("owner", ["clients", "client-scopes"])
def test_protocol_mappers_of_clients_and_scopes(master_api, acme, owner):
    if owner == "clients":
        owner_id = created_id(master_api("post", "acme/clients", {"clientId": "app", "publicClient": True}))
    else:
        owner_id = created_id(master_api("post", "acme/client-scopes", {"name": "extra"}))
    base = f"acme/{owner}/{owner_id}/protocol-mappers"
    resp = master_api("post", f"{base}/models", MAPPER)
    mapper_id = created_id(resp)
    assert resp["Location"].endswith(f"/admin/realms/{base}/models/{mapper_id}")
    assert master_api("post", f"{base}/models", MAPPER).json() == {
        "errorMessage": "Protocol mapper exists with same name"}
    assert master_api("post", f"{base}/models", {"name": "no type"}).status_code == 400

    rep = master_api("get", f"{base}/models/{mapper_id}").json()
    assert rep == {**MAPPER, "id": mapper_id, "consentRequired": False}
    assert master_api("get", f"{base}/models").json() == [rep]
    assert master_api("get", f"{base}/protocol/openid-connect").json() == [rep]
    assert master_api("get", f"{base}/protocol/saml").json() == []

    changed = {**rep, "config": {**MAPPER["config"], "claim.value": "other"}}
    assert master_api("put", f"{base}/models/{mapper_id}", changed).status_code == 204
    assert ProtocolMapper.objects.get(pk=mapper_id).config["claim.value"] == "other"

    many = [{**MAPPER, "name": "a"}, {**MAPPER, "name": "b"}]
    assert master_api("post", f"{base}/add-models", many).status_code == 204
    assert [m["name"] for m in master_api("get", f"{base}/models").json()] == ["a", "b", "tenant"]
    # all or none: a duplicate in the list keeps the first one out too
    assert master_api("post", f"{base}/add-models", [{**MAPPER, "name": "c"}, MAPPER]).status_code == 409
    assert not ProtocolMapper.objects.filter(name="c").exists()

    assert master_api("delete", f"{base}/models/{mapper_id}").status_code == 204
    gone = master_api("get", f"{base}/models/{mapper_id}")
    assert (gone.status_code, gone.json()) == (404, {"error": "Model not found"})
    paths = list(Event.objects.filter(realm=acme, resource_type="PROTOCOL_MAPPER").values_list("type", "resource_path"))
    assert ("DELETE", f"{owner}/{owner_id}/protocol-mappers/models/{mapper_id}") in paths
    assert master_api("get", f"acme/{owner}/nope/protocol-mappers/models").status_code == 404


@pytest.mark.parametrize("kind", ["default", "optional"])
def test_default_and_optional_scopes_of_a_client(master_api, acme, kind):
    client_id = created_id(master_api("post", "acme/clients", {"clientId": "app", "publicClient": True}))
    scope_id = created_id(master_api("post", "acme/client-scopes", {"name": "api.write"}))
    listed = master_api("get", f"acme/clients/{client_id}/{kind}-client-scopes").json()
    expected = {"profile", "email"} if kind == "default" else {"offline_access"}
    assert expected <= {s["name"] for s in listed} and all(s.keys() == {"id", "name"} for s in listed)

    assert master_api("put", f"acme/clients/{client_id}/{kind}-client-scopes/{scope_id}").status_code == 204
    link = ClientScopeLink.objects.get(client_id=client_id, client_scope_id=scope_id)
    assert link.default == (kind == "default")
    assert {"id": scope_id, "name": "api.write"} in master_api(
        "get", f"acme/clients/{client_id}/{kind}-client-scopes").json()
    rep = master_api("get", f"acme/clients/{client_id}").json()
    assert "api.write" in rep["defaultClientScopes" if kind == "default" else "optionalClientScopes"]

    assert master_api("delete", f"acme/clients/{client_id}/{kind}-client-scopes/{scope_id}").status_code == 204
    assert not ClientScopeLink.objects.filter(client_id=client_id, client_scope_id=scope_id).exists()
    missing = master_api("put", f"acme/clients/{client_id}/{kind}-client-scopes/nope")
    assert (missing.status_code, missing.json()) == (404, {"error": "Client scope not found"})
    events = Event.objects.filter(realm=acme, resource_type="CLIENT",
                                  resource_path=f"clients/{client_id}/{kind}-client-scopes/{scope_id}")
    assert sorted(events.values_list("type", flat=True)) == ["CREATE", "DELETE"]


def test_realm_default_scopes_are_given_to_new_clients(master_api, acme):
    scope_id = created_id(master_api("post", "acme/client-scopes", {"name": "api.read"}))
    defaults = master_api("get", "acme/default-default-client-scopes").json()
    assert "profile" in {s["name"] for s in defaults} and "api.read" not in {s["name"] for s in defaults}
    assert master_api("put", f"acme/default-optional-client-scopes/{scope_id}").status_code == 204
    assert {"id": scope_id, "name": "api.read"} in master_api("get", "acme/default-optional-client-scopes").json()
    # PUT on the other list moves it
    assert master_api("put", f"acme/default-default-client-scopes/{scope_id}").status_code == 204
    assert RealmDefaultClientScope.objects.get(realm=acme, client_scope_id=scope_id).default
    assert "api.read" not in {s["name"] for s in master_api("get", "acme/default-optional-client-scopes").json()}
    client_id = created_id(master_api("post", "acme/clients", {"clientId": "later", "publicClient": True}))
    assert ClientModel.objects.get(pk=client_id).scope_links.get(client_scope_id=scope_id).default
    assert export_realm(acme)["defaultDefaultClientScopes"].count("api.read") == 1

    assert master_api("delete", f"acme/default-default-client-scopes/{scope_id}").status_code == 204
    assert not RealmDefaultClientScope.objects.filter(realm=acme, client_scope_id=scope_id).exists()
    assert master_api("delete", "acme/default-default-client-scopes/nope").status_code == 404
    assert Event.objects.filter(realm=acme, resource_type="REALM",
                                resource_path=f"default-default-client-scopes/{scope_id}").count() == 2


@pytest.mark.parametrize("owner", ["clients", "client-scopes"])
def test_scope_mappings_of_clients_and_scopes(master_api, acme, owner):
    api_client = created_id(master_api("post", "acme/clients", {"clientId": "api", "publicClient": True}))
    assert master_api("post", f"acme/clients/{api_client}/roles", {"name": "read"}).status_code == 201
    for name in ("reader", "writer"):
        assert master_api("post", "acme/roles", {"name": name}).status_code == 201
    reader = master_api("get", "acme/roles/reader").json()
    read = master_api("get", f"acme/clients/{api_client}/roles/read").json()
    assert master_api("post", "acme/roles/reader/composites", [read]).status_code == 204
    if owner == "clients":
        owner_id = created_id(master_api("post", "acme/clients", {"clientId": "app", "publicClient": True,
                                                                  "fullScopeAllowed": False}))
    else:
        owner_id = created_id(master_api("post", "acme/client-scopes", {"name": "api"}))
    base = f"acme/{owner}/{owner_id}/scope-mappings"
    assert master_api("get", base).json() == {}

    assert master_api("post", f"{base}/realm", [{"id": reader["id"]}]).status_code == 204
    assert [r["name"] for r in master_api("get", f"{base}/realm").json()] == ["reader"]
    assert "reader" not in [r["name"] for r in master_api("get", f"{base}/realm/available").json()]
    assert "writer" in [r["name"] for r in master_api("get", f"{base}/realm/available").json()]
    # the client role comes with the composite: effective, not mapped, still available (Keycloak
    # offers what is not mapped directly)
    assert master_api("get", f"{base}/clients/{api_client}").json() == []
    assert [r["name"] for r in master_api("get", f"{base}/clients/{api_client}/composite").json()] == ["read"]
    assert [r["name"] for r in master_api("get", f"{base}/clients/{api_client}/available").json()] == ["read"]
    assert master_api("post", f"{base}/clients/{api_client}", [{"name": "read"}]).status_code == 204
    mappings = master_api("get", base).json()
    assert [r["name"] for r in mappings["realmMappings"]] == ["reader"]
    assert [r["name"] for r in mappings["clientMappings"]["api"]["mappings"]] == ["read"]
    scoped = ClientModel if owner == "clients" else ClientScope
    assert set(scoped.objects.get(pk=owner_id).scope_roles.values_list("name", flat=True)) == {"reader", "read"}
    assert master_api("post", f"{base}/realm", [{"name": "nope"}]).status_code == 404

    assert master_api("delete", f"{base}/realm", [{"id": reader["id"]}]).status_code == 204
    assert master_api("get", f"{base}/realm").json() == []
    events = Event.objects.filter(realm=acme, resource_path=f"{owner}/{owner_id}/scope-mappings/realm")
    assert sorted(events.values_list("type", "resource_type")) == [
        ("CREATE", "REALM_SCOPE_MAPPING"), ("DELETE", "REALM_SCOPE_MAPPING")]
    assert Role.objects.filter(name="reader").exists()  # unmapped, not deleted


def test_full_scope_allowed_client_has_every_role_in_scope(master_api, acme):
    app = created_id(master_api("post", "acme/clients", {"clientId": "app", "publicClient": True}))
    assert master_api("post", "acme/roles", {"name": "reader"}).status_code == 201
    composite = [r["name"] for r in master_api("get", f"acme/clients/{app}/scope-mappings/realm/composite").json()]
    assert "reader" in composite
    # in scope through full scope, not mapped: still available, as in Keycloak
    assert "reader" in [r["name"] for r in master_api("get", f"acme/clients/{app}/scope-mappings/realm/available").json()]


# --- attack detection --------------------------------------------------------------------------

def test_brute_force_status_and_clearing(master_api, acme):
    acme.brute_force_protected = True
    acme.failure_factor = 2
    acme.save()
    acme = Realm.objects.get(pk=acme.pk)
    alice, bob = create_user(acme, "alice"), create_user(acme, "bob")
    path = f"acme/attack-detection/brute-force/users/{alice.pk}"
    empty = {"disabled": False, "numFailures": 0, "numTemporaryLockouts": 0, "lastFailure": 0,
             "lastIPFailure": "n/a"}
    assert master_api("get", path).json() == empty
    for _ in range(2):
        bruteforce.record_failure(acme, alice, "192.0.2.7")
        bruteforce.record_failure(acme, bob, "192.0.2.8")
    got = master_api("get", path).json()
    assert (got["disabled"], got["numFailures"], got["lastIPFailure"]) == (True, 2, "192.0.2.7")
    assert got["lastFailure"] > 0
    assert master_api("get", "acme/attack-detection/brute-force/users/nope").json() == empty

    assert master_api("delete", path).status_code == 204
    assert master_api("get", path).json() == empty and not bruteforce.is_locked(acme, alice)
    assert bruteforce.is_locked(acme, bob)
    assert master_api("delete", "acme/attack-detection/brute-force/users").status_code == 204
    assert not bruteforce.is_locked(acme, bob) and bruteforce.status(acme, bob)["failures"] == 0
    assert Event.objects.filter(realm=acme, resource_type="USER_LOGIN_FAILURE").count() == 2


# --- events ------------------------------------------------------------------------------------

def _event(realm, when, **fields):
    return Event.objects.create(realm=realm, time=datetime.datetime.fromisoformat(when), **fields)


def test_user_events_query_as_keycloak(master_api, acme):
    login = _event(acme, "2026-03-01T10:00:00+00:00", type="LOGIN", client_id="app", user_id="u1",
                   session_id="s1", ip_address="192.0.2.1", details={"username": "alice"})
    _event(acme, "2026-03-02T10:00:00+00:00", type="LOGIN_ERROR", client_id="app", user_id="u2",
           ip_address="192.0.2.2", error="invalid_user_credentials")
    _event(acme, "2026-03-03T10:00:00+00:00", type="LOGOUT", client_id="other", user_id="u1")
    _event(Realm.objects.get(name="master"), "2026-03-02T10:00:00+00:00", type="LOGIN")

    def ids(**params):
        return [e["type"] for e in master_api("get", "acme/events", **params).json()]

    assert ids() == ["LOGOUT", "LOGIN_ERROR", "LOGIN"]  # newest first, this realm's only
    assert master_api("get", "acme/events", user="u1", type="LOGIN").json() == [{
        "id": login.pk, "time": 1772359200000, "type": "LOGIN", "realmId": acme.pk, "clientId": "app",
        "userId": "u1", "sessionId": "s1", "ipAddress": "192.0.2.1", "details": {"username": "alice"}}]
    assert ids(client="app") == ["LOGIN_ERROR", "LOGIN"]
    assert ids(ipAddress="192.0.2.2") == ["LOGIN_ERROR"]
    assert ids(dateFrom="2026-03-02", dateTo="2026-03-02") == ["LOGIN_ERROR"]  # dateTo: the whole day
    assert ids(dateFrom="1772445600000") == ["LOGOUT", "LOGIN_ERROR"]  # epoch milliseconds
    assert ids(first="1", max="1") == ["LOGIN_ERROR"]
    resp = master_api("get", "acme/events?type=LOGIN&type=LOGOUT")  # a list parameter repeats
    assert [e["type"] for e in resp.json()] == ["LOGOUT", "LOGIN"]
    bad = master_api("get", "acme/events", dateFrom="March")
    assert (bad.status_code, bad.json()) == (
        400, {"errorMessage": "Invalid value for 'Date(From)', expected format is yyyy-MM-dd"})

    _event(acme, "2026-03-03T11:00:00+00:00", kind=Event.ADMIN, type="CREATE", resource_type="USER")
    assert master_api("delete", "acme/events").status_code == 204
    assert ids() == [] and Event.objects.filter(kind=Event.ADMIN, realm=acme).exists()  # user events only


def test_admin_events_query_and_delete(master_api, acme):
    assert master_api("post", "acme/roles", {"name": "reader"}).status_code == 201
    user_id = created_id(master_api("post", "acme/users", {"username": "alice"}))
    master = Realm.objects.get(name="master")
    got = master_api("get", "acme/admin-events").json()
    assert [(e["operationType"], e["resourceType"]) for e in got] == [("CREATE", "USER"), ("CREATE", "REALM_ROLE")]
    assert got[0]["resourcePath"] == f"users/{user_id}"
    assert got[0]["authDetails"]["realmId"] == master.pk and got[0]["authDetails"]["clientId"] == "admin-cli"
    assert '"username": "alice"' in got[0]["representation"]

    def paths(**params):
        return [e["resourcePath"] for e in master_api("get", "acme/admin-events", **params).json()]

    assert paths(resourceTypes="REALM_ROLE") == ["roles/reader"]
    assert paths(operationTypes="DELETE") == []
    assert paths(resourcePath="users/*") == [f"users/{user_id}"]
    assert paths(resourcePath="users") == []
    assert paths(authRealm=master.pk, max="1") == [f"users/{user_id}"]
    assert paths(authUser="nobody") == []
    assert master_api("delete", "acme/admin-events").status_code == 204
    assert master_api("get", "acme/admin-events").json() == []


def test_events_config(master_api, acme):
    assert master_api("get", "acme/events/config").json() == {
        "eventsEnabled": False, "eventsExpiration": None, "eventsListeners": acme.events_listeners,
        "enabledEventTypes": [], "adminEventsEnabled": True, "adminEventsDetailsEnabled": True}
    body = {"eventsEnabled": True, "eventsExpiration": 3600, "enabledEventTypes": ["LOGIN", "LOGIN_ERROR"]}
    assert master_api("put", "acme/events/config", body).status_code == 204
    acme.refresh_from_db()
    assert (acme.events_enabled, acme.events_expiration, acme.enabled_event_types) == (
        True, 3600, ["LOGIN", "LOGIN_ERROR"])
    assert acme.admin_events_enabled  # not named, not changed
    assert master_api("get", "acme/events/config").json()["eventsExpiration"] == 3600
    assert master_api("put", "acme/events/config", {"eventsEnabled": "yes"}).status_code == 400
    assert master_api("put", "acme/events/config", {"realm": "renamed"}).status_code == 204  # ignored, as Keycloak
    assert Realm.objects.filter(name="acme").exists()
    assert Event.objects.filter(realm=acme, resource_path="events/config", type="UPDATE").count() == 2


# --- keys --------------------------------------------------------------------------------------

def test_keys_metadata_as_keycloak(master_api, acme):
    old = RealmKey.objects.get(realm=acme, algorithm="RS256", status=RealmKey.ACTIVE)
    new = keys.rotate_key(acme, "RS256")
    ec = keys.generate_key(acme, "ES256", priority=50)
    got = master_api("get", "acme/keys").json()
    assert got["active"]["RS256"] == new.kid and got["active"]["ES256"] == ec.kid
    by_kid = {k["kid"]: k for k in got["keys"]}
    assert by_kid[old.kid]["status"] == "PASSIVE" and by_kid[new.kid]["status"] == "ACTIVE"
    rep = by_kid[ec.kid]
    assert {k: rep[k] for k in ("providerId", "providerPriority", "type", "algorithm", "use")} == {
        "providerId": ec.pk, "providerPriority": 50, "type": "EC", "algorithm": "ES256", "use": "SIG"}
    public = serialization.load_der_public_key(base64.b64decode(rep["publicKey"]))
    assert public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                               ).decode() == ec.public_key_pem
    assert all("private" not in k.lower() for rep in got["keys"] for k in rep)
    component_ids = {c["id"] for c in export_realm(acme)["components"]["org.keycloak.keys.KeyProvider"]}
    assert {k["providerId"] for k in got["keys"]} == component_ids


# --- sessions ----------------------------------------------------------------------------------

def test_client_user_sessions_logout_all_and_delete_session(master_api, acme):
    app = ClientModel.objects.create(realm=acme, client_id="app", public_client=True)
    ivy, joe = create_user(acme, "ivy"), create_user(acme, "joe")
    ivy_session = create_user_session(acme, ivy, ip_address="192.0.2.9")
    get_or_create_client_session(ivy_session, app)
    joe_session = create_user_session(acme, joe)
    other = create_user_session(acme, joe)
    listed = master_api("get", f"acme/clients/{app.pk}/user-sessions").json()
    assert [(s["id"], s["username"], s["ipAddress"], s["clients"]) for s in listed] == [
        (ivy_session.pk, "ivy", "192.0.2.9", {app.pk: "app"})]
    assert master_api("get", "acme/clients/nope/user-sessions").status_code == 404

    assert master_api("delete", f"acme/sessions/{joe_session.pk}").status_code == 204
    assert list(UserSession.objects.filter(user=joe)) == [other]
    missing = master_api("delete", f"acme/sessions/{joe_session.pk}")
    assert (missing.status_code, missing.json()) == (404, {"error": "Sesssion not found"})

    master_session = create_user_session(Realm.objects.get(name="master"), create_user(
        Realm.objects.get(name="master"), "stays"))
    before = int(time.time())
    resp = master_api("post", "acme/logout-all")
    assert (resp.status_code, resp.json()) == (200, {})
    assert not UserSession.objects.filter(realm=acme).exists()
    assert UserSession.objects.filter(pk=master_session.pk).exists()  # other realms keep theirs
    assert Realm.objects.get(pk=acme.pk).not_before >= before
    assert Event.objects.filter(realm=acme, type="ACTION", resource_path="logout-all").exists()
    assert Event.objects.filter(realm=acme, type="DELETE", resource_path=f"sessions/{joe_session.pk}").exists()
